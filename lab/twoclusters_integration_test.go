//go:build integration

package lab

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// The pieces the multi-cluster lab tests share: two labs as two clusters,
// one kubeconfig of their contexts, each cluster's side of the Service
// orders, and check's JSON report read back.

// startTwoLabs starts two independent labs (each its own etcd,
// kube-apiserver and fake kubelet) side by side.
func startTwoLabs(t *testing.T) (c1, c2 *Lab) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c1 = StartT(t, Options{}) }()
	go func() { defer wg.Done(); c2 = StartT(t, Options{}) }()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return c1, c2
}

// twoContextKubeconfig writes a kubeconfig whose contexts c1 (current)
// and c2 reach the two labs, namespace shop, and returns the args of
// `check svc/orders --from pod/web-1 --remote-contexts c2` through it.
func twoContextKubeconfig(t *testing.T, c1, c2 *Lab) (args []string) {
	t.Helper()
	return twoContextKubeconfigAs(t, c1, c2, c1.Config.BearerToken, c2.Config.BearerToken)
}

// twoContextKubeconfigAs is twoContextKubeconfig whose contexts
// authenticate with token1 in c1 and token2 in c2.
func twoContextKubeconfigAs(t *testing.T, c1, c2 *Lab, token1, token2 string) (args []string) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	tokens := map[string]string{"c1": token1, "c2": token2}
	for name, l := range map[string]*Lab{"c1": c1, "c2": c2} {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: l.Server, CertificateAuthorityData: l.Config.TLSClientConfig.CAData}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tokens[name]}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "shop"}
	}
	cfg.CurrentContext = "c1"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return []string{"--kubeconfig", kubeconfig, "--remote-contexts", "c2", "check", "svc/orders", "--from", "pod/web-1"}
}

// applyOrdersSide applies one cluster's side of orders: its control-plane
// namespace on network, the Service, the east-west gateway Service of
// that network, one pod of orders (injected with clusterID) and its
// EndpointSlice, and extra.
func applyOrdersSide(ctx context.Context, t *testing.T, l *Lab, network, pod, podIP, clusterID string, extra ...runtime.Object) *Applied {
	t.Helper()
	objs := append([]runtime.Object{
		mcNamespace("istio-system", map[string]string{networkLabel: network}),
		mcNamespace("shop", nil),
		mcService(),
		mcGatewayService(network),
		mcPod(pod, podIP, clusterID, network),
		mcSlice(podIP, pod),
	}, extra...)
	a, err := Apply(ctx, l, recorded.FromObjects("orders-"+pod, objs))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// ambientMultiNetworkEnv is istiod's environment in an ambient
// multi-network mesh (istioctl's --set values.pilot.env...).
var ambientMultiNetworkEnv = []corev1.EnvVar{{Name: "PILOT_ENABLE_AMBIENT", Value: "true"}, {Name: "AMBIENT_ENABLE_MULTI_NETWORK", Value: "true"}}

// replaceIstiod replaces l's istiod pod istio-system/istiod-1 (as
// eastWestPair makes it) with one whose discovery container runs with env:
// a pod's env cannot change, so it is deleted and made anew.
func replaceIstiod(ctx context.Context, t *testing.T, l *Lab, env ...corev1.EnvVar) {
	t.Helper()
	if err := l.Kube.CoreV1().Pods("istio-system").Delete(ctx, "istiod-1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, l, recorded.FromObjects("istiod-env", []runtime.Object{istiodPod(env...)})); err != nil {
		t.Fatal(err)
	}
}

// deleteOrders deletes the orders pod of l (as applyOrdersSide makes it)
// and its EndpointSlice: the Service keeps no endpoint there.
func deleteOrders(ctx context.Context, t *testing.T, l *Lab, pod string) {
	t.Helper()
	if err := l.Kube.DiscoveryV1().EndpointSlices("shop").Delete(ctx, "orders-"+pod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := l.Kube.CoreV1().Pods("shop").Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
}

// istiodPod is c1's istiod pod istio-system/istiod-1 (not a running
// istiod: the pod the probes read), its discovery container run with env.
func istiodPod(env ...corev1.EnvVar) *corev1.Pod {
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "istiod-1", Namespace: "istio-system", Labels: map[string]string{"app": "istiod"}},
		Spec:       corev1.PodSpec{NodeName: NodeName, Containers: []corev1.Container{{Name: "discovery", Image: "pilot", Env: env}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.0.2"}}
}

// checkTwoClusters runs check and returns its findings' confidence by cause
// and its steps by probe.
func checkTwoClusters(t *testing.T, args ...string) (findings map[string]string, steps map[string]mcStep) {
	t.Helper()
	out, stderr, code := runMeshtriage(t, args...)
	var rep struct {
		Steps    []mcStep `json:"steps"`
		Findings []struct {
			Cause      string `json:"cause"`
			Confidence string `json:"confidence"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("exit %d, not the JSON report: %v\n%s\n%s", code, err, out, stderr)
	}
	findings, steps = map[string]string{}, map[string]mcStep{}
	for _, f := range rep.Findings {
		findings[f.Cause] = f.Confidence
	}
	for _, s := range rep.Steps {
		steps[s.Probe] = s
	}
	return findings, steps
}

// checkStep runs check and returns the step of probe.
func checkStep(t *testing.T, probe string, args ...string) mcStep {
	t.Helper()
	_, steps := checkTwoClusters(t, args...)
	s, ok := steps[probe]
	if !ok {
		t.Fatalf("no %s step in check's report (steps %v)", probe, slices.Sorted(maps.Keys(steps)))
	}
	return s
}

// setGatewayAddresses gives each lab's istio-system/istio-eastwestgateway
// Service its load balancer's address through the status subresource, as
// a cloud controller would: lab.Apply drops a Service's status, and no
// controller runs in the lab to write it.
func setGatewayAddresses(ctx context.Context, t *testing.T, addresses map[*Lab]string) {
	t.Helper()
	for l, ip := range addresses {
		svc, err := l.Kube.CoreV1().Services("istio-system").Get(ctx, "istio-eastwestgateway", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		if _, err := l.Kube.CoreV1().Services("istio-system").UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
