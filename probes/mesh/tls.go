package mesh

import (
	"fmt"

	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	securityv1beta1 "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
)

// Peer authentication modes as PeerAuthentication spells them.
const (
	ModeStrict     = "STRICT"
	ModePermissive = "PERMISSIVE"
	ModeDisable    = "DISABLE"
)

// What a caller's proxy puts on the wire toward an endpoint.
const (
	SendsMTLS      = "mtls"      // Istio mutual TLS
	SendsPlaintext = "plaintext" // nothing added
	SendsTLS       = "tls"       // TLS originated with the DestinationRule's own certificates (SIMPLE, MUTUAL)
	// SendsUnknown: what is sent depends on the endpoint's pod (its
	// tlsMode label, its ambient enrollment), which is not known.
	SendsUnknown = "unknown"
)

// TLS mismatches between what a caller sends and what an endpoint accepts.
const (
	MismatchNone            = "none"
	MismatchPlaintextStrict = "plaintext-to-strict"
	MismatchMTLSNoSidecar   = "mtls-to-no-sidecar"
	MismatchDoubleTLS       = "double-tls"
	MismatchMTLSDisabled    = "mtls-to-disabled"
	// MismatchUnknown: the endpoint's pod is not known (or the address has
	// none), so whether its side accepts what is sent cannot be judged.
	MismatchUnknown = "unknown"
)

// PeerMode is the mode an endpoint's sidecar enforces, and which policy
// decided it.
type PeerMode struct {
	Mode string
	From string // "mesh istio-system/default", "namespace shop/strict", "workload ...", "port 8080 of ...", "default"
}

// PeerAuthMode resolves PeerAuthentication precedence as istiod does for a
// workload in namespace ns with podLabels, on its port targetPort: a
// workload policy (selector) in the namespace, then the namespace-wide
// policy, then the mesh-wide one in the root namespace; UNSET inherits from
// the level above; the workload policy's portLevelMtls (keyed by the
// container port) overrides it for that port; the default is PERMISSIVE.
// When several policies compete at one level the oldest wins.
func (c *Config) PeerAuthMode(ns string, podLabels map[string]string, targetPort int32) PeerMode {
	var meshWide, namespace, workload *securityv1.PeerAuthentication
	for _, pa := range c.PeerAuthentications {
		sel := pa.Spec.GetSelector().GetMatchLabels()
		switch {
		case pa.Namespace == c.RootNamespace && len(sel) == 0:
			meshWide = older(meshWide, pa)
		case pa.Namespace == ns && len(sel) == 0:
			namespace = older(namespace, pa)
		case pa.Namespace == ns && LabelsMatch(sel, podLabels):
			workload = older(workload, pa)
		}
	}
	m := PeerMode{Mode: ModePermissive, From: "default"}
	apply := func(pa *securityv1.PeerAuthentication, level string) {
		if pa == nil {
			return
		}
		if mode := pa.Spec.GetMtls().GetMode(); mode != securityv1beta1.PeerAuthentication_MutualTLS_UNSET {
			m = PeerMode{Mode: mode.String(), From: level + " " + pa.Namespace + "/" + pa.Name}
		}
	}
	apply(meshWide, "mesh")
	apply(namespace, "namespace")
	apply(workload, "workload")
	if workload != nil && targetPort > 0 {
		if pm, ok := workload.Spec.GetPortLevelMtls()[uint32(targetPort)]; ok && pm.GetMode() != securityv1beta1.PeerAuthentication_MutualTLS_UNSET {
			m = PeerMode{Mode: pm.GetMode().String(), From: fmt.Sprintf("port %d of %s/%s", targetPort, workload.Namespace, workload.Name)}
		}
	}
	return m
}

// serviceMTLSMode is istiod's best-effort guess of a Service's mode, which
// decides whether auto mTLS adds TLS to the cluster at all
// (BestEffortInferServiceMTLSMode): the namespace-wide policy, else the
// mesh-wide one. Workload and port-level policies are not consulted.
func (c *Config) serviceMTLSMode(ns string) PeerMode {
	return c.PeerAuthMode(ns, nil, 0)
}

// passthroughMTLSMode is BestEffortInferServiceMTLSMode for a headless
// Service's port (passthrough resolution): DISABLE when the port has no
// endpoint, or one whose pod is not labelled
// security.istio.io/tlsMode (or is labelled "disabled", or there is no
// pod), whatever its readiness; else the namespace or mesh mode. An
// endpoint whose pod is not known leaves it unknown ("" with From saying
// why).
func (c *Config) passthroughMTLSMode(sd *ServiceData, port int32) PeerMode {
	eps := c.Endpoints(sd, port)
	n := 0
	for _, e := range eps {
		switch {
		case e.PodUnknown != "" && e.PodExpected:
			continue // istiod holds the endpoint back until it sees the pod
		case e.PodUnknown != "":
			return PeerMode{From: "the pod of endpoint " + e.Address + " is not known: " + e.PodUnknown}
		}
		n++
		if mode, ok := e.Labels[labelTLSMode]; !ok || mode == "disabled" {
			return PeerMode{Mode: ModeDisable, From: "headless Service: endpoint " + e.Address + " is not labelled " + labelTLSMode + "=istio"}
		}
	}
	if n == 0 {
		return PeerMode{Mode: ModeDisable, From: "headless Service without endpoints on the port"}
	}
	return c.serviceMTLSMode(sd.Service.Namespace)
}

// labelTLSMode is the injector's label auto mTLS follows.
const labelTLSMode = "security.istio.io/tlsMode"

func older(cur, pa *securityv1.PeerAuthentication) *securityv1.PeerAuthentication {
	if cur == nil || pa.CreationTimestamp.Before(&cur.CreationTimestamp) {
		return pa
	}
	return cur
}

// ClientTLS is what the caller's proxy is told to do about TLS for a
// cluster: a DestinationRule tls mode, or auto mTLS.
type ClientTLS struct {
	// Mode is the DestinationRule's tls mode (DISABLE, SIMPLE, MUTUAL,
	// ISTIO_MUTUAL), or "" when none is set and auto mTLS (if enabled)
	// decides per endpoint.
	Mode string
	// From names the rule and level that set it.
	From string
	Auto bool
	// ServiceMode is the namespace/mesh PeerAuthentication mode auto mTLS
	// consults (DISABLE turns it off for the whole cluster).
	ServiceMode PeerMode
	// Passthrough: the cluster is a headless Service's (ORIGINAL_DST):
	// Envoy connects to the address the app asked for, with no endpoint
	// metadata to match, so every endpoint gets the cluster's one
	// transport socket (auto mTLS's when ServiceMode allows it).
	Passthrough bool
	// DRMode is the tls mode istiod's EDS takes from the DestinationRule
	// for the cluster's subset and port (mtls_checker.go
	// tlsModeForDestinationRule): the subset's policy for the port, else
	// the rule's; at each level the port-level tls, else the top-level
	// one. "" when none sets a tls mode. It decides which endpoints keep
	// their tlsMode=istio metadata (EDSTLSMode), and can differ from Mode:
	// a port-level entry without tls leaves the cluster's Mode empty (auto
	// mTLS) while EDS still reads the top-level tls.
	DRMode string
}

// drTLSMode is ClientTLS.DRMode for rule, subset and port.
func drTLSMode(rule *AppliedRule, subset string, port int32) string {
	if rule == nil {
		return ""
	}
	forPort := func(tp *networkingv1alpha3.TrafficPolicy) string {
		mode := ""
		if tls := tp.GetTls(); tls != nil {
			mode = tls.GetMode().String()
		}
		for _, pl := range tp.GetPortLevelSettings() {
			if pl.GetPort().GetNumber() == uint32(port) && pl.GetTls() != nil {
				return pl.GetTls().GetMode().String()
			}
		}
		return mode
	}
	if subset == "" {
		return forPort(rule.TrafficPolicy)
	}
	s := rule.Subset(subset)
	if s == nil {
		return ""
	}
	if mode := forPort(s.GetTrafficPolicy()); mode != "" {
		return mode
	}
	return forPort(rule.TrafficPolicy)
}

// EDSTLSMode is the tlsMode istiod's EDS writes into the endpoint's
// metadata for the cluster ("istio", or "" for none), which auto mTLS's
// transport socket match reads (checkMtlsEnabled and
// AppendLbEndpointMetadata): the pod's own security.istio.io/tlsMode
// label, kept when the DestinationRule's tls mode for the subset and port
// is ISTIO_MUTUAL, stripped when it is any other mode, and, when it sets
// none, kept unless the endpoint's own PeerAuthentication (workload and
// port level) is DISABLE. A DestinationRule never adds it to a pod that
// is not labelled.
func (ct ClientTLS) EDSTLSMode(e Endpoint, accepts PeerMode) string {
	switch {
	case !e.TLSModeIstio:
		return ""
	case ct.DRMode != "":
		if ct.DRMode == "ISTIO_MUTUAL" {
			return "istio"
		}
		return ""
	case accepts.Mode == ModeDisable:
		return ""
	}
	return "istio"
}

// clientTLS reads the tls settings of a merged traffic policy; drMode is
// the mode EDS reads (see ClientTLS.DRMode).
func clientTLS(tp *networkingv1alpha3.TrafficPolicy, from string, auto bool, service PeerMode, drMode string) ClientTLS {
	ct := ClientTLS{Auto: auto, ServiceMode: service, DRMode: drMode}
	if tls := tp.GetTls(); tls != nil {
		// A tls block without a mode is DISABLE, the enum's zero.
		ct.Mode, ct.From = tls.GetMode().String(), from
	}
	return ct
}

// Sends is what the caller's proxy originates toward endpoint e, which
// accepts accepts, and why. Auto mTLS sends mTLS only to endpoints whose
// EDS metadata keeps tlsMode=istio (EDSTLSMode): the pod is labelled so,
// and the DestinationRule's tls for the subset and port is ISTIO_MUTUAL
// or, when it sets none, the endpoint's own PeerAuthentication (workload
// and port level) is not DISABLE.
func (ct ClientTLS) Sends(e Endpoint, accepts PeerMode) (string, string) {
	if ct.Passthrough {
		return ct.passthroughSends()
	}
	if e.PodUnknown != "" {
		return SendsUnknown, "depends on the endpoint's pod (its tlsMode label, ambient enrollment), which is not known: " + e.PodUnknown
	}
	if e.Ambient && e.HBONE {
		// A proxy that sends HBONE tunnels to a pod that accepts it
		// whatever the rule says (cluster_tls.go): ISTIO_MUTUAL is replaced
		// by HBONE, SIMPLE/MUTUAL ride inside it to the app.
		if ct.Mode == "SIMPLE" || ct.Mode == "MUTUAL" {
			return SendsTLS, "DestinationRule tls mode " + ct.Mode + " (" + ct.From + "), tunnelled in HBONE to the pod's ztunnel"
		}
		return SendsMTLS, "HBONE (mTLS) to the pod's ztunnel: the endpoint is in ambient"
	}
	switch ct.Mode {
	case "ISTIO_MUTUAL":
		return SendsMTLS, "DestinationRule tls mode ISTIO_MUTUAL (" + ct.From + ")"
	case "SIMPLE", "MUTUAL":
		return SendsTLS, "DestinationRule tls mode " + ct.Mode + " originates TLS with its own certificates (" + ct.From + ")"
	case "DISABLE":
		return SendsPlaintext, "DestinationRule tls mode DISABLE (" + ct.From + ")"
	}
	switch {
	case !ct.Auto:
		return SendsPlaintext, "no DestinationRule tls and enableAutoMtls is false"
	case ct.ServiceMode.Mode == ModeDisable:
		return SendsPlaintext, "auto mTLS is off for the Service: its " + ct.ServiceMode.From + " PeerAuthentication is DISABLE"
	case !e.TLSModeIstio:
		return SendsPlaintext, "auto mTLS: the endpoint's pod is not labelled security.istio.io/tlsMode=istio"
	case ct.DRMode == "ISTIO_MUTUAL":
		return SendsMTLS, "auto mTLS: the endpoint's pod is labelled security.istio.io/tlsMode=istio, and the DestinationRule's tls ISTIO_MUTUAL for the port keeps it in EDS"
	case ct.DRMode != "":
		return SendsPlaintext, "auto mTLS, but the DestinationRule's tls mode " + ct.DRMode + " for the subset and port (a port-level entry without tls gave the cluster none) makes istiod strip the endpoint's tlsMode from EDS"
	case accepts.Mode == ModeDisable:
		return SendsPlaintext, "auto mTLS: the endpoint's own PeerAuthentication is DISABLE (" + accepts.From + "), so istiod strips its tlsMode"
	}
	return SendsMTLS, "auto mTLS: the endpoint's pod is labelled security.istio.io/tlsMode=istio"
}

// passthroughSends is what a headless Service's ORIGINAL_DST cluster
// sends every endpoint: the DestinationRule's mode, else auto mTLS's
// cluster-wide choice (no per-endpoint match, no HBONE: Envoy has no
// metadata for an address it did not get from EDS).
func (ct ClientTLS) passthroughSends() (string, string) {
	switch ct.Mode {
	case "ISTIO_MUTUAL":
		return SendsMTLS, "DestinationRule tls mode ISTIO_MUTUAL (" + ct.From + ")"
	case "SIMPLE", "MUTUAL":
		return SendsTLS, "DestinationRule tls mode " + ct.Mode + " originates TLS with its own certificates (" + ct.From + ")"
	case "DISABLE":
		return SendsPlaintext, "DestinationRule tls mode DISABLE (" + ct.From + ")"
	}
	switch {
	case !ct.Auto:
		return SendsPlaintext, "no DestinationRule tls and enableAutoMtls is false"
	case ct.ServiceMode.Mode == "":
		return SendsUnknown, "headless Service: auto mTLS depends on every endpoint's pod: " + ct.ServiceMode.From
	case ct.ServiceMode.Mode == ModeDisable:
		return SendsPlaintext, "auto mTLS is off for the headless Service's cluster (" + ct.ServiceMode.From + "): one transport socket for every address, plaintext"
	}
	return SendsMTLS, "auto mTLS: every endpoint of the headless Service's port is labelled tlsMode=istio, so its ORIGINAL_DST cluster sends mTLS to any address"
}

// TLSMismatch judges what is sent against what the endpoint accepts. An
// endpoint without a known pod is not judged: whether a sidecar (or
// anything) there terminates mTLS or enforces STRICT is not known.
func TLSMismatch(sends string, e Endpoint, accepts PeerMode) string {
	if !e.PodKnown() || sends == SendsUnknown {
		return MismatchUnknown
	}
	if e.Ambient {
		// ztunnel terminates HBONE whatever the policy says, passes TLS
		// inside it to the app, and refuses plaintext only under STRICT.
		if sends == SendsPlaintext && accepts.Mode == ModeStrict {
			return MismatchPlaintextStrict
		}
		return MismatchNone
	}
	meshed := e.Sidecar != SidecarNone
	switch sends {
	case SendsMTLS:
		switch {
		case !meshed:
			return MismatchMTLSNoSidecar
		case accepts.Mode == ModeDisable:
			return MismatchMTLSDisabled
		}
	case SendsPlaintext:
		// STRICT is enforced by the endpoint's sidecar; a pod without one
		// takes plaintext whatever the policy says.
		if meshed && accepts.Mode == ModeStrict {
			return MismatchPlaintextStrict
		}
	case SendsTLS:
		if meshed {
			return MismatchDoubleTLS
		}
	}
	return MismatchNone
}
