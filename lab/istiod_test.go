package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	corev1 "k8s.io/api/core/v1"
)

// The lab's istiod and its istioctl are one Istio, and the cached binary's
// name follows the version: a bump of one go.mod without the other (or
// without IstioModuleVersion) fails here, not as a mismatch found later.
func TestToolsPinOneIstio(t *testing.T) {
	for _, tool := range []string{"istioctl", "pilot-discovery"} {
		data, err := os.ReadFile(filepath.Join("tools", tool, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "istio.io/istio" {
				got = f[1]
			} else if len(f) >= 3 && f[0] == "require" && f[1] == "istio.io/istio" {
				got = f[2]
			}
		}
		if got != IstioModuleVersion {
			t.Errorf("lab/tools/%s requires istio.io/istio %q, the lab pins %q", tool, got, IstioModuleVersion)
		}
	}
	if c := istioCommit(); len(c) != 12 || !strings.HasSuffix(IstioModuleVersion, "-"+c) {
		t.Errorf("commit of %s read as %q", IstioModuleVersion, c)
	}
}

func scenarioPod(t *testing.T, scenario, name string) *corev1.Pod {
	t.Helper()
	s, err := recorded.Load(assets.FS, scenario)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range s.Objects {
		if p, ok := obj.(*corev1.Pod); ok && p.Name == name {
			return p
		}
	}
	t.Fatalf("scenario %s has no pod %s", scenario, name)
	return nil
}

// The node a lab sidecar presents is what pilot-agent would send for the
// recorded pod: istiod parses the ID's four parts, finds the pod by the IP,
// and reads the metadata the injector put in ISTIO_META_* variables.
func TestSidecarNodeFromInjectedPod(t *testing.T) {
	pod := scenarioPod(t, "healthy", "web-5b7d9c6f4-q8w2e")
	node, err := SidecarNode(pod, IstioRelease)
	if err != nil {
		t.Fatal(err)
	}
	wantID := "sidecar~" + pod.Status.PodIP + "~web-5b7d9c6f4-q8w2e.shop~shop.svc.cluster.local"
	if node.GetId() != wantID {
		t.Errorf("node ID %q, want %q", node.GetId(), wantID)
	}
	md := node.GetMetadata().AsMap()
	for key, want := range map[string]any{
		"NAMESPACE":         "shop",
		"NAME":              "web-5b7d9c6f4-q8w2e",
		"INSTANCE_IPS":      pod.Status.PodIP,
		"ISTIO_VERSION":     IstioRelease,
		"CLUSTER_ID":        "Kubernetes",
		"INTERCEPTION_MODE": "REDIRECT",
		"WORKLOAD_NAME":     "web",
		"OWNER":             "kubernetes://apis/apps/v1/namespaces/shop/deployments/web",
		"MESH_ID":           "cluster.local",
		"APP_CONTAINERS":    "web",
		// A fieldRef resolved against the pod, as the kubelet does.
		"NODE_NAME":       pod.Spec.NodeName,
		"SERVICE_ACCOUNT": pod.Spec.ServiceAccountName,
	} {
		if md[key] != want {
			t.Errorf("metadata %s = %v, want %v", key, md[key], want)
		}
	}
	labels, _ := md["LABELS"].(map[string]any)
	if labels["app"] != "web" {
		t.Errorf("metadata LABELS %v lack the pod's app=web", labels)
	}
	if ports, _ := md["POD_PORTS"].(string); !strings.Contains(ports, `"containerPort":8080`) {
		t.Errorf("metadata POD_PORTS %q, want the injected JSON with containerPort 8080", ports)
	}
	if node.GetCluster() != "web.shop" {
		t.Errorf("service cluster %q, want web.shop", node.GetCluster())
	}

	noProxy := pod.DeepCopy()
	noProxy.Spec.Containers, noProxy.Spec.InitContainers = nil, nil
	if _, err := SidecarNode(noProxy, IstioRelease); err == nil {
		t.Error("a pod without istio-proxy got a sidecar node")
	}
	noIP := pod.DeepCopy()
	noIP.Status.PodIP, noIP.Status.PodIPs = "", nil
	if _, err := SidecarNode(noIP, IstioRelease); err == nil {
		t.Error("a pod without an IP got a sidecar node: istiod could not find its pod")
	}
}
