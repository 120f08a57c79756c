package probes

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"istio.io/api/label"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	securityv1beta1 "istio.io/api/security/v1beta1"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// MTLSProbe works out the effective mTLS mode of the upstream port from
// PeerAuthentication (mesh-wide, namespace, workload, portLevelMtls) and what
// the client sends (DestinationRule tls, auto mTLS, sidecars on both sides).
// A PERMISSIVE upstream accepts ISTIO_MUTUAL: that pair is not a mismatch.
type MTLSProbe struct{}

func (MTLSProbe) Meta() Meta {
	return Meta{
		ID:    "mtls",
		Title: "mTLS: what the client sends vs what the upstream accepts",
		Reads: []string{"peerauthentications", "destinationrules", "configmaps (mesh config)", "pods", "services"},
		Facts: []FactSpec{
			{"mtls_upstream_mode", FactString, "effective PeerAuthentication mode for the upstream port: STRICT, PERMISSIVE, DISABLE"},
			{"mtls_upstream_mode_source", FactString, "which policy decided it: mesh, namespace, workload, port, default"},
			{"mtls_client_tls_mode", FactString, "DestinationRule tls mode that applies to the client (DISABLE, SIMPLE, MUTUAL, ISTIO_MUTUAL) or none"},
			{"mtls_auto", FactBool, "mesh config enableAutoMtls (default true)"},
			{"mtls_client_sends", FactString, "what the client sidecar originates: mtls, plaintext, tls (SIMPLE/MUTUAL origination)"},
			{"mtls_upstream_sidecar", FactBool, "every selected upstream pod has a sidecar"},
			{"mtls_source_sidecar", FactBool, "the client has a sidecar (true when no source pod is named)"},
			{"mtls_mismatch", FactString, "none, plaintext-to-strict, mtls-to-no-sidecar, double-tls, mtls-to-disabled"},
		},
	}
}

// Values of mtls_mismatch.
const (
	MismatchNone            = "none"
	MismatchPlaintextStrict = "plaintext-to-strict"
	MismatchMTLSNoSidecar   = "mtls-to-no-sidecar"
	MismatchDoubleTLS       = "double-tls"
	MismatchMTLSDisabled    = "mtls-to-disabled"
)

type mtlsInput struct {
	Service *corev1.Service
	Pods    []corev1.Pod
	// Source is the calling pod; nil when none was named.
	Source           *corev1.Pod
	RootNamespace    string
	PeerAuths        []*securityv1.PeerAuthentication
	DestinationRules []*networkingv1.DestinationRule
	Mesh             mesh.MeshConfig
}

func (p MTLSProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchMTLS(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = mtlsCommands(t)
		return r
	}
	return evaluateMTLS(t, in)
}

func fetchMTLS(ctx context.Context, c cluster.Cluster, t cluster.Target) (mtlsInput, string, error) {
	var in mtlsInput
	var err error
	if in.Mesh, err = ReadMeshConfig(ctx, c); err != nil {
		return in, "read the mesh config", err
	}
	in.RootNamespace = in.Mesh.RootNamespace(controlPlane(c))
	if in.Service, err = c.GetService(ctx, t.Namespace, t.Service); err != nil {
		return in, fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err
	}
	if in.Pods, err = c.ListPods(ctx, t.Namespace, in.Service.Spec.Selector); err != nil {
		return in, "list pods in " + t.Namespace, err
	}
	if t.Source != nil {
		if in.Source, err = c.GetPod(ctx, t.Source.Namespace, t.Source.Name); err != nil {
			return in, "get source pod " + t.Source.String(), err
		}
	}
	for _, ns := range uniqueNonEmpty(in.RootNamespace, t.Namespace) {
		pas, err := c.PeerAuthentications(ctx, ns)
		if err != nil {
			return in, "list peerauthentications in " + ns, err
		}
		in.PeerAuths = append(in.PeerAuths, pas...)
	}
	for _, ns := range uniqueNonEmpty(sourceNamespace(t), t.Namespace, in.RootNamespace) {
		drs, err := c.DestinationRules(ctx, ns)
		if err != nil {
			return in, "list destinationrules in " + ns, err
		}
		in.DestinationRules = append(in.DestinationRules, drs...)
	}
	return in, "", nil
}

// portVerdict is the mTLS reading of one service port.
type portVerdict struct {
	port          int32
	containerPort int32
	mode          string
	modeSource    string
	clientTLS     string
	sends         string
	mismatch      string
	why           string
}

func evaluateMTLS(t cluster.Target, in mtlsInput) Result {
	res := Result{Commands: mtlsCommands(t)}
	sourceSidecar := in.Source == nil || mesh.PodSidecar(in.Source) != mesh.SidecarNone
	var clientLabels map[string]string
	if in.Source != nil {
		clientLabels = in.Source.Labels
	}
	clientNS := sourceNamespace(t)
	if clientNS == "" {
		clientNS = t.Namespace
	}
	applied, _ := effectiveDestinationRules(t, drInput{ClientNamespace: clientNS, ClientLabels: clientLabels, RootNamespace: in.RootNamespace, DRs: in.DestinationRules})
	dr := trafficPolicyRule(applied)

	withSidecar, labelledIstio := 0, 0
	for i := range in.Pods {
		if mesh.PodSidecar(&in.Pods[i]) != mesh.SidecarNone {
			withSidecar++
		}
		if in.Pods[i].Labels[label.SecurityTlsMode.Name] == "istio" {
			labelledIstio++
		}
	}
	upstreamSidecar := len(in.Pods) > 0 && withSidecar == len(in.Pods)

	var verdicts []portVerdict
	for _, sp := range in.Service.Spec.Ports {
		if t.Port != 0 && sp.Port != t.Port {
			continue
		}
		v := portVerdict{port: sp.Port, containerPort: resolveContainerPort(sp, in.Pods)}
		v.mode, v.modeSource = effectivePeerAuthMode(in.PeerAuths, in.RootNamespace, t.Namespace, podLabels(in.Pods), uint32(v.containerPort))
		v.clientTLS = drTLSMode(dr, sp.Port)
		v.sends, v.why = clientSends(sourceSidecar, v.clientTLS, in.Mesh.EnableAutoMtls(), v.mode, len(in.Pods), labelledIstio)
		v.mismatch = mtlsMismatch(v, len(in.Pods), withSidecar, labelledIstio, in.Mesh.EnableAutoMtls())
		verdicts = append(verdicts, v)
	}
	if len(verdicts) == 0 {
		res.Status = StatusError
		res.Summary = fmt.Sprintf("service %s has no port %d", t.Service, t.Port)
		return res
	}

	// The first mismatching port decides the facts: a triage is about the
	// port that fails, and the evidence table shows every port.
	chosen := verdicts[0]
	for _, v := range verdicts {
		if v.mismatch != MismatchNone {
			chosen = v
			break
		}
	}
	res.Evidence.Columns = []string{"port", "container port", "upstream mode", "decided by", "client DR tls", "client sends", "mismatch"}
	for _, v := range verdicts {
		res.Evidence.Rows = append(res.Evidence.Rows, []string{
			fmt.Sprint(v.port), fmt.Sprint(v.containerPort), v.mode, v.modeSource, v.clientTLS, v.sends, v.mismatch,
		})
	}
	var raw []string
	if dr != nil {
		raw = append(raw, fmt.Sprintf("DestinationRule in effect: %s/%s (host %s)", dr.Namespace, dr.Name, dr.Spec.GetHost()))
		for _, s := range dr.Spec.GetSubsets() {
			if tls := s.GetTrafficPolicy().GetTls(); tls != nil {
				raw = append(raw, fmt.Sprintf("subset %s overrides tls mode: %s", s.GetName(), tls.GetMode()))
			}
		}
	} else {
		raw = append(raw, "no DestinationRule applies: the client uses auto mTLS when enabled")
	}
	raw = append(raw, fmt.Sprintf("upstream pods: %d, with sidecar: %d, labelled %s=istio: %d", len(in.Pods), withSidecar, label.SecurityTlsMode.Name, labelledIstio))
	if in.Source == nil {
		raw = append(raw, "no source pod named: assuming the client has a sidecar (use --from pod/NAME)")
	} else {
		raw = append(raw, fmt.Sprintf("source %s/%s sidecar: %s", in.Source.Namespace, in.Source.Name, mesh.PodSidecar(in.Source)))
	}
	raw = append(raw, "port "+fmt.Sprint(chosen.port)+": "+chosen.why)
	res.Evidence.Raw = strings.Join(raw, "\n")

	res.Facts = Facts{
		"mtls_upstream_mode":        chosen.mode,
		"mtls_upstream_mode_source": chosen.modeSource,
		"mtls_client_tls_mode":      chosen.clientTLS,
		"mtls_auto":                 in.Mesh.EnableAutoMtls(),
		"mtls_client_sends":         chosen.sends,
		"mtls_upstream_sidecar":     upstreamSidecar,
		"mtls_source_sidecar":       sourceSidecar,
		"mtls_mismatch":             chosen.mismatch,
	}
	switch chosen.mismatch {
	case MismatchNone:
		res.Status = StatusPass
		res.Summary = fmt.Sprintf("port %d: client sends %s, upstream accepts %s: compatible", chosen.port, chosen.sends, chosen.mode)
	case MismatchPlaintextStrict:
		res.Status = StatusFail
		res.Summary = fmt.Sprintf("port %d: client sends plaintext to a STRICT upstream (%s)", chosen.port, chosen.why)
	case MismatchMTLSNoSidecar:
		res.Status = StatusFail
		res.Summary = fmt.Sprintf("port %d: client sends mTLS but %d of %d upstream pods have no sidecar to terminate it", chosen.port, len(in.Pods)-withSidecar, len(in.Pods))
	case MismatchDoubleTLS:
		res.Status = StatusFail
		res.Summary = fmt.Sprintf("port %d: DestinationRule originates TLS %s toward a meshed upstream (double TLS)", chosen.port, chosen.clientTLS)
	case MismatchMTLSDisabled:
		res.Status = StatusFail
		res.Summary = fmt.Sprintf("port %d: DestinationRule forces ISTIO_MUTUAL but the upstream's PeerAuthentication is DISABLE", chosen.port)
	}
	return res
}

// clientSends works out what the client's sidecar originates toward the
// upstream, and why.
func clientSends(sourceSidecar bool, drTLS string, autoMTLS bool, upstreamMode string, pods, labelledIstio int) (string, string) {
	switch {
	case !sourceSidecar:
		return "plaintext", "the client has no sidecar, so its app's plaintext leaves the pod as is"
	case drTLS == "ISTIO_MUTUAL":
		return "mtls", "DestinationRule tls mode ISTIO_MUTUAL"
	case drTLS == "SIMPLE" || drTLS == "MUTUAL":
		return "tls", "DestinationRule tls mode " + drTLS + " originates TLS with user certificates"
	case drTLS == "DISABLE":
		return "plaintext", "DestinationRule tls mode DISABLE"
	case !autoMTLS:
		return "plaintext", "no DestinationRule tls and enableAutoMtls is false"
	case upstreamMode == "DISABLE":
		// istiod drops the tlsMode label from endpoints whose policy is
		// DISABLE, so auto mTLS sends plaintext to them.
		return "plaintext", "auto mTLS: the upstream's PeerAuthentication is DISABLE"
	case pods > 0 && labelledIstio == pods:
		return "mtls", "auto mTLS: every upstream endpoint is labelled " + label.SecurityTlsMode.Name + "=istio"
	case labelledIstio == 0:
		return "plaintext", "auto mTLS: no upstream endpoint is labelled " + label.SecurityTlsMode.Name + "=istio"
	default:
		return "mtls", fmt.Sprintf("auto mTLS: mTLS to the %d of %d endpoints labelled %s=istio, plaintext to the rest", labelledIstio, pods, label.SecurityTlsMode.Name)
	}
}

func mtlsMismatch(v portVerdict, pods, withSidecar, labelledIstio int, autoMTLS bool) string {
	switch v.sends {
	case "mtls":
		// Auto mTLS follows the endpoint label, so a pod without a sidecar
		// receives mTLS only when it is (wrongly) labelled as meshed; an
		// explicit ISTIO_MUTUAL sends mTLS to every pod.
		if v.clientTLS == "ISTIO_MUTUAL" && withSidecar < pods {
			return MismatchMTLSNoSidecar
		}
		if v.clientTLS != "ISTIO_MUTUAL" && labelledIstio > withSidecar {
			return MismatchMTLSNoSidecar
		}
		if v.mode == "DISABLE" {
			return MismatchMTLSDisabled
		}
	case "plaintext":
		// STRICT is enforced by the upstream's sidecar; a pod without one
		// accepts plaintext whatever the policy says.
		if v.mode == "STRICT" && withSidecar > 0 {
			return MismatchPlaintextStrict
		}
	case "tls":
		if withSidecar > 0 {
			return MismatchDoubleTLS
		}
	}
	return MismatchNone
}

// effectivePeerAuthMode resolves PeerAuthentication precedence as istiod does:
// a workload policy (selector) in the workload's namespace, then the
// namespace-wide policy, then the mesh-wide policy in the root namespace; UNSET
// inherits from the level above, portLevelMtls (keyed by container port)
// overrides the workload policy for that port, and the default is PERMISSIVE.
// When several policies compete at one level the oldest wins.
func effectivePeerAuthMode(pas []*securityv1.PeerAuthentication, rootNS, ns string, workloadLabels map[string]string, containerPort uint32) (string, string) {
	var meshWide, namespace, workload *securityv1.PeerAuthentication
	for _, pa := range pas {
		sel := pa.Spec.GetSelector().GetMatchLabels()
		switch {
		case pa.Namespace == rootNS && len(sel) == 0:
			meshWide = older(meshWide, pa)
		case pa.Namespace == ns && len(sel) == 0:
			namespace = older(namespace, pa)
		case pa.Namespace == ns && mesh.LabelsMatch(sel, workloadLabels):
			workload = older(workload, pa)
		}
	}
	mode, source := "PERMISSIVE", "default"
	apply := func(pa *securityv1.PeerAuthentication, src string) {
		if pa == nil {
			return
		}
		if m := pa.Spec.GetMtls().GetMode(); m != securityv1beta1.PeerAuthentication_MutualTLS_UNSET {
			mode, source = m.String(), src+" "+pa.Namespace+"/"+pa.Name
		}
	}
	apply(meshWide, "mesh")
	apply(namespace, "namespace")
	apply(workload, "workload")
	if workload != nil {
		if pm, ok := workload.Spec.GetPortLevelMtls()[containerPort]; ok && pm.GetMode() != securityv1beta1.PeerAuthentication_MutualTLS_UNSET {
			mode, source = pm.GetMode().String(), fmt.Sprintf("port %d of %s/%s", containerPort, workload.Namespace, workload.Name)
		}
	}
	return mode, source
}

func older(cur, pa *securityv1.PeerAuthentication) *securityv1.PeerAuthentication {
	if cur == nil || pa.CreationTimestamp.Before(&cur.CreationTimestamp) {
		return pa
	}
	return cur
}

// trafficPolicyRule is the rule whose trafficPolicy Istio uses when it
// merges same-host rules: the oldest that sets one.
func trafficPolicyRule(applied []*networkingv1.DestinationRule) *networkingv1.DestinationRule {
	for _, dr := range applied {
		if dr.Spec.GetTrafficPolicy() != nil {
			return dr
		}
	}
	if len(applied) > 0 {
		return applied[0]
	}
	return nil
}

// drTLSMode is the tls mode a DestinationRule sets for a service port: a
// portLevelSettings entry for the port beats the rule-wide setting. A tls
// block without a mode is DISABLE (the enum's zero value), as Envoy sees it.
func drTLSMode(dr *networkingv1.DestinationRule, port int32) string {
	if dr == nil {
		return "none"
	}
	tp := dr.Spec.GetTrafficPolicy()
	var tls *networkingv1alpha3.ClientTLSSettings
	for _, pl := range tp.GetPortLevelSettings() {
		if pl.GetPort().GetNumber() == uint32(port) && pl.GetTls() != nil {
			tls = pl.GetTls()
		}
	}
	if tls == nil {
		tls = tp.GetTls()
	}
	if tls == nil {
		return "none"
	}
	return tls.GetMode().String()
}

// resolveContainerPort maps a service port's targetPort to the container port
// the upstream's sidecar listens for (PeerAuthentication portLevelMtls is
// keyed by it).
func resolveContainerPort(sp corev1.ServicePort, pods []corev1.Pod) int32 {
	switch {
	case sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal != 0:
		return sp.TargetPort.IntVal
	case sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal != "":
		for i := range pods {
			for _, c := range mesh.AppContainers(&pods[i]) {
				for _, cp := range c.Ports {
					if cp.Name == sp.TargetPort.StrVal {
						return cp.ContainerPort
					}
				}
			}
		}
	}
	return sp.Port
}

func podLabels(pods []corev1.Pod) map[string]string {
	if len(pods) == 0 {
		return nil
	}
	return pods[0].Labels
}

func mtlsCommands(t cluster.Target) []string {
	cmds := []string{
		"kubectl get peerauthentication -A",
		fmt.Sprintf("kubectl get destinationrule -n %s -o yaml", t.Namespace),
		fmt.Sprintf("istioctl x describe service %s -n %s", t.Service, t.Namespace),
	}
	if t.Source != nil {
		cmds = append(cmds, fmt.Sprintf("istioctl proxy-config cluster %s.%s --fqdn %s -o json", t.Source.Name, t.Source.Namespace, t.Host()))
	}
	return cmds
}

func controlPlane(c cluster.Cluster) string {
	if ns := c.Info().ControlPlaneNamespace; ns != "" {
		return ns
	}
	return cluster.DefaultControlPlane
}

func sourceNamespace(t cluster.Target) string {
	if t.Source != nil {
		return t.Source.Namespace
	}
	return ""
}

func uniqueNonEmpty(values ...string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range values {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}
