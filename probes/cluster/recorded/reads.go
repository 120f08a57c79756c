package recorded

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// The object reads answer from the fake clientsets, unless the recording
// says the read failed; then they fail as they did.

// GetNamespace of a namespace that objects are recorded in, but whose
// Namespace object is not, fails as unreadable rather than absent: the
// namespace exists, and what its labels say (the injection setting) is not
// known. Saying "not found", or inventing a Namespace without labels ("no
// injection"), would both be claims the recording cannot back.
func (c *Cluster) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	if err := c.failed(readNamespace(name)); err != nil {
		return nil, err
	}
	ns, err := c.Reader.GetNamespace(ctx, name)
	if apierrors.IsNotFound(err) && c.implied[name] {
		return nil, fmt.Errorf("namespace %s: objects in it are recorded, its Namespace object (labels, injection setting) is not: %w", name, cluster.ErrNotFound)
	}
	return ns, err
}

func (c *Cluster) GetService(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	if err := c.failed(readService(namespace, name)); err != nil {
		return nil, err
	}
	return c.Reader.GetService(ctx, namespace, name)
}

func (c *Cluster) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	if err := c.failed(readPod(namespace, name)); err != nil {
		return nil, err
	}
	return c.Reader.GetPod(ctx, namespace, name)
}

func (c *Cluster) ListPods(ctx context.Context, namespace string, selector map[string]string) ([]corev1.Pod, error) {
	if err := c.failed(readPods(namespace, selector)); err != nil {
		return nil, err
	}
	return c.Reader.ListPods(ctx, namespace, selector)
}

func (c *Cluster) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	if err := c.failed(readNode(name)); err != nil {
		return nil, err
	}
	return c.Reader.GetNode(ctx, name)
}

func (c *Cluster) PodsByIP(ctx context.Context, ip string) ([]corev1.Pod, error) {
	if err := c.failed(readPodsByIP(ip)); err != nil {
		return nil, err
	}
	return c.Reader.PodsByIP(ctx, ip)
}

// NetworkGatewayServices answers from the recorded Services; when none is
// labelled it answers ErrNotFound, not "none": an input holds the Services
// it holds, not necessarily the east-west gateway's.
func (c *Cluster) NetworkGatewayServices(ctx context.Context) ([]corev1.Service, error) {
	if err := c.failed(readNetworkGateways()); err != nil {
		return nil, err
	}
	svcs, err := c.Reader.NetworkGatewayServices(ctx)
	if err == nil && len(svcs) == 0 {
		return nil, fmt.Errorf("no Service labelled %s in the input, which may not hold every Service: %w", mesh.LabelNetwork, cluster.ErrNotFound)
	}
	return svcs, err
}

// PodsWithIP answers from the recorded pods; when none has the IP it
// answers ErrNotFound, not "none": a recording or a dump holds the pods
// it holds, not necessarily every pod with the address.
func (c *Cluster) PodsWithIP(ctx context.Context, namespace, ip string) ([]corev1.Pod, error) {
	if err := c.failed(readPodsWithIP(namespace, ip)); err != nil {
		return nil, err
	}
	pods, err := c.Reader.PodsWithIP(ctx, namespace, ip)
	if err == nil && len(pods) == 0 {
		return nil, fmt.Errorf("no pod of %s with IP %s in the input, which may not hold every pod: %w", namespace, ip, cluster.ErrNotFound)
	}
	return pods, err
}

func (c *Cluster) EndpointSlices(ctx context.Context, namespace, service string) ([]discoveryv1.EndpointSlice, error) {
	if err := c.failed(readSlices(namespace, service)); err != nil {
		return nil, err
	}
	return c.Reader.EndpointSlices(ctx, namespace, service)
}

func (c *Cluster) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	if err := c.failed(readConfigMap(namespace, name)); err != nil {
		return nil, err
	}
	return c.Reader.GetConfigMap(ctx, namespace, name)
}

func (c *Cluster) DestinationRules(ctx context.Context, namespace string) ([]*networkingv1.DestinationRule, error) {
	if err := c.failed(readIstioList("destinationrules", namespace)); err != nil {
		return nil, err
	}
	return c.Reader.DestinationRules(ctx, namespace)
}

func (c *Cluster) VirtualServices(ctx context.Context, namespace string) ([]*networkingv1.VirtualService, error) {
	if err := c.failed(readIstioList("virtualservices", namespace)); err != nil {
		return nil, err
	}
	return c.Reader.VirtualServices(ctx, namespace)
}

func (c *Cluster) ServiceEntries(ctx context.Context, namespace string) ([]*networkingv1.ServiceEntry, error) {
	if err := c.failed(readIstioList("serviceentries", namespace)); err != nil {
		return nil, err
	}
	return c.Reader.ServiceEntries(ctx, namespace)
}

func (c *Cluster) Sidecars(ctx context.Context, namespace string) ([]*networkingv1.Sidecar, error) {
	if err := c.failed(readIstioList("sidecars", namespace)); err != nil {
		return nil, err
	}
	return c.Reader.Sidecars(ctx, namespace)
}

func (c *Cluster) PeerAuthentications(ctx context.Context, namespace string) ([]*securityv1.PeerAuthentication, error) {
	if err := c.failed(readIstioList("peerauthentications", namespace)); err != nil {
		return nil, err
	}
	return c.Reader.PeerAuthentications(ctx, namespace)
}

// sampledPaths are the admin paths whose counters a probe samples twice
// to see them move.
var sampledPaths = map[string]bool{"/stats": true, "/stats/prometheus": true}

// reads counts the recorded reads of path (by the part before '?').
func (s *Scenario) reads(pod cluster.PodRef, adminPath string) int {
	n := 0
	base := basePath(adminPath)
	for p := range s.Envoy[pod] {
		if basePath(strings.SplitN(p, readSuffix, 2)[0]) == base {
			n++
		}
	}
	return n
}

// hasRead reports whether the n-th read of path was recorded.
func (s *Scenario) hasRead(pod cluster.PodRef, adminPath string, n int) bool {
	return n <= s.reads(pod, adminPath)
}

func ordinal(n int) string {
	switch n {
	case 1:
		return "first"
	case 2:
		return "second"
	case 3:
		return "third"
	}
	return strconv.Itoa(n) + "th"
}

func countNoun(n int, noun string) string {
	if n == 1 {
		return "one " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// tail keeps the last n lines of data, as the kubelet's tailLines does.
func tail(data []byte, n int64) []byte {
	if n <= 0 {
		return data
	}
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end-- // the final newline ends the last line, it starts none
	}
	for i := end - 1; i >= 0; i-- {
		if data[i] == '\n' {
			n--
			if n == 0 {
				return data[i+1:]
			}
		}
	}
	return data
}
