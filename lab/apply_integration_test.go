//go:build integration

package lab

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Apply leaves each scenario in the API server as recorded: the fields a
// probe reads that the server or a controller would set (creation and
// deletion times, pod status, ClusterIPs) included.
func TestApplyKeepsWhatWasRecorded(t *testing.T) {
	l := sharedLab(t)
	for _, name := range scenarioNames(t) {
		t.Run(name, func(t *testing.T) {
			s := loadScenario(t, name)
			applyShared(t, l, s)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			checked := 0
			for _, obj := range s.Objects {
				switch want := obj.(type) {
				case *corev1.Pod:
					got, err := l.Kube.CoreV1().Pods(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					checkMeta(t, "pod "+want.Name, got.ObjectMeta, want.ObjectMeta)
					if got.Spec.NodeName != want.Spec.NodeName {
						t.Errorf("pod %s node %q, recorded %q", want.Name, got.Spec.NodeName, want.Spec.NodeName)
					}
					if !apiequality.Semantic.DeepEqual(got.Status.ContainerStatuses, want.Status.ContainerStatuses) ||
						!apiequality.Semantic.DeepEqual(got.Status.InitContainerStatuses, want.Status.InitContainerStatuses) ||
						got.Status.Phase != want.Status.Phase || got.Status.PodIP != want.Status.PodIP ||
						!apiequality.Semantic.DeepEqual(got.Status.Conditions, want.Status.Conditions) {
						t.Errorf("pod %s status differs from the recording:\n got %+v\nwant %+v", want.Name, got.Status, want.Status)
					}
					checked++
				case *corev1.Service:
					got, err := l.Kube.CoreV1().Services(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					checkMeta(t, "service "+want.Name, got.ObjectMeta, want.ObjectMeta)
					if want.Spec.ClusterIP != "" && got.Spec.ClusterIP != want.Spec.ClusterIP {
						t.Errorf("service %s clusterIP %s, recorded %s", want.Name, got.Spec.ClusterIP, want.Spec.ClusterIP)
					}
					checked++
				case *corev1.Namespace:
					got, err := l.Kube.CoreV1().Namespaces().Get(ctx, want.Name, metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					checkMeta(t, "namespace "+want.Name, got.ObjectMeta, want.ObjectMeta)
					checked++
				}
			}
			if checked == 0 {
				t.Fatal("the scenario has no pod, service or namespace to check")
			}
		})
	}
}

func checkMeta(t *testing.T, what string, got, want metav1.ObjectMeta) {
	t.Helper()
	if !want.CreationTimestamp.IsZero() && !got.CreationTimestamp.Equal(&want.CreationTimestamp) {
		t.Errorf("%s created %s, recorded %s", what, got.CreationTimestamp, want.CreationTimestamp)
	}
	if (want.DeletionTimestamp == nil) != (got.DeletionTimestamp == nil) ||
		want.DeletionTimestamp != nil && !got.DeletionTimestamp.Equal(want.DeletionTimestamp) {
		t.Errorf("%s deletion %v, recorded %v", what, got.DeletionTimestamp, want.DeletionTimestamp)
	}
	for k, v := range want.Labels {
		if got.Labels[k] != v {
			t.Errorf("%s label %s=%q, recorded %q", what, k, got.Labels[k], v)
		}
	}
	for k, v := range want.Annotations {
		if got.Annotations[k] != v {
			t.Errorf("%s annotation %s=%q, recorded %q", what, k, got.Annotations[k], v)
		}
	}
}
