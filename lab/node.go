package lab

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RegisterNode creates a Node (if absent) whose kubelet is the lab's fake
// one: InternalIP 127.0.0.1 and daemonEndpoints.kubeletEndpoint.Port set
// through the status subresource, as a real kubelet reports them. Every node
// a scenario's pods name is registered so, so pods keep their recorded
// spec.nodeName and still reach the fake kubelet.
func (l *Lab) RegisterNode(ctx context.Context, name string) error {
	nodes := l.Kube.CoreV1().Nodes()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux"},
	}}
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = nodes.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("register node %s: %w", name, err)
	}
	created.Status = corev1.NodeStatus{
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
			{Type: corev1.NodeHostName, Address: name},
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
	if _, err := nodes.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("set node %s status: %w", name, err)
	}
	return nil
}

// LabelNode adds labels to a registered node (a recorded node's topology
// labels, which istiod copies onto the endpoints of its pods).
func (l *Lab) LabelNode(ctx context.Context, name string, labels map[string]string) error {
	if len(labels) == 0 {
		return nil
	}
	node, err := l.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("label node %s: %w", name, err)
	}
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	for k, v := range labels {
		node.Labels[k] = v
	}
	if _, err := l.Kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("label node %s: %w", name, err)
	}
	return nil
}
