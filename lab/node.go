package lab

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// registerNode creates the Node the lab's pods run on and points its kubelet
// endpoint at the fake kubelet, through the status subresource as a real
// kubelet reports it.
func (l *Lab) registerNode(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   NodeName,
		Labels: map[string]string{corev1.LabelHostname: NodeName, corev1.LabelOSStable: "linux"},
	}}
	created, err := l.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("register node: %w", err)
	}
	created.Status = corev1.NodeStatus{
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
			{Type: corev1.NodeHostName, Address: NodeName},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(l.Kubelet.Port)}},
		Conditions: []corev1.NodeCondition{{
			Type:               corev1.NodeReady,
			Status:             corev1.ConditionTrue,
			Reason:             "KubeletReady",
			Message:            "meshlab fake kubelet",
			LastHeartbeatTime:  metav1.Now(),
			LastTransitionTime: metav1.Now(),
		}},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: KubeVersion, OperatingSystem: "linux", Architecture: "amd64"},
	}
	if _, err := l.Kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("set node status: %w", err)
	}
	return nil
}
