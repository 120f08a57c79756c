package podfacts

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"istio.io/api/annotation"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// IstioIptablesFlags finds the istio-iptables command line of the
// injected init container (istio-init, or istio-validation under the CNI
// plugin): the annotations merged with the injector's mesh-wide values,
// as the pod's iptables actually apply them. Flags are the injector's
// short ones with their value in the next argument.
func IstioIptablesFlags(pod *corev1.Pod) (flags map[string]string, from string, ok bool) {
	for _, c := range pod.Spec.InitContainers {
		if c.Name != "istio-init" && c.Name != "istio-validation" {
			continue
		}
		argv := append(append([]string(nil), c.Command...), c.Args...)
		if !slices.ContainsFunc(argv, func(a string) bool { return a == "istio-iptables" || strings.HasSuffix(a, "/istio-iptables") }) {
			continue
		}
		flags = map[string]string{}
		for i := 0; i+1 < len(argv); i++ {
			if a := argv[i]; len(a) == 2 && a[0] == '-' {
				flags[a] = argv[i+1]
				i++
			}
		}
		return flags, c.Name, true
	}
	return nil, "", false
}

// SplitList reads a comma-separated setting, blanks dropped.
func SplitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// InboundCaptured says whether istio-iptables redirects connections to
// the pod's port to its sidecar's inbound listener, and if not, why: no
// sidecar, interception mode NONE, the port excluded (-d,
// excludeInboundPorts) or not included (-b, includeInboundPorts; "*" by
// default). The injected init container's arguments are what the pod's
// iptables apply; without one, the annotations say it.
func InboundCaptured(pod *corev1.Pod, port int32) (bool, string) {
	if mesh.PodSidecar(pod) == mesh.SidecarNone {
		return false, "no sidecar"
	}
	if pod.Annotations[annotation.SidecarInterceptionMode.Name] == "NONE" {
		return false, annotation.SidecarInterceptionMode.Name + " NONE"
	}
	p := strconv.Itoa(int(port))
	exclude, include, from := []string(nil), []string{"*"}, "annotation "
	if flags, init, ok := IstioIptablesFlags(pod); ok {
		from = init + " "
		exclude = SplitList(flags["-d"])
		if v, set := flags["-b"]; set {
			include = SplitList(v)
		}
	} else {
		if v, set := pod.Annotations[annotation.SidecarTrafficExcludeInboundPorts.Name]; set {
			exclude = SplitList(v)
		}
		if v, set := pod.Annotations[annotation.SidecarTrafficIncludeInboundPorts.Name]; set {
			include = SplitList(v)
		}
	}
	if slices.Contains(exclude, p) {
		return false, fmt.Sprintf("port %s excluded from inbound capture (%sexcludeInboundPorts)", p, from)
	}
	if !slices.Contains(include, "*") && !slices.Contains(include, p) {
		return false, fmt.Sprintf("port %s not in the inbound ports captured (%sincludeInboundPorts %s)", p, from, strings.Join(include, ","))
	}
	return true, ""
}

// StatusPort is pilot-agent's status port: the pod's
// status.sidecar.istio.io/port, else 15020.
func StatusPort(pod *corev1.Pod) int32 {
	if v, err := strconv.Atoi(pod.Annotations[annotation.SidecarStatusPort.Name]); err == nil && v > 0 {
		return int32(v)
	}
	return 15020
}

// ProbeRewritten: the injector rewrote the probe to pilot-agent's
// /app-health/ path on the pod's status port, which the kubelet then
// sends to pilot-agent instead of the app (pkg/kube/inject/app_probe.go).
func ProbeRewritten(pod *corev1.Pod, p *corev1.Probe) bool {
	h := p.HTTPGet
	return h != nil && h.Port.Type == intstr.Int && h.Port.IntVal == StatusPort(pod) && strings.HasPrefix(h.Path, "/app-health/")
}

// ProbeThroughSidecar: the kubelet sends the probe to the app's port as
// it is, an httpGet, tcpSocket or gRPC probe the injector did not rewrite,
// which meets the sidecar's inbound listener when that port is captured.
func ProbeThroughSidecar(pod *corev1.Pod, p *corev1.Probe) bool {
	if p == nil || ProbeRewritten(pod, p) {
		return false
	}
	return p.HTTPGet != nil || p.TCPSocket != nil || p.GRPC != nil
}

// ProxyAcceptsHTTP10 says whether the pod's sidecar is told to accept
// HTTP/1.0, and where: istiod sets accept_http_10 on its HTTP listeners
// for a proxy whose node metadata HTTP10 is "1" (listener.go
// enableHTTP10), which pilot-agent takes from ISTIO_META_HTTP10, in
// istio-proxy's environment or the proxyMetadata of the pod's
// proxy.istio.io/config annotation. istiod's own PILOT_HTTP10, for every
// proxy, is not the pod's to say.
func ProxyAcceptsHTTP10(pod *corev1.Pod) (bool, string) {
	if c, ok := mesh.ProxyContainerSpec(pod); ok {
		for _, e := range c.Env {
			if e.Name == "ISTIO_META_HTTP10" && e.Value == "1" {
				return true, "istio-proxy env ISTIO_META_HTTP10=1"
			}
		}
	}
	var cfg struct {
		ProxyMetadata map[string]string `json:"proxyMetadata"`
	}
	if text := pod.Annotations[annotation.ProxyConfig.Name]; text != "" && yaml.Unmarshal([]byte(text), &cfg) == nil && cfg.ProxyMetadata["ISTIO_META_HTTP10"] == "1" {
		return true, annotation.ProxyConfig.Name + " proxyMetadata ISTIO_META_HTTP10: \"1\""
	}
	return false, ""
}
