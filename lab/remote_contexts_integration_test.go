//go:build integration

package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meshtriage/meshtriage/probes/patch"
)

// Two real kube-apiservers as two clusters of one mesh on two networks,
// the Service orders in both (namespace sameness) with a pod in each,
// and each cluster's east-west gateway Service, first with its load
// balancer pending, then with its address. `meshtriage check
// --remote-contexts c2` from a sidecar in c1 reads both through one
// kubeconfig of two contexts and says, endpoint by endpoint, which
// cluster it is in and how the caller reaches it: c1's pod directly,
// c2's through c2's gateway 172.18.2.10:15443. Then c2's control-plane
// namespace loses its network label: c2's pod goes to the caller as a
// pod IP, which the step says, naming the label the gateway carries, and
// the finding's patch, applied to c2, puts it behind the gateway again.
// No istiod is needed: this is what the configuration says istiod does.
func TestRemoteContextsReadEachClustersEndpoints(t *testing.T) {
	c1, c2 := startTwoLabs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	applyOrdersSide(ctx, t, c1, "network1", "orders-cluster1", "10.1.0.5", "cluster1", mcPod("web-1", "10.1.0.9", "cluster1", "network1"))
	applyOrdersSide(ctx, t, c2, "network2", "orders-cluster2", "10.2.0.5", "cluster2")

	args := twoContextKubeconfig(t, c1, c2)

	// No controller gives a LoadBalancer its address here: pending, c2's
	// gateway Service is no gateway to an istiod that read it so, and
	// gateway-unusable names it.
	step := checkStep(t, "multicluster", args...)
	if got := step.list("mc_gateway_unusable"); len(got) != 1 || !strings.HasPrefix(got[0], "c2: istio-system/istio-eastwestgateway: no address") {
		t.Errorf("pending load balancer: mc_gateway_unusable = %q", got)
	}
	// Its pod is undecided, not direct: a working gateway changed in
	// place to a pending load balancer keeps its old gateway in istiod
	// (TestMultiClusterAgainstIstiod), which the objects cannot tell.
	if got := step.list("mc_undecided"); len(got) != 1 || !strings.HasPrefix(got[0], "c2: 10.2.0.5 (pod orders-cluster2): on network network2, whose gateway c2: Service istio-system/istio-eastwestgateway has no address") {
		t.Errorf("pending load balancer: mc_undecided = %q", got)
	}

	// The load balancers' addresses, through the status subresource.
	setGatewayAddresses(ctx, t, map[*Lab]string{c1: "172.18.1.10", c2: "172.18.2.10"})
	step = checkStep(t, "multicluster", args...)
	wantEndpoints := []string{
		"c1: 10.1.0.5 (pod orders-cluster1) network network1: direct",
		"c2: 10.2.0.5 (pod orders-cluster2) network network2: via gateway 172.18.2.10:15443",
	}
	if got := step.list("mc_endpoints"); !slices.Equal(got, wantEndpoints) {
		t.Errorf("mc_endpoints = %q, want %q", got, wantEndpoints)
	}
	if step.Status != "pass" || step.Facts["mc_remotes_read"] != float64(1) {
		t.Errorf("step %s: %s; facts %v", step.Status, step.Summary, step.Facts)
	}

	// Issue 30: capture --remote-contexts records c2's reads beside c1's,
	// and check --recording on the result, with no cluster to reach,
	// finds what the live check finds, each endpoint under its context.
	captureAndReplayTwoClusters(t, args, wantEndpoints)
	t.Run("bug report a cluster", func(t *testing.T) { bugReportsOfTwoClusters(t, args, wantEndpoints) })

	// c2's control-plane namespace without its network label.
	ns, err := c2.Kube.CoreV1().Namespaces().Get(ctx, "istio-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(ns.Labels, "topology.istio.io/network")
	if _, err := c2.Kube.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	step = checkStep(t, "multicluster", args...)
	if got := step.list("mc_remote_direct"); !slices.Equal(got, []string{"c2: 10.2.0.5 (network -)"}) {
		t.Errorf("mc_remote_direct = %q", got)
	}
	if got := step.list("mc_label_missing"); len(got) != 1 || !strings.HasPrefix(got[0], "c2: istio-system=network2") {
		t.Errorf("mc_label_missing = %q", got)
	}
	// The finding's fix is a merge patch of c2's namespace, with the
	// value c2's gateway carries; applied to c2's API server as the
	// on-call would (kubectl patch --context c2), the caller goes through
	// the gateway again.
	fix := findingPatch(t, "multicluster.network-label-missing", args...)
	var body bytes.Buffer
	if err := json.Compact(&body, fix.Patch); err != nil {
		t.Fatal(err)
	}
	if fix.Context != "c2" || fix.Kind != "Namespace" || fix.Name != "istio-system" || fix.Type != "merge" ||
		body.String() != `{"metadata":{"labels":{"topology.istio.io/network":"network2"}}}` {
		t.Fatalf("fix = %s %s %s %s: %s", fix.Context, fix.Kind, fix.Name, fix.Type, body.String())
	}
	if _, err := c2.Kube.CoreV1().Namespaces().Patch(ctx, fix.Name, types.MergePatchType, fix.Patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	step = checkStep(t, "multicluster", args...)
	if got := step.list("mc_endpoints"); !slices.Equal(got, wantEndpoints) {
		t.Errorf("after the fix: mc_endpoints = %q, want %q", got, wantEndpoints)
	}

	// A context the kubeconfig lacks is refused by name, before any read.
	_, stderr, code := runMeshtriage(t, args[0], args[1], "--remote-contexts", "c3", "check", "svc/orders")
	if code != 1 || !strings.Contains(stderr, `--remote-contexts: context "c3" not found in kubeconfig (contexts: c1, c2)`) {
		t.Errorf("unknown context: exit %d, stderr %q", code, stderr)
	}
}

// captureAndReplayTwoClusters runs the real binary's capture with the
// live check's args (global flags, --remote-contexts c2, then the command)
// and check --recording on what it wrote, and requires the replay's
// findings and its multi-cluster steps (status, summary, every fact) to
// be the live check's.
func captureAndReplayTwoClusters(t *testing.T, args []string, wantEndpoints []string) {
	t.Helper()
	liveFindings, liveSteps := checkTwoClusters(t, args...)
	recording := filepath.Join(t.TempDir(), "orders-two-clusters.tar.gz")
	command := slices.Index(args, "check")
	captureArgs := append(slices.Clone(args[:command]), "capture")
	captureArgs = append(captureArgs, args[command+1:]...)
	captureArgs = append(captureArgs, "-o", recording, "--metrics-window", "1s")
	c := runCLI(t, meshtriageBinary(t), captureArgs...)
	if c.code != 0 || !strings.Contains(c.stdout, "captured remote cluster c2: ") {
		t.Fatalf("capture %q: exit %d\nstdout:\n%s\nstderr:\n%s", captureArgs, c.code, c.stdout, c.stderr)
	}
	files := slices.Sorted(maps.Keys(archiveText(t, recording)))
	if !slices.ContainsFunc(files, func(f string) bool { return strings.Contains(f, "/clusters/c2/manifests/") }) {
		t.Fatalf("the recording holds nothing of c2 under clusters/c2/manifests/: %q", files)
	}

	replayFindings, replaySteps := checkTwoClusters(t, "check", "--recording", recording, "--metrics-window", "1s")
	if !maps.Equal(replayFindings, liveFindings) {
		t.Errorf("findings: live %v, replayed %v", liveFindings, replayFindings)
	}
	if got := replaySteps["multicluster"].list("mc_endpoints"); !slices.Equal(got, wantEndpoints) {
		t.Errorf("replayed mc_endpoints = %q, want %q", got, wantEndpoints)
	}
	for _, probe := range []string{"multicluster", "eastwest-passthrough", "multicluster-trust"} {
		live, ran := liveSteps[probe]
		replayed := replaySteps[probe]
		if !ran {
			continue
		}
		if live.Status != replayed.Status || live.Summary != replayed.Summary || !reflect.DeepEqual(live.Facts, replayed.Facts) {
			t.Errorf("step %s:\nlive     %s %s %v\nreplayed %s %s %v", probe, live.Status, live.Summary, live.Facts, replayed.Status, replayed.Summary, replayed.Facts)
		}
	}
	if _, ran := liveSteps["multicluster"]; !ran {
		t.Errorf("the live check ran no multicluster step")
	}
}

// bugReportsOfTwoClusters makes a real istioctl bug-report of each
// cluster and requires check --bug-report c1's --bug-report c2's to find
// what the live check finds, c2 read as the remote cluster named by its
// archive. istioctl bug-report --context writes the kubeconfig's current
// context, not --context's (it asks kubectl config current-context): an
// archive of c2 made so names c1, with c2's server, and is refused saying
// so; made with c2 current, it names c2.
func bugReportsOfTwoClusters(t *testing.T, args []string, wantEndpoints []string) {
	istioctl := istioctlBinary(t)
	kubeconfig := args[slices.Index(args, "--kubeconfig")+1]
	report := func(current string, extra ...string) string {
		t.Helper()
		dir := t.TempDir()
		cfg, err := clientcmd.LoadFromFile(kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		cfg.CurrentContext = current
		own := filepath.Join(dir, "kubeconfig")
		if err := clientcmd.WriteToFile(*cfg, own); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, istioctl, append([]string{"bug-report", "--kubeconfig", own, "--output-dir", dir, "--dir", filepath.Join(dir, "work"), "--timeout", "1m"}, extra...)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+own)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("istioctl bug-report (current context %s %v): %v\n%s", current, extra, err, out)
		}
		return filepath.Join(dir, "bug-report.tar.gz")
	}
	c1, c2 := report("c1"), report("c2")
	liveFindings, liveSteps := checkTwoClusters(t, args...)
	findings, steps := checkTwoClusters(t, "check", "svc/orders", "-n", "shop", "--from", "pod/web-1", "--bug-report", c1, "--bug-report", c2)
	if got := steps["multicluster"].list("mc_endpoints"); !slices.Equal(got, wantEndpoints) {
		t.Errorf("bug reports: mc_endpoints = %q, want %q (step %+v)", got, wantEndpoints, steps["multicluster"])
	}
	if live, got := liveSteps["multicluster"], steps["multicluster"]; live.Status != got.Status || !reflect.DeepEqual(live.Facts, got.Facts) {
		t.Errorf("multicluster step:\nlive        %s %v\nbug reports %s %v", live.Status, live.Facts, got.Status, got.Facts)
	}
	for cause := range liveFindings {
		if strings.HasPrefix(cause, "multicluster.") && findings[cause] != liveFindings[cause] {
			t.Errorf("finding %s: live %s, bug reports %q", cause, liveFindings[cause], findings[cause])
		}
	}

	misnamed := report("c1", "--context", "c2")
	_, stderr, code := runMeshtriage(t, "check", "svc/orders", "-n", "shop", "--bug-report", c1, "--bug-report", misnamed)
	if code != 1 || !strings.Contains(stderr, `both name context "c1", of different API servers`) {
		t.Errorf("a c2 bug report made with --context c2: exit %d, stderr %q", code, stderr)
	}
}

type mcStep struct {
	Probe   string         `json:"probe"`
	Status  string         `json:"status"`
	Summary string         `json:"summary"`
	Facts   map[string]any `json:"facts"`
}

func (s mcStep) list(name string) []string {
	var out []string
	raw, _ := s.Facts[name].([]any)
	for _, v := range raw {
		out = append(out, v.(string))
	}
	return out
}

// findingPatch runs check and returns the one patch of cause's finding.
func findingPatch(t *testing.T, cause string, args ...string) patch.Patch {
	t.Helper()
	out, stderr, code := runMeshtriage(t, args...)
	var rep struct {
		Findings []struct {
			Cause      string `json:"cause"`
			Confidence string `json:"confidence"`
			Fix        struct {
				Directions []struct {
					Patches []patch.Patch `json:"patches"`
				} `json:"directions"`
			} `json:"fix"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("exit %d, not the JSON report: %v\n%s\n%s", code, err, out, stderr)
	}
	for _, f := range rep.Findings {
		if f.Cause != cause {
			continue
		}
		if f.Confidence != "medium" {
			t.Errorf("%s at %s: the configuration alone is medium", cause, f.Confidence)
		}
		for _, d := range f.Fix.Directions {
			if len(d.Patches) == 1 {
				return d.Patches[0]
			}
		}
	}
	t.Fatalf("no %s finding with one patch (exit %d):\n%s\n%s", cause, code, out, stderr)
	return patch.Patch{}
}

func mcNamespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func mcService() *corev1.Service {
	return &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "orders"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}}}}
}

func mcGatewayService(network string) *corev1.Service {
	return &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "istio-eastwestgateway", Namespace: "istio-system",
			Labels: map[string]string{"istio": "eastwestgateway", "topology.istio.io/network": network}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"istio": "eastwestgateway"},
			Ports: []corev1.ServicePort{{Name: "status-port", Port: 15021}, {Name: "tls", Port: 15443}}}}
}

func mcPod(name, ip, clusterID, network string) *corev1.Pod {
	app := "orders"
	if strings.HasPrefix(name, "web") {
		app = "web"
	}
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop",
			Labels: map[string]string{"app": app, "security.istio.io/tlsMode": "istio"}},
		Spec: corev1.PodSpec{NodeName: NodeName, Containers: []corev1.Container{
			{Name: app, Image: app},
			{Name: "istio-proxy", Image: "proxyv2", Env: []corev1.EnvVar{
				{Name: "ISTIO_META_CLUSTER_ID", Value: clusterID}, {Name: "ISTIO_META_NETWORK", Value: network}}},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

func mcSlice(ip, pod string) *discoveryv1.EndpointSlice {
	ready := true
	port, name := int32(8080), "http"
	return &discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta:  metav1.ObjectMeta{Name: "orders-" + pod, Namespace: "shop", Labels: map[string]string{"kubernetes.io/service-name": "orders"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod, Namespace: "shop"}}}}
}
