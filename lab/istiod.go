package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// IstioModuleVersion is the istio.io/istio module version that
// lab/tools/pilot-discovery and lab/tools/istioctl both build, so the lab's
// istiod and its istioctl are one Istio (TestToolsPinOneIstio holds them to
// it). The cached pilot-discovery is named after its commit.
const IstioModuleVersion = "v0.0.0-20260827124520-eed52ebb66ad"

// IstioRelease is what that commit calls itself: its VERSION file plus
// "-dev", as Istio's own build stamps a build of a branch. istiod reports it,
// and the lab's xDS clients send it as ISTIO_VERSION: a data plane of the
// control plane's version, as after a finished upgrade.
const IstioRelease = "1.31-dev"

// EnvPilotDiscovery names a prebuilt pilot-discovery instead of the cached
// build.
const EnvPilotDiscovery = "MESHLAB_PILOT_DISCOVERY"

// IstiodClusterID is the cluster ID istiod gives itself out of cluster
// (Istio's default, "Kubernetes"), which the sidecars the lab injects
// report too.
const IstiodClusterID = "Kubernetes"

// istioCommit is the commit part of IstioModuleVersion's pseudo-version.
func istioCommit() string {
	return IstioModuleVersion[strings.LastIndex(IstioModuleVersion, "-")+1:]
}

// PilotDiscoveryBinary returns the path of pilot-discovery (istiod) of
// IstioModuleVersion, building it from lab/tools/pilot-discovery the first
// time (minutes on a small machine; later runs find it in the cache).
// $MESHLAB_PILOT_DISCOVERY names a prebuilt binary instead.
func PilotDiscoveryBinary(ctx context.Context) (string, error) {
	if p := os.Getenv(EnvPilotDiscovery); p != "" {
		return p, nil
	}
	return cachedToolBuild(ctx, "pilot-discovery", "pilot-discovery-"+istioCommit(), istioLDFlags())
}

// istioLDFlags stamp the version as Istio's build does
// (common/scripts/report_build_info.sh): istiod logs it and /version and
// syncz report it.
func istioLDFlags() string {
	pkg := "istio.io/istio/pkg/version"
	return strings.Join([]string{
		"-X", pkg + ".buildVersion=" + IstioRelease,
		"-X", pkg + ".buildGitRevision=" + istioCommit(),
		"-X", pkg + ".buildStatus=Clean",
	}, " ")
}

// Istiod is a real istiod (pilot-discovery) running out of cluster against
// the lab's API server, on loopback ports of its own so parallel labs do not
// clash. It serves plaintext xDS (what a sidecar's ADS stream reaches on
// 15010), the debug endpoints (/debug/syncz) on its monitoring address, and
// /ready on its HTTP address. No CA, no webhooks: the lab has no pods to
// sign certificates for or to inject.
type Istiod struct {
	GRPCAddr       string // plaintext xDS, 127.0.0.1:PORT
	MonitoringAddr string // /debug/*, /metrics
	HTTPAddr       string // /ready
	Log            string
	// Namespace is the control-plane namespace istiod runs for and reads
	// its mesh config from (the ConfigMap "istio", as installed istiods do).
	Namespace string

	lab  *Lab
	proc *process
}

// StartIstiod starts istiod for the control-plane namespace istio-system
// (creating the namespace if absent) and waits until it is ready and serves
// /debug/syncz. istiod reads the mesh config from the ConfigMap istio in
// that namespace, so a scenario applied later brings its own mesh config
// (istiod follows ConfigMap changes).
func StartIstiod(ctx context.Context, l *Lab) (_ *Istiod, err error) {
	return StartIstiodEnv(ctx, l)
}

// StartIstiodEnv is StartIstiod with extra environment variables for
// istiod (NAME=VALUE), as a Deployment's env would set its feature flags:
// a later one of the same name wins.
func StartIstiodEnv(ctx context.Context, l *Lab, env ...string) (_ *Istiod, err error) {
	bin, err := PilotDiscoveryBinary(ctx)
	if err != nil {
		return nil, err
	}
	ns := cluster.DefaultControlPlane
	if err := ensureNamespace(ctx, l, ns); err != nil {
		return nil, err
	}
	dir := filepath.Join(l.Dir, "istiod")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	i := &Istiod{Log: filepath.Join(l.Dir, "istiod.log"), Namespace: ns, lab: l}
	var lastErr error
	for range 3 {
		ports, err := freePorts(3)
		if err != nil {
			return nil, err
		}
		i.GRPCAddr, i.MonitoringAddr, i.HTTPAddr = loopback(ports[0]), loopback(ports[1]), loopback(ports[2])
		p, err := startProcessIn(processEnv{
			// istiod writes its DNS certificates under ./var/run/secrets.
			dir: dir,
			// PILOT_ENABLE_AMBIENT as the ambient profile sets it: a mesh
			// with ambient pods runs istiod so, and only then does a sidecar
			// send HBONE to an ambient endpoint (features.EnableHBONESend),
			// which is what the model predicts for one.
			// PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER off: the
			// scenarios carry what its deployment controller would create
			// for a Gateway (the Service NAME-CLASS, the pod, its
			// EndpointSlice), as a cluster holds them; left on, istiod
			// would apply its own Deployment and Service over them.
			env: append([]string{"POD_NAMESPACE=" + ns, "POD_NAME=istiod-meshlab", "REVISION=default", "PILOT_ENABLE_AMBIENT=true",
				"PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER=false"}, env...),
		}, "istiod", i.Log, bin, "discovery",
			"--kubeconfig="+l.Kubeconfig,
			"--grpcAddr="+i.GRPCAddr,
			"--monitoringAddr="+i.MonitoringAddr,
			"--httpAddr="+i.HTTPAddr,
			// Off: the TLS xDS/CA port, the webhook port, and a fixed
			// ControlZ port (0 picks a free one).
			"--secureGRPCAddr=",
			"--httpsAddr=",
			"--ctrlz_port=0",
			// Files that do not exist: istiod then reads the ConfigMap
			// istio (mesh and meshNetworks keys) as an installed one does.
			"--meshConfig="+filepath.Join(dir, "no-mesh-file"),
			"--networksConfig="+filepath.Join(dir, "no-networks-file"),
			"--log_output_level=default:info",
		)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		err = waitHTTP(ctx, p, 2*time.Minute, http.DefaultClient, "http://"+i.HTTPAddr+"/ready", nil)
		if err == nil {
			err = waitHTTP(ctx, p, 30*time.Second, http.DefaultClient, "http://"+i.MonitoringAddr+"/debug/syncz", nil)
		}
		if err == nil {
			i.proc = p
			l.logf("istiod %s ready, xDS at %s (%s)", IstioRelease, i.GRPCAddr, time.Since(start).Round(time.Millisecond))
			return i, nil
		}
		p.stop(10 * time.Second)
		lastErr = fmt.Errorf("istiod: %w\n%s", err, tail(i.Log, 30))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// StartIstiodT starts istiod for a test and stops it when the test ends,
// printing its log tail if the test failed.
func StartIstiodT(t testing.TB, l *Lab) *Istiod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	i, err := StartIstiod(ctx, l)
	if err != nil {
		t.Fatalf("start istiod: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("istiod log tail:\n%s", tail(i.Log, 60))
		}
		i.Stop()
	})
	return i
}

// Stop ends istiod; safe to call more than once.
func (i *Istiod) Stop() {
	if i.proc != nil {
		i.proc.stop(15 * time.Second)
	}
}

// Get GETs path from istiod's monitoring address, as an istioctl
// port-forwarded to 15014 does; a non-200 answer is an error.
func (i *Istiod) Get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+i.MonitoringAddr+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("istiod GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// ServeAs makes pod (an istiod pod a scenario records) this istiod for the
// product: the fake kubelet forwards its monitoring port to the real one,
// so proxy-status reads the real /debug/syncz through pods/portforward.
func (i *Istiod) ServeAs(pod cluster.PodRef) {
	i.lab.Kubelet.Forward(pod, cluster.IstiodMonitoringPort, i.MonitoringAddr)
}

// ensureNamespace creates namespace name if it does not exist.
func ensureNamespace(ctx context.Context, l *Lab, name string) error {
	_, err := l.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	return nil
}

// IstiodPods are the istiod pods scenario s records (app=istiod in its
// control-plane namespace): the ones ServeAs points at a real istiod.
func IstiodPods(s *recorded.Scenario) []cluster.PodRef {
	cp := s.ControlPlaneNamespace
	if cp == "" {
		cp = cluster.DefaultControlPlane
	}
	var out []cluster.PodRef
	for _, obj := range s.Objects {
		if p, ok := obj.(*corev1.Pod); ok && p.Namespace == cp && p.Labels["app"] == "istiod" {
			out = append(out, cluster.PodRef{Namespace: p.Namespace, Name: p.Name})
		}
	}
	return out
}

// WaitKnows waits until istiod has read objects: every Service in its
// service registry (/debug/registryz), every Istio rule in its config
// store (/debug/configz), and the endpoints of every EndpointSlice that has
// any in its endpoint index (/debug/endpointShardz). A proxy connecting
// after that is given a config built from them, once the push istiod
// debounces after reading them is done (XDSClient.WaitQuiet).
func (i *Istiod) WaitKnows(ctx context.Context, objects []runtime.Object) error {
	var services, configs, endpoints []string
	for _, obj := range objects {
		switch o := obj.(type) {
		case *corev1.Service:
			services = append(services, o.Name+"."+o.Namespace+".svc.cluster.local")
		case *discoveryv1.EndpointSlice:
			for _, e := range o.Endpoints {
				if len(e.Addresses) > 0 && o.Labels[discoveryv1.LabelServiceName] != "" {
					endpoints = append(endpoints, o.Labels[discoveryv1.LabelServiceName]+"."+o.Namespace+".svc.cluster.local")
					break
				}
			}
		default:
			m, err := meta.Accessor(obj)
			if err != nil {
				continue
			}
			gvks, _, err := applyScheme.ObjectKinds(obj)
			if err != nil || len(gvks) == 0 || !strings.HasSuffix(gvks[0].Group, "istio.io") {
				continue
			}
			configs = append(configs, gvks[0].Kind+" "+m.GetNamespace()+"/"+m.GetName())
		}
	}
	var missing []string
	for {
		missing = missing[:0]
		var registry []struct {
			Hostname string `json:"hostname"`
		}
		var store []struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		var shards map[string]json.RawMessage
		err := i.getJSON(ctx, "/debug/registryz", &registry)
		if err == nil {
			err = i.getJSON(ctx, "/debug/configz", &store)
		}
		if err == nil {
			err = i.getJSON(ctx, "/debug/endpointShardz", &shards)
		}
		if err != nil {
			return err
		}
		known := map[string]bool{}
		for _, s := range registry {
			known["service "+s.Hostname] = true
		}
		for _, c := range store {
			known[c.Kind+" "+c.Metadata.Namespace+"/"+c.Metadata.Name] = true
		}
		for h := range shards {
			known["endpoints "+h] = true
		}
		for _, s := range services {
			if !known["service "+s] {
				missing = append(missing, "service "+s)
			}
		}
		for _, c := range configs {
			if !known[c] {
				missing = append(missing, c)
			}
		}
		for _, e := range endpoints {
			if !known["endpoints "+e] {
				missing = append(missing, "endpoints of "+e)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("istiod has not read %s: %w", strings.Join(missing, ", "), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (i *Istiod) getJSON(ctx context.Context, path string, v any) error {
	body, err := i.Get(ctx, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("istiod %s: %w", path, err)
	}
	return nil
}
