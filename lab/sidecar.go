package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// Sidecar is a pod's istio-proxy played by the lab: an ADS stream to the
// real istiod under the pod's identity, and the Envoy admin built from what
// it applied, which the fake kubelet serves on the pod's port 15000. The
// product's Envoy probes then read what istiod really generated for that
// pod.
type Sidecar struct {
	Pod cluster.PodRef
	XDS *XDSClient
}

// ConnectSidecar connects pod's sidecar to istiod, waits until it holds a
// full config (clusters, their endpoints, listeners, their routes) and
// serves its Envoy admin through the fake kubelet. The pod must exist in
// the lab with its IP: istiod finds a proxy's pod, and so its labels,
// Services and Sidecar scope, by IP.
func (i *Istiod) ConnectSidecar(ctx context.Context, pod *corev1.Pod) (*Sidecar, error) {
	return i.ConnectSidecarVersion(ctx, pod, IstioRelease)
}

// ConnectSidecarVersion is ConnectSidecar for a proxy that reports
// istioVersion as its ISTIO_VERSION: one left on an older release by an
// in-place upgrade of istiod (syncz's istio_version is what it sends).
func (i *Istiod) ConnectSidecarVersion(ctx context.Context, pod *corev1.Pod, istioVersion string) (*Sidecar, error) {
	node, err := SidecarNode(pod, istioVersion)
	if err != nil {
		return nil, err
	}
	c, err := ConnectXDS(ctx, i.GRPCAddr, node)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.WaitSynced(wctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("%w\n%s", err, tail(i.Log, 20))
	}
	ref := cluster.PodRef{Namespace: pod.Namespace, Name: pod.Name}
	if err := i.lab.Kubelet.Serve(ref, cluster.EnvoyAdminPort, c.AdminHandler()); err != nil {
		c.Close()
		return nil, err
	}
	return &Sidecar{Pod: ref, XDS: c}, nil
}

// Close ends the sidecar's xDS stream; its admin keeps serving what it
// last applied, as an Envoy cut off from istiod does.
func (s *Sidecar) Close() { s.XDS.Close() }

// SidecarNode is the Envoy node pilot-agent would send for pod's
// istio-proxy: the ID sidecar~IP~POD.NS~NS.svc.cluster.local (router~ for
// a gateway, waypoint~ for a waypoint), the service
// cluster, and the metadata istiod reads (pilot/pkg/model NodeMetadata),
// taken from where pilot-agent takes them: the ISTIO_META_* and
// ISTIO_METAJSON_* variables the injector put on the container (CLUSTER_ID,
// MESH_ID, INTERCEPTION_MODE, WORKLOAD_NAME, OWNER, POD_PORTS,
// APP_CONTAINERS, NODE_NAME, ...), the pod's identity (NAME, NAMESPACE,
// SERVICE_ACCOUNT, INSTANCE_IPS), its labels and annotations (the downward
// API files), and pilot-agent's own ISTIO_VERSION and ports.
func SidecarNode(pod *corev1.Pod, istioVersion string) (*corev3.Node, error) {
	proxy := proxyContainer(pod)
	if proxy == nil {
		return nil, fmt.Errorf("pod %s/%s has no %s container", pod.Namespace, pod.Name, mesh.ProxyContainer)
	}
	ips := podIPs(pod)
	if len(ips) == 0 {
		return nil, fmt.Errorf("pod %s/%s has no IP: istiod could not tell which pod the proxy is", pod.Namespace, pod.Name)
	}
	meta := map[string]any{}
	for _, e := range proxy.Env {
		value, ok := envValue(pod, e)
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(e.Name, "ISTIO_METAJSON_"):
			var v any
			if err := json.Unmarshal([]byte(value), &v); err != nil {
				return nil, fmt.Errorf("pod %s/%s: %s is not JSON: %w", pod.Namespace, pod.Name, e.Name, err)
			}
			meta[strings.TrimPrefix(e.Name, "ISTIO_METAJSON_")] = v
		case strings.HasPrefix(e.Name, "ISTIO_META_"):
			meta[strings.TrimPrefix(e.Name, "ISTIO_META_")] = value
		}
	}
	setDefault := func(k string, v any) {
		if _, ok := meta[k]; !ok {
			meta[k] = v
		}
	}
	labels := map[string]any{}
	if m, ok := meta["LABELS"].(map[string]any); ok {
		labels = m
	}
	for k, v := range pod.Labels {
		labels[k] = v
	}
	meta["LABELS"] = labels
	annotations := map[string]any{}
	for k, v := range pod.Annotations {
		annotations[k] = v
	}
	if len(annotations) > 0 {
		meta["ANNOTATIONS"] = annotations
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	meta["NAME"] = pod.Name
	meta["NAMESPACE"] = pod.Namespace
	meta["SERVICE_ACCOUNT"] = sa
	meta["INSTANCE_IPS"] = strings.Join(ips, ",")
	meta["ISTIO_VERSION"] = istioVersion
	setDefault("CLUSTER_ID", IstiodClusterID)
	setDefault("INTERCEPTION_MODE", "REDIRECT")
	setDefault("NODE_NAME", pod.Spec.NodeName)
	meta["ENVOY_STATUS_PORT"] = 15021
	meta["ENVOY_PROMETHEUS_PORT"] = 15090
	meta["PILOT_SAN"] = []any{"istiod.istio-system.svc"}

	md, err := structpb.NewStruct(meta)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: node metadata: %w", pod.Namespace, pod.Name, err)
	}
	// A gateway's pilot-agent runs `proxy router`: istiod gives a router
	// node its Gateways' listeners and routes, not a sidecar's.
	// A waypoint's runs `proxy waypoint`: istiod gives it the inbound-vip
	// clusters and main_internal listener of the Services bound to it.
	proxyType := mesh.ProxyTypeSidecar
	if gateway, _ := mesh.GatewayPod(pod); gateway {
		proxyType = mesh.ProxyTypeRouter
	} else if mesh.IsWaypointPod(pod) {
		proxyType = mesh.ProxyTypeWaypoint
	}
	return &corev3.Node{
		Id:            fmt.Sprintf("%s~%s~%s.%s~%s.svc.cluster.local", proxyType, ips[0], pod.Name, pod.Namespace, pod.Namespace),
		Cluster:       serviceCluster(pod),
		Metadata:      md,
		UserAgentName: "envoy",
	}, nil
}

// proxyContainer is the pod's istio-proxy: a container, or a native
// sidecar (an init container that keeps running).
func proxyContainer(pod *corev1.Pod) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == mesh.ProxyContainer {
				return &list[i]
			}
		}
	}
	return nil
}

func podIPs(pod *corev1.Pod) []string {
	var ips []string
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = append(ips, pod.Status.PodIP)
	}
	return ips
}

// envValue resolves a container variable as the kubelet would: its value,
// or the pod field it refers to. Resource and secret references are not
// node metadata and stay unresolved.
func envValue(pod *corev1.Pod, e corev1.EnvVar) (string, bool) {
	if e.ValueFrom == nil {
		return e.Value, true
	}
	ref := e.ValueFrom.FieldRef
	if ref == nil {
		return "", false
	}
	path := ref.FieldPath
	switch path {
	case "metadata.name":
		return pod.Name, true
	case "metadata.namespace":
		return pod.Namespace, true
	case "metadata.uid":
		return string(pod.UID), true
	case "spec.nodeName":
		return pod.Spec.NodeName, true
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, true
	case "status.podIP":
		return pod.Status.PodIP, true
	case "status.hostIP":
		return pod.Status.HostIP, true
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok {
			v, found := m[strings.TrimSuffix(key, "']")]
			return v, found
		}
	}
	return "", false
}

// serviceCluster is Envoy's --service-cluster as pilot-agent sets it:
// the canonical service name (or app label, or the pod's name) dot the
// namespace.
func serviceCluster(pod *corev1.Pod) string {
	name := pod.Name
	for _, l := range []string{"service.istio.io/canonical-name", "app.kubernetes.io/name", "app"} {
		if v := pod.Labels[l]; v != "" {
			name = v
			break
		}
	}
	return name + "." + pod.Namespace
}

// AttachScenario makes i the istiod of scenario s, already applied: its
// istiod pods forward to i, and once i has read the scenario, the source
// pod (when it has a sidecar) is connected and its Envoy admin served from
// what i pushed. It returns the sidecar, or nil when the source has none.
func (i *Istiod) AttachScenario(ctx context.Context, s *recorded.Scenario) (*Sidecar, error) {
	for _, pod := range IstiodPods(s) {
		i.ServeAs(pod)
	}
	if err := i.WaitKnows(ctx, s.Objects); err != nil {
		return nil, err
	}
	if s.Target.Source == nil {
		return nil, nil
	}
	for _, obj := range s.Objects {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.Namespace != s.Target.Source.Namespace || pod.Name != s.Target.Source.Name {
			continue
		}
		if mesh.PodSidecar(pod) == mesh.SidecarNone {
			return nil, nil
		}
		sc, err := i.ConnectSidecar(ctx, pod)
		if err != nil {
			return nil, err
		}
		if err := sc.XDS.WaitQuiet(ctx, time.Second); err != nil {
			sc.Close()
			return nil, err
		}
		return sc, nil
	}
	return nil, fmt.Errorf("scenario %s has no source pod %s", s.Name, s.Target.Source)
}
