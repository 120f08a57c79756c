package mesh

import (
	"fmt"
	"strconv"
	"strings"

	"istio.io/api/annotation"
	"istio.io/api/label"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Ambient mode as Istio decides it: which pods ztunnel carries, which
// waypoint a Service is bound to, and who goes through that waypoint.
// Sources: istio-cni's enablement selectors (cni/pkg/util), istiod's
// ambient index (pilot/pkg/serviceregistry/ambient: waypoints.go,
// services.go, workloads.go) and its endpoint builder for sidecars and
// gateways (pilot/pkg/xds/endpoints).

// Data planes a pod's traffic can take.
const (
	DataPlaneSidecar  = "sidecar"  // an istio-proxy in the pod
	DataPlaneAmbient  = "ambient"  // ztunnel on its node (enrolled, or meant to be)
	DataPlaneWaypoint = "waypoint" // the pod is a waypoint: ambient mode's Envoy, no sidecar
	DataPlaneNone     = "none"     // outside the mesh
)

// Values of the ambient labels and annotations istio.io/api has no
// constant for (pkg/config/constants in Istio).
const (
	DataplaneModeAmbient = "ambient"
	DataplaneModeNone    = "none"
	// RedirectionEnabled is ambient.istio.io/redirection once the CNI
	// node agent has captured the pod and handed it to ztunnel;
	// RedirectionPending when capture is set up but ztunnel does not
	// have it yet.
	RedirectionEnabled = "enabled"
	RedirectionPending = "pending"

	WaypointForService  = "service"
	WaypointForWorkload = "workload"
	WaypointForAll      = "all"
	WaypointForNone     = "none"

	// WaypointGatewayClass is the GatewayClass istiod deploys waypoints for.
	WaypointGatewayClass = "istio-waypoint"
	// WaypointManagedValue is gateway.istio.io/managed on what istiod
	// deploys for a waypoint (its Deployment, pods and Service).
	WaypointManagedValue = "istio.io-mesh-controller"
	// ZtunnelApp is the app label of ztunnel's pods in the system namespace.
	ZtunnelApp = "ztunnel"
	// HBONEPort is where ztunnel and waypoints accept HBONE (mTLS tunnels).
	HBONEPort = 15008
	// TunnelLabel says a pod accepts HBONE itself (the injector sets it on
	// sidecars): networking.istio.io/tunnel=http.
	TunnelLabel = "networking.istio.io/tunnel"
	// StaticStrictPolicy is the policy istiod gives ztunnel for STRICT
	// PeerAuthentication: it denies connections without a peer identity.
	StaticStrictPolicy = "istio_converted_static_strict"
)

// PodDataPlane is how a pod's traffic meets the mesh.
type PodDataPlane struct {
	// Mode is DataPlaneSidecar, DataPlaneAmbient, DataPlaneWaypoint or
	// DataPlaneNone. Ambient covers pods ztunnel carries, pods waiting
	// for a ztunnel to carry them (Pending) and pods the labels put in
	// ambient that the CNI has not enrolled (NotEnrolled).
	Mode    string
	Sidecar SidecarKind
	// AmbientWanted: istio-cni's default enablement selectors match the
	// pod: it is labelled istio.io/dataplane-mode=ambient, or its
	// namespace is and the pod does not say none; and it has no sidecar
	// and does not use the host network.
	AmbientWanted bool
	// WantedBy names the label that put the pod in ambient.
	WantedBy string
	// OptedOut: the namespace is ambient, the pod says
	// istio.io/dataplane-mode=none.
	OptedOut bool
	// Redirection is the CNI's ambient.istio.io/redirection annotation:
	// RedirectionEnabled, RedirectionPending or "".
	Redirection string
	// NamespaceUnknown: the namespace could not be read, so whether its
	// label puts the pod in ambient is unknown.
	NamespaceUnknown bool
	// HostNetwork pods are never captured.
	HostNetwork bool
}

// Enrolled reports a pod ztunnel carries: the CNI says so.
func (d PodDataPlane) Enrolled() bool { return d.Redirection == RedirectionEnabled }

// Pending reports a pod the CNI has captured (its traffic is redirected)
// that no ztunnel proxies yet: ambient.istio.io/redirection=pending. Istio
// says such a pod "will not egress/ingress traffic until an active
// ztunnel begins proxying it": its traffic is held, not sent around
// ztunnel. The cause is ztunnel on its node, not running or not ready
// (yet), not the CNI.
func (d PodDataPlane) Pending() bool { return d.Redirection == RedirectionPending }

// NotEnrolled reports a pod the labels put in ambient that the CNI has
// not captured (no redirection annotation, or one Istio does not write):
// its traffic leaves and arrives without ztunnel, in plaintext and outside
// every ztunnel policy. A Pending pod is captured, so not this.
func (d PodDataPlane) NotEnrolled() bool { return d.AmbientWanted && !d.Enrolled() && !d.Pending() }

// String says it as a triage shows it: "ambient (enrolled)",
// "ambient, not enrolled (namespace label ...)", "sidecar (native)".
func (d PodDataPlane) String() string {
	switch d.Mode {
	case DataPlaneSidecar:
		return "sidecar (" + string(d.Sidecar) + ")"
	case DataPlaneWaypoint:
		return "waypoint (ambient mode's Envoy, not a sidecar)"
	case DataPlaneAmbient:
		if d.Enrolled() {
			return "ambient (enrolled)"
		}
		if d.Pending() {
			return "ambient, PENDING (" + d.WantedBy + "; " + annotation.AmbientRedirection.Name + "=pending: its traffic is held until ztunnel on its node proxies it)"
		}
		state := "no " + annotation.AmbientRedirection.Name + " annotation"
		if d.Redirection != "" {
			state = annotation.AmbientRedirection.Name + "=" + d.Redirection
		}
		return "ambient, NOT enrolled (" + d.WantedBy + "; " + state + ")"
	}
	switch {
	case d.OptedOut:
		return "none (opted out: pod label " + label.IoIstioDataplaneMode.Name + "=none)"
	case d.HostNetwork:
		return "none (host network)"
	case d.NamespaceUnknown:
		return "none by its own labels (namespace unreadable: its " + label.IoIstioDataplaneMode.Name + " label unknown)"
	}
	return "none"
}

// DataPlaneOf classifies pod in namespace ns (nil when it could not be
// read). A waypoint's pod is a waypoint: its istio-proxy is the
// waypoint's Envoy, not a sidecar in front of an app. Any other pod with
// an istio-proxy is a sidecar pod whatever the labels say: istio-cni
// never enrolls one.
func DataPlaneOf(pod *corev1.Pod, ns *corev1.Namespace) PodDataPlane {
	d := PodDataPlane{Sidecar: PodSidecar(pod), Redirection: pod.Annotations[annotation.AmbientRedirection.Name],
		HostNetwork: pod.Spec.HostNetwork, NamespaceUnknown: ns == nil}
	if IsWaypointPod(pod) {
		d.Mode, d.Sidecar = DataPlaneWaypoint, SidecarNone
		return d
	}
	if d.Sidecar != SidecarNone || pod.Annotations[annotation.SidecarStatus.Name] != "" {
		d.Mode = DataPlaneSidecar
		if d.Sidecar == SidecarNone {
			// Injected, container removed: no proxy, no ztunnel.
			d.Mode = DataPlaneNone
		}
		return d
	}
	podMode, podSays := pod.Labels[label.IoIstioDataplaneMode.Name]
	var nsMode string
	if ns != nil {
		nsMode = ns.Labels[label.IoIstioDataplaneMode.Name]
	}
	switch {
	case d.HostNetwork:
	case podMode == DataplaneModeAmbient:
		d.AmbientWanted, d.WantedBy = true, "pod label "+label.IoIstioDataplaneMode.Name+"=ambient"
	case nsMode == DataplaneModeAmbient && podSays && podMode == DataplaneModeNone:
		d.OptedOut = true
	case nsMode == DataplaneModeAmbient:
		d.AmbientWanted, d.WantedBy = true, "namespace "+ns.Name+" label "+label.IoIstioDataplaneMode.Name+"=ambient"
	}
	d.Mode = DataPlaneNone
	if d.AmbientWanted || d.Enrolled() || d.Pending() {
		d.Mode = DataPlaneAmbient
		if d.WantedBy == "" {
			d.WantedBy = "the CNI's annotation"
		}
	}
	return d
}

// AcceptsHBONE reports a pod ztunnel and sidecars reach through an HBONE
// tunnel, as istiod's setTunnelProtocol decides: enrolled in ambient, or
// labelled networking.istio.io/tunnel=http (the injector labels sidecars
// so). Others get plaintext TCP from ztunnel.
func AcceptsHBONE(pod *corev1.Pod) bool {
	return pod.Annotations[annotation.AmbientRedirection.Name] == RedirectionEnabled || pod.Labels[TunnelLabel] == "http"
}

// IsZtunnelPod reports one of ztunnel's pods in the system namespace.
func IsZtunnelPod(pod *corev1.Pod, systemNamespace string) bool {
	return pod.Namespace == systemNamespace && pod.Labels["app"] == ZtunnelApp
}

// IsWaypointPod reports a waypoint's pod: istiod deployed it for a
// waypoint (gateway.istio.io/managed=istio.io-mesh-controller), or its
// istio-proxy runs `pilot-agent proxy waypoint`. Its istio-proxy
// container makes PodSidecar call it a sidecar; it is none, and never a
// caller of its own: it carries ambient callers' requests.
func IsWaypointPod(pod *corev1.Pod) bool {
	return pod.Labels[label.GatewayManaged.Name] == WaypointManagedValue || ProxyType(pod) == ProxyTypeWaypoint
}

// WaypointPodSelector selects the pods of waypoint name in its namespace.
func WaypointPodSelector(name string) map[string]string {
	return map[string]string{label.IoK8sNetworkingGatewayGatewayName.Name: name}
}

// SPIFFEPrincipal is the identity a meshed pod presents, as
// AuthorizationPolicy principals spell it: TRUST_DOMAIN/ns/NS/sa/SA.
func SPIFFEPrincipal(trustDomain, namespace, serviceAccount string) string {
	if trustDomain == "" {
		trustDomain = "cluster.local"
	}
	if serviceAccount == "" {
		serviceAccount = "default"
	}
	return trustDomain + "/ns/" + namespace + "/sa/" + serviceAccount
}

// WaypointRef names a waypoint: a Gateway in Namespace.
type WaypointRef struct {
	Name, Namespace string
}

func (r WaypointRef) String() string { return r.Namespace + "/" + r.Name }

// WaypointUse is what istio.io/use-waypoint says for one object (a Service
// for service traffic, a pod for workload traffic), read as istiod's
// GetUseWaypoint and fetchWaypointForTarget read it: the object's own
// label wins, and "none" there opts it out of its namespace's waypoint;
// else the namespace's label. istio.io/use-waypoint-namespace on the same
// object names the waypoint's namespace (default: the object's).
type WaypointUse struct {
	Ref   WaypointRef
	Named bool
	// From is where the name came from: "service label", "pod label",
	// "namespace label".
	From string
	// OptedOut: the object's label is "none".
	OptedOut bool
	// NamespaceUnknown: the object names none and its namespace could not
	// be read, so a namespace-wide waypoint is unknown.
	NamespaceUnknown bool
}

// UseWaypoint reads what istio.io/use-waypoint says for obj, a kind
// ("service", "pod") in namespace ns (nil when unreadable).
func UseWaypoint(obj metav1.ObjectMeta, kind string, ns *corev1.Namespace) WaypointUse {
	if ref, none, ok := useWaypointLabel(obj.Labels, obj.Namespace); ok {
		return WaypointUse{Ref: ref, Named: !none, OptedOut: none, From: kind + " label"}
	}
	if ns == nil {
		return WaypointUse{NamespaceUnknown: true}
	}
	// The namespace's "none" is no waypoint, like no label.
	if ref, none, ok := useWaypointLabel(ns.Labels, obj.Namespace); ok && !none {
		return WaypointUse{Ref: ref, Named: true, From: "namespace label"}
	}
	return WaypointUse{}
}

func useWaypointLabel(labels map[string]string, defaultNamespace string) (ref WaypointRef, none, ok bool) {
	v, ok := labels[label.IoIstioUseWaypoint.Name]
	if !ok {
		return WaypointRef{}, false, false
	}
	if v == "none" {
		return WaypointRef{}, true, true
	}
	ns := defaultNamespace
	if override, f := labels[label.IoIstioUseWaypointNamespace.Name]; f {
		ns = override
	}
	return WaypointRef{Name: v, Namespace: ns}, false, true
}

// Waypoint is a Gateway read as istiod reads a waypoint.
type Waypoint struct {
	Ref   WaypointRef
	Class string
	// TrafficType is istio.io/waypoint-for: the Gateway's label, else
	// "service", Istio's default. A GatewayClass of its own can set
	// another default that is not read here: TrafficTypeKnown is false
	// then.
	TrafficType      string
	TrafficTypeFrom  string
	TrafficTypeKnown bool
	// Ready: istiod binds nothing to a waypoint until its Gateway has a
	// status address, which the deployment controller sets once a
	// waypoint pod is ready.
	Ready     bool
	Addresses []string
	// Programmed is the Gateway's Programmed condition ("True",
	// "False: REASON: MESSAGE"), "" when it has none.
	Programmed string
	// IsWaypoint: the istio-waypoint class, or a Gateway with an HBONE
	// listener on 15008 (a class of one's own). istiod does not look: it
	// makes a waypoint of every Gateway with a status address
	// (gatewayToWaypointTransform), so a Service can be bound to a
	// Gateway that is none, and ztunnel then tunnels to an address where
	// nothing takes HBONE.
	IsWaypoint bool
	// allowed is the HBONE listener's allowedRoutes namespaces: who may
	// bind to it (Same without such a listener, as istiod has it).
	allowedFrom     gatewayv1.FromNamespaces
	allowedSelector *metav1.LabelSelector
}

// ProxyProtocolListener is the listener protocol by which a waypoint of
// another implementation (kgateway's kgateway-waypoint class) takes
// tunnelled traffic instead of an HBONE listener.
const ProxyProtocolListener = "istio.io/PROXY"

// WaypointOf reads gw as istiod reads a Gateway that a use-waypoint label
// names, whatever its class.
func WaypointOf(gw *gatewayv1.Gateway) Waypoint {
	w := Waypoint{Ref: WaypointRef{Name: gw.Name, Namespace: gw.Namespace}, Class: string(gw.Spec.GatewayClassName)}
	w.IsWaypoint = w.Class == WaypointGatewayClass
	w.allowedFrom = gatewayv1.NamespacesFromSame
	hbone := -1
	for i, l := range gw.Spec.Listeners {
		if l.Protocol == "HBONE" && l.Port == HBONEPort {
			w.IsWaypoint = true
			hbone = i
			break
		}
		// A waypoint of another implementation (kgateway-waypoint) takes
		// the tunnelled traffic on a PROXY listener of its own.
		if l.Protocol == ProxyProtocolListener {
			w.IsWaypoint = true
		}
	}
	if hbone >= 0 {
		if ar := gw.Spec.Listeners[hbone].AllowedRoutes; ar != nil && ar.Namespaces != nil && ar.Namespaces.From != nil {
			w.allowedFrom = *ar.Namespaces.From
			w.allowedSelector = ar.Namespaces.Selector
		}
	}
	switch tt, ok := gw.Labels[label.IoIstioWaypointFor.Name]; {
	case ok:
		w.TrafficType, w.TrafficTypeFrom, w.TrafficTypeKnown = tt, "Gateway label "+label.IoIstioWaypointFor.Name, true
	case w.Class == WaypointGatewayClass:
		w.TrafficType, w.TrafficTypeFrom, w.TrafficTypeKnown = WaypointForService, "Istio's default", true
	default:
		w.TrafficType, w.TrafficTypeFrom = WaypointForService, "Istio's default, unless GatewayClass "+w.Class+" sets "+label.IoIstioWaypointFor.Name
	}
	for _, a := range gw.Status.Addresses {
		w.Addresses = append(w.Addresses, a.Value)
	}
	w.Ready = len(w.Addresses) > 0
	for _, c := range gw.Status.Conditions {
		if c.Type == string(gatewayv1.GatewayConditionProgrammed) {
			w.Programmed = string(c.Status)
			if c.Status != metav1.ConditionTrue {
				w.Programmed = strings.TrimRight(fmt.Sprintf("%s: %s: %s", c.Status, c.Reason, c.Message), ": ")
			}
		}
	}
	return w
}

// Serves reports whether the waypoint takes traffic addressed to a
// "service" or a "workload" (waypoint-for service, workload, all, none).
func (w Waypoint) Serves(traffic string) bool {
	return w.TrafficType == traffic || w.TrafficType == WaypointForAll
}

// allowsFrom reports whether a Service in namespace ns may bind to the
// waypoint (its HBONE listener's allowedRoutes; Same by default); ok is
// false when a selector needs namespace labels that are unknown.
func (w Waypoint) allowsFrom(ns string, nsObj *corev1.Namespace) (allowed, ok bool) {
	switch w.allowedFrom {
	case gatewayv1.NamespacesFromAll:
		return true, true
	case gatewayv1.NamespacesFromSelector:
		if nsObj == nil {
			return false, false
		}
		sel, err := metav1.LabelSelectorAsSelector(w.allowedSelector)
		if err != nil {
			return false, true
		}
		return sel.Matches(k8slabels.Set(nsObj.Labels)), true
	}
	return w.Ref.Namespace == ns, true
}

// Waypoint binding states of a Service.
const (
	WaypointNone       = "none"         // no use-waypoint applies (or the Service is a waypoint)
	WaypointBound      = "bound"        // istiod binds the Service to the waypoint
	WaypointOptedOut   = "opted-out"    // the Service says use-waypoint=none
	WaypointMissing    = "missing"      // the named Gateway does not exist
	WaypointNotReady   = "not-ready"    // it exists but has no status address (no ready pod)
	WaypointNotService = "not-service"  // its waypoint-for excludes service traffic
	WaypointDenied     = "denied"       // its listener's allowedRoutes refuse the Service's namespace
	WaypointNotAGW     = "not-waypoint" // the Gateway is no waypoint: with a status address bound anyway (connections fail), else nothing bound
	WaypointUnknown    = "unknown"      // what decides it could not be read
)

// WaypointBinding is istiod's verdict on a Service's waypoint.
type WaypointBinding struct {
	Use      WaypointUse
	State    string
	Waypoint *Waypoint
	Why      string
}

// BindServiceWaypoint decides, as istiod's fetchWaypointForService does,
// whether svc (in namespace ns, nil when unreadable) is bound to a
// waypoint. gateways are the Gateways of the named waypoint's namespace;
// gatewaysKnown is false when they could not be read. A Service istiod
// deployed for a waypoint has none itself.
func BindServiceWaypoint(svc *corev1.Service, ns *corev1.Namespace, gateways []*gatewayv1.Gateway, gatewaysKnown bool) WaypointBinding {
	if svc.Labels[label.GatewayManaged.Name] == WaypointManagedValue {
		return WaypointBinding{State: WaypointNone, Why: "the Service is a waypoint's own"}
	}
	use := UseWaypoint(svc.ObjectMeta, "service", ns)
	b := WaypointBinding{Use: use}
	switch {
	case use.OptedOut:
		b.State, b.Why = WaypointOptedOut, "the Service is labelled "+label.IoIstioUseWaypoint.Name+"=none"
		return b
	case use.NamespaceUnknown:
		b.State, b.Why = WaypointUnknown, "the Service names no waypoint and its namespace could not be read"
		return b
	case !use.Named:
		b.State, b.Why = WaypointNone, "no "+label.IoIstioUseWaypoint.Name+" label on the Service or its namespace"
		return b
	case !gatewaysKnown:
		b.State, b.Why = WaypointUnknown, fmt.Sprintf("the %s names waypoint %s, whose Gateway could not be read", use.From, use.Ref)
		return b
	}
	var gw *gatewayv1.Gateway
	for _, g := range gateways {
		if g.Name == use.Ref.Name && g.Namespace == use.Ref.Namespace {
			gw = g
		}
	}
	if gw == nil {
		b.State, b.Why = WaypointMissing, fmt.Sprintf("the %s names waypoint %s and no such Gateway exists: istiod binds nothing (WaypointIsNotReady) and the traffic goes straight to the pods", use.From, use.Ref)
		return b
	}
	w := WaypointOf(gw)
	b.Waypoint = &w
	// istiod makes a waypoint of any Gateway with a status address, then
	// checks its allowedRoutes and its traffic type.
	switch allowed, ok := w.allowsFrom(svc.Namespace, ns); {
	case !w.IsWaypoint && !w.Ready:
		b.State, b.Why = WaypointNotAGW, fmt.Sprintf("Gateway %s (class %s) is not a waypoint (no HBONE listener on %d) and has no status address: istiod binds nothing (WaypointIsNotReady) and the traffic goes straight to the pods; once it has an address, istiod binds the Service to it and connections to the Service fail", use.Ref, w.Class, HBONEPort)
	case !w.Ready:
		b.State, b.Why = WaypointNotReady, fmt.Sprintf("waypoint %s has no status address (no ready pod; Programmed %s): istiod binds nothing until it has, and the traffic goes straight to the pods", use.Ref, dashIfEmpty(w.Programmed))
	case !ok:
		b.State, b.Why = WaypointUnknown, fmt.Sprintf("waypoint %s admits namespaces by selector and namespace %s could not be read", use.Ref, svc.Namespace)
	case !allowed && !w.IsWaypoint:
		b.State, b.Why = WaypointDenied, fmt.Sprintf("Gateway %s (class %s) is not a waypoint and has no HBONE listener, so istiod admits only its own namespace, not %s: istiod reports AttachmentDenied and the traffic goes straight to the pods", use.Ref, w.Class, svc.Namespace)
	case !allowed:
		b.State, b.Why = WaypointDenied, fmt.Sprintf("waypoint %s's HBONE listener does not admit namespace %s (allowedRoutes from %s): istiod reports AttachmentDenied", use.Ref, svc.Namespace, w.allowedFrom)
	case !w.Serves(WaypointForService) && w.TrafficTypeKnown:
		b.State, b.Why = WaypointNotService, fmt.Sprintf("waypoint %s is for %q traffic (%s), not service traffic: istiod reports UnsupportedTrafficType and the traffic goes straight to the pods", use.Ref, w.TrafficType, w.TrafficTypeFrom)
	case !w.IsWaypoint:
		b.State, b.Why = WaypointNotAGW, fmt.Sprintf("Gateway %s (class %s) is not a waypoint (no HBONE listener on %d), yet it has a status address (%s): istiod binds the Service to it as to any Gateway with one (unless its GatewayClass sets %s without service), and ztunnel tunnels the Service's traffic to it on %d, where no waypoint takes it: connections to the Service fail", use.Ref, w.Class, HBONEPort, strings.Join(w.Addresses, ", "), label.IoIstioWaypointFor.Name, HBONEPort)
	case !w.TrafficTypeKnown:
		b.State, b.Why = WaypointUnknown, fmt.Sprintf("waypoint %s has class %s, whose %s default is not read", use.Ref, w.Class, label.IoIstioWaypointFor.Name)
	default:
		b.State, b.Why = WaypointBound, fmt.Sprintf("bound to waypoint %s (%s, for %s traffic)", use.Ref, use.From, w.TrafficType)
	}
	return b
}

// GatewaySandwich corrects a binding to a Gateway that is no waypoint
// when that Gateway's pods are enrolled in ambient (the "gateway
// sandwich"): the ztunnel of their node terminates the HBONE sent to it
// and hands the traffic to the gateway, so the binding works.
func GatewaySandwich(b WaypointBinding, gatewayPods []corev1.Pod) WaypointBinding {
	if b.State != WaypointNotAGW || b.Waypoint == nil || !b.Waypoint.Ready {
		return b
	}
	for i := range gatewayPods {
		if DataPlaneOf(&gatewayPods[i], nil).Enrolled() {
			b.State = WaypointBound
			b.Why = fmt.Sprintf("bound to Gateway %s (class %s), no waypoint class but its pods are enrolled in ambient: their ztunnel terminates the HBONE sent to it (a gateway sandwich)", b.Use.Ref, b.Waypoint.Class)
			return b
		}
	}
	return b
}

// WaypointBoundCondition is istiod's own verdict on a Service's waypoint,
// the istio.io/WaypointBound condition it writes to the Service's status
// (with AMBIENT_ENABLE_STATUS, the default): "True", "False: REASON", or ""
// when the Service carries none.
func WaypointBoundCondition(svc *corev1.Service) string {
	for _, c := range svc.Status.Conditions {
		if c.Type == "istio.io/WaypointBound" {
			if c.Status == metav1.ConditionTrue {
				return string(c.Status)
			}
			return strings.TrimRight(string(c.Status)+": "+c.Reason, ": ")
		}
	}
	return ""
}

// IngressUsesWaypoint reports istio.io/ingress-use-waypoint=true on the
// Service, else its namespace: only then does an ingress gateway send the
// Service's traffic through its waypoint.
func IngressUsesWaypoint(svc *corev1.Service, ns *corev1.Namespace) bool {
	v, ok := svc.Labels[label.IoIstioIngressUseWaypoint.Name]
	if !ok && ns != nil {
		v, ok = ns.Labels[label.IoIstioIngressUseWaypoint.Name]
	}
	b, err := strconv.ParseBool(v)
	return ok && err == nil && b
}

// Kinds of caller, for TraversesServiceWaypoint.
const (
	CallerAmbient = "ambient" // enrolled: ztunnel carries its traffic
	CallerSidecar = "sidecar"
	CallerGateway = "gateway" // an ingress gateway (a router)
	CallerNone    = "none"    // outside the mesh, or not enrolled
)

// TraversesServiceWaypoint says whether a caller's requests to a Service
// bound to a waypoint go through that waypoint, and why. ztunnel sends
// service-addressed traffic to the Service's waypoint. A sidecar does not:
// istiod gives it the Service's pods and it treats the call as workload
// traffic (endpoint_builder: "we consider this to workload traffic"). An
// ingress gateway does only with istio.io/ingress-use-waypoint. A pod
// outside the mesh reaches a pod's ztunnel as plaintext, which ztunnel
// hands to the pod.
func TraversesServiceWaypoint(callerKind string, svc *corev1.Service, ns *corev1.Namespace) (bool, string) {
	switch callerKind {
	case CallerAmbient:
		return true, "ztunnel sends service traffic to the Service's waypoint"
	case CallerSidecar:
		return false, "a sidecar sends to the Service's pods directly (HBONE to their ztunnel): istiod does not route sidecars through a service waypoint, so its L7 policy and routes do not apply"
	case CallerGateway:
		if IngressUsesWaypoint(svc, ns) {
			return true, "the Service (or its namespace) is labelled " + label.IoIstioIngressUseWaypoint.Name + "=true"
		}
		return false, "an ingress gateway sends to the pods directly unless the Service or its namespace is labelled " + label.IoIstioIngressUseWaypoint.Name + "=true"
	}
	return false, "a caller outside the mesh reaches the pods' ztunnel in plaintext, which hands it to the pod without the waypoint"
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Ztunnel names the route an enrolled ambient caller's connections take.
const Ztunnel = "ztunnel"

// ztunnelView is what an enrolled ambient caller's ztunnel does with a
// connection to the Service: L4 only, no VirtualService or
// DestinationRule of its own (a waypoint, when the Service has one,
// applies those); HBONE (mTLS) to endpoints that accept it, plaintext TCP
// to the others.
func (c *Config) ztunnelView(v *View, sd *ServiceData, port int32) {
	v.Routes = []Route{{Name: "ztunnel: the caller is in ambient (L4; routes and subsets apply at a waypoint, not here)", CatchAll: true,
		Destinations: []Destination{{Host: v.Host, Port: port, Percent: 100, Cluster: Ztunnel}}}}
	cl := &Cluster{Name: Ztunnel, Host: v.Host, Port: port, Exists: true,
		Why: "the caller's ztunnel picks an endpoint of the Service and tunnels to it"}
	for _, e := range c.Endpoints(sd, port) {
		if e.Serving() {
			cl.ServiceServing++
		}
		accepts := c.PeerAuthMode(sd.Service.Namespace, e.Labels, e.Port)
		sends, why := SendsPlaintext, "plaintext TCP: the pod accepts no HBONE (not enrolled in ambient, no "+TunnelLabel+"=http)"
		if e.HBONE {
			sends, why = SendsMTLS, "HBONE (mTLS) from the caller's ztunnel"
		}
		cl.Endpoints = append(cl.Endpoints, EndpointTLS{Endpoint: e, Sends: sends, SendsWhy: why, Accepts: accepts,
			Mismatch: TLSMismatch(sends, e, accepts)})
	}
	v.Clusters[Ztunnel] = cl
}

// TrustDomain is the mesh's trust domain, Istio's default cluster.local
// when unset: the first part of every SPIFFE principal.
func (m MeshConfig) TrustDomain() string {
	if m.Raw != nil && m.Raw.GetTrustDomain() != "" {
		return m.Raw.GetTrustDomain()
	}
	return "cluster.local"
}
