package mesh

import (
	"fmt"
	"sort"
	"strings"

	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// APIGateway is a Gateway API Gateway as istiod reads it
// (gateway_collection.go GatewayCollection): whose it is, the Services its
// listeners bind to, and each listener.
type APIGateway struct {
	Namespace, Name string
	Class           string
	Controller      string
	// Ours: istiod builds configuration for it (its class's controller is
	// istiod's gateway or waypoint controller). ClassUnknown says why that
	// is not known (the GatewayClasses were not read).
	Ours         bool
	ClassUnknown string
	// Waypoint: the mesh controller's; istiod turns no route of it into a
	// VirtualService.
	Waypoint bool
	// Managed: istiod deploys it (no Hostname address): its Service is
	// NAME-CLASS, which gets one port a distinct listener port.
	Managed bool
	// Services are the hostnames of the Services its listeners bind to
	// (extractGatewayServices): a gateway pod gets its listeners only
	// through one of them, in the Gateway's namespace.
	Services []string
	// Listeners in the order written.
	Listeners []APIListener
	// What istiod wrote, nil when it wrote nothing (a dump without
	// status).
	Accepted, Programmed *condition
	obj                  *gatewayv1.Gateway
}

// Ref is namespace/name.
func (g *APIGateway) Ref() string { return g.Namespace + "/" + g.Name }

// StatusStale reports a Gateway whose spec changed since istiod last
// wrote its status (observedGeneration behind metadata.generation): its
// listeners' and its routes' conditions describe the Gateway before.
func (g *APIGateway) StatusStale() bool {
	for _, c := range []*condition{g.Accepted, g.Programmed} {
		if c != nil && c.Stale {
			return true
		}
	}
	return false
}

// APIListener is a listener of a Gateway, as buildListener converts it.
type APIListener struct {
	Gateway  string // namespace/name
	Name     string
	Port     int32
	Protocol string
	// Hostname is the listener's, "" for any.
	Hostname string
	// TLSMode is Terminate or Passthrough, "" without tls.
	TLSMode string
	// Credentials are the SDS names of its certificateRefs that istiod may
	// use (kubernetes-gateway://NS/NAME), those refused by a missing
	// ReferenceGrant left out.
	Credentials []string
	// NoServer: an HTTPS or TLS listener without tls; istiod makes no
	// server of it (and no route parent).
	NoServer bool
	// NotProgrammed says why istiod leaves the listener out of the
	// proxies' configuration, as the model finds it from what was read
	// (an unsupported protocol, a certificateRef to another namespace
	// without a ReferenceGrant, one that is not a Secret);
	// NotProgrammedReason is the listener condition's reason istiod
	// writes for it. Both "" when the model finds nothing.
	NotProgrammed, NotProgrammedReason string
	// CertificatesUnread: whether its certificate Secrets exist and hold a
	// key pair is not read (meshtriage reads no Secrets): its status says.
	CertificatesUnread bool
	// AllowedFrom is allowedRoutes.namespaces.from (Same when unset);
	// selector the Selector's.
	AllowedFrom string
	selector    *metav1.LabelSelector
	// AllowedKinds are the route kinds it admits
	// (GenerateGatewaySupportedKinds ∩ allowedRoutes.kinds).
	AllowedKinds []string
	// Internal is the internal Istio Gateway, namespace/name.
	Internal string
	// Status is what istiod wrote for it, nil conditions when it wrote
	// none.
	StatusAccepted, StatusProgrammed, StatusResolvedRefs *condition
	AttachedRoutes                                       int32
	// index in the Gateway's listeners.
	index int
}

// Ref names the listener: namespace/name listener NAME (port P PROTOCOL).
func (l APIListener) Ref() string {
	return fmt.Sprintf("%s listener %s (port %d %s)", l.Gateway, l.Name, l.Port, l.Protocol)
}

// Programmed says whether istiod gives the listener to proxies: the
// model's verdict where it finds one, else istiod's status at the
// Gateway's generation; known is false when neither says (its
// certificates are not read and no status was written).
func (l APIListener) Programmed() (programmed, known bool, why string) {
	switch {
	case l.NoServer:
		return false, true, "an " + l.Protocol + " listener without tls: istiod makes no server of it"
	case l.NotProgrammed != "":
		return false, true, l.NotProgrammed
	case l.StatusProgrammed != nil && !l.StatusProgrammed.Stale:
		if l.StatusProgrammed.Status == string(metav1.ConditionTrue) {
			return true, true, "istiod reports it Programmed"
		}
		why := "istiod reports it not Programmed (" + l.StatusProgrammed.Reason + ")"
		if rr := l.StatusResolvedRefs; rr != nil && rr.Status == string(metav1.ConditionFalse) {
			why += ": ResolvedRefs " + rr.Reason + ": " + rr.Message
		}
		return false, true, why
	case l.CertificatesUnread:
		return true, false, "whether its certificate Secrets exist and hold a key pair is not read, and istiod wrote no current status for it"
	}
	return true, true, ""
}

// ListenerCondition is one condition of a listener's status: its type
// (Accepted, Programmed, ResolvedRefs), status and reason; Unknown says
// why the model does not decide it ("" when it does).
type ListenerCondition struct{ Type, Status, Reason, Unknown string }

// refNotPermittedSecretFirst: why a certificateRef refused for want of a
// ReferenceGrant has no one ResolvedRefs reason. istiod up to the lab's
// (istio.io/istio eed52ebb66ad, buildTLS) looks the Secret up before the
// grant: a missing Secret is InvalidCertificateRef (Accepted stays True),
// an existing one RefNotPermitted (Accepted False NoValidCACertificate);
// master since istio/istio#61303 checks the grant first (RefNotPermitted
// either way). meshtriage reads no Secrets.
const refNotPermittedSecretFirst = "istiod releases look the Secret up before the ReferenceGrant: RefNotPermitted when it exists, InvalidCertificateRef when it does not, and Secrets are not read"

// Conditions are the Accepted, Programmed and ResolvedRefs conditions
// istiod's buildListener writes for the listener, from what the model
// finds: a TLS certificateRef it refuses is ResolvedRefs False with the
// refusal's reason and Programmed False Invalid ("Bad TLS
// configuration"), and a reference not permitted is also Accepted False
// NoValidCACertificate (see refNotPermittedSecretFirst for when it is
// not); an unsupported protocol is Accepted False UnsupportedProtocol
// while Programmed stays True (istiod sets no error on it).
// NotProgrammedReason is the reason of the condition that says why, not
// necessarily Programmed's. known is false where the model decides none
// (no server, certificates not read).
func (l APIListener) Conditions() (conds []ListenerCondition, known bool) {
	if l.NoServer || l.CertificatesUnread && l.NotProgrammed == "" {
		return nil, false
	}
	accepted := ListenerCondition{Type: string(gatewayv1.ListenerConditionAccepted), Status: string(metav1.ConditionTrue), Reason: string(gatewayv1.ListenerReasonAccepted)}
	programmed := ListenerCondition{Type: string(gatewayv1.ListenerConditionProgrammed), Status: string(metav1.ConditionTrue), Reason: string(gatewayv1.ListenerReasonProgrammed)}
	resolved := ListenerCondition{Type: string(gatewayv1.ListenerConditionResolvedRefs), Status: string(metav1.ConditionTrue), Reason: string(gatewayv1.ListenerReasonResolvedRefs)}
	switch reason := l.NotProgrammedReason; reason {
	case "":
	case string(gatewayv1.ListenerReasonUnsupportedProtocol):
		accepted.Status, accepted.Reason = string(metav1.ConditionFalse), reason
	default: // buildTLS's error
		resolved.Status, resolved.Reason = string(metav1.ConditionFalse), reason
		programmed.Status, programmed.Reason = string(metav1.ConditionFalse), string(gatewayv1.GatewayReasonInvalid)
		if reason == string(gatewayv1.ListenerReasonRefNotPermitted) {
			accepted.Status, accepted.Reason = string(metav1.ConditionFalse), string(gatewayv1.ListenerReasonNoValidCACertificate)
			accepted.Unknown, resolved.Unknown = refNotPermittedSecretFirst, refNotPermittedSecretFirst
		}
	}
	return []ListenerCondition{accepted, programmed, resolved}, true
}

// admits reports whether the listener admits routes of namespace ns
// (namespacesFromSelector); known is false when a selector decides and
// the namespace's labels were not read.
func (l APIListener) admits(c *Config, gwNamespace, ns string) (admitted, known bool) {
	switch l.AllowedFrom {
	case string(gatewayv1.NamespacesFromAll):
		return true, true
	case string(gatewayv1.NamespacesFromSelector):
		if l.selector == nil {
			return true, true // istiod: invalid, read as All
		}
		sel, err := metav1.LabelSelectorAsSelector(l.selector)
		if err != nil {
			return false, true
		}
		nsObj := c.Namespaces[ns]
		if nsObj == nil {
			return false, false
		}
		set := labels.Set{}
		for k, v := range nsObj.Labels {
			set[k] = v
		}
		set["kubernetes.io/metadata.name"] = ns
		return sel.Matches(set), true
	}
	return ns == gwNamespace, true
}

// allowsKind reports whether the listener admits routes of kind.
func (l APIListener) allowsKind(kind string) bool {
	for _, k := range l.AllowedKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// APIGateways are the Gateway API Gateways read, as istiod reads them,
// oldest first.
func (c *Config) APIGateways() []*APIGateway {
	if c.GatewayAPI == nil {
		return nil
	}
	gws := append([]*gatewayv1.Gateway(nil), c.GatewayAPI.Gateways...)
	sort.SliceStable(gws, func(i, j int) bool { return olderRule(gws[i], gws[j]) })
	out := make([]*APIGateway, 0, len(gws))
	for _, gw := range gws {
		out = append(out, c.apiGateway(gw))
	}
	return out
}

// APIGateway is the Gateway namespace/name as istiod reads it, nil when
// none was read.
func (c *Config) APIGateway(ns, name string) *APIGateway {
	if c.GatewayAPI == nil {
		return nil
	}
	for _, gw := range c.GatewayAPI.Gateways {
		if gw.Namespace == ns && gw.Name == name {
			return c.apiGateway(gw)
		}
	}
	return nil
}

func (c *Config) apiGateway(gw *gatewayv1.Gateway) *APIGateway {
	g := &APIGateway{Namespace: gw.Namespace, Name: gw.Name, Class: string(gw.Spec.GatewayClassName), obj: gw}
	controller, known := c.GatewayClassController(g.Class)
	g.Controller = controller
	g.Ours = istiodOwns(controller)
	if !known {
		g.ClassUnknown = fmt.Sprintf("GatewayClass %s is not read (%s): whether istiod owns the Gateway is not known", g.Class, c.GatewayAPI.unknownWhy(KindGatewayClass, ""))
	}
	g.Waypoint = controller == ControllerWaypoint
	g.Managed, g.Services = gatewayServices(gw, g.Waypoint)
	g.Accepted = conditionOf(gw.Status.Conditions, string(gatewayv1.GatewayConditionAccepted), gw.Generation)
	g.Programmed = conditionOf(gw.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed), gw.Generation)
	for i, l := range gw.Spec.Listeners {
		g.Listeners = append(g.Listeners, c.apiListener(gw, g, i, l))
	}
	return g
}

// gatewayServices is extractGatewayServices: a managed Gateway binds to
// the Service istiod deploys (NAME-CLASS, NAME for a waypoint, or the
// name-override annotation's); one with Hostname addresses to those
// Services (short names completed in its namespace).
func gatewayServices(gw *gatewayv1.Gateway, waypoint bool) (managed bool, hosts []string) {
	managed = len(gw.Spec.Addresses) == 0 ||
		len(gw.Spec.Addresses) == 1 && (gw.Spec.Addresses[0].Type == nil || *gw.Spec.Addresses[0].Type == gatewayv1.IPAddressType)
	if managed {
		name := gw.Name + "-" + string(gw.Spec.GatewayClassName)
		if waypoint {
			name = gw.Name
		}
		if o := gw.Annotations["gateway.istio.io/name-override"]; o != "" {
			name = o
		}
		return true, []string{ServiceHost(name, gw.Namespace)}
	}
	for _, a := range gw.Spec.Addresses {
		if a.Type != nil && *a.Type != gatewayv1.HostnameAddressType {
			continue
		}
		h := a.Value
		if !strings.Contains(h, ".") {
			h = ServiceHost(h, gw.Namespace)
		}
		hosts = append(hosts, h)
	}
	return false, hosts
}

func (c *Config) apiListener(gw *gatewayv1.Gateway, g *APIGateway, i int, l gatewayv1.Listener) APIListener {
	out := APIListener{Gateway: g.Ref(), Name: string(l.Name), Port: int32(l.Port), Protocol: string(l.Protocol),
		Internal: gw.Namespace + "/" + InternalGatewayName(gw.Name, string(l.Name)), index: i,
		AllowedFrom: string(gatewayv1.NamespacesFromSame)}
	if l.Hostname != nil {
		out.Hostname = string(*l.Hostname)
	}
	if ar := l.AllowedRoutes; ar != nil && ar.Namespaces != nil && ar.Namespaces.From != nil {
		out.AllowedFrom = string(*ar.Namespaces.From)
		out.selector = ar.Namespaces.Selector
	}
	out.AllowedKinds = supportedKinds(l)
	switch l.Protocol {
	case gatewayv1.HTTPProtocolType, gatewayv1.HTTPSProtocolType, gatewayv1.TLSProtocolType, gatewayv1.TCPProtocolType:
	case "HBONE":
		if !g.Waypoint && g.Controller != controllerEastWest {
			out.NotProgrammed, out.NotProgrammedReason = "protocol HBONE is only supported for waypoint proxies", string(gatewayv1.ListenerReasonUnsupportedProtocol)
		}
	default:
		out.NotProgrammed, out.NotProgrammedReason = fmt.Sprintf("protocol %q is unsupported", l.Protocol), string(gatewayv1.ListenerReasonUnsupportedProtocol)
	}
	if tls := l.TLS; tls != nil {
		out.TLSMode = string(gatewayv1.TLSModeTerminate)
		if tls.Mode != nil {
			out.TLSMode = string(*tls.Mode)
		}
		if out.TLSMode == string(gatewayv1.TLSModeTerminate) {
			c.listenerCertificates(gw, &out, tls)
		}
	} else if l.Protocol == gatewayv1.HTTPSProtocolType || l.Protocol == gatewayv1.TLSProtocolType {
		out.NoServer = true
	}
	for _, st := range gw.Status.Listeners {
		if string(st.Name) != out.Name {
			continue
		}
		out.StatusAccepted = conditionOf(st.Conditions, string(gatewayv1.ListenerConditionAccepted), gw.Generation)
		out.StatusProgrammed = conditionOf(st.Conditions, string(gatewayv1.ListenerConditionProgrammed), gw.Generation)
		out.StatusResolvedRefs = conditionOf(st.Conditions, string(gatewayv1.ListenerConditionResolvedRefs), gw.Generation)
		out.AttachedRoutes = st.AttachedRoutes
	}
	return out
}

// listenerCertificates is buildTLS for a terminating listener, as far as
// the model can follow it without reading Secrets: a ref that is not a
// Secret, or to another namespace without a ReferenceGrant, is refused
// whether or not the Secret exists; with no ref left, istiod does not
// program the listener. Same-namespace refs depend on Secrets not read.
func (c *Config) listenerCertificates(gw *gatewayv1.Gateway, out *APIListener, tls *gatewayv1.ListenerTLSConfig) {
	if opt := tls.Options["gateway.istio.io/tls-terminate-mode"]; opt == "ISTIO_SIMPLE" || opt == "ISTIO_MUTUAL" {
		return // the workload's own certificate: no Secret
	}
	if len(tls.CertificateRefs) > 2 {
		out.NotProgrammed, out.NotProgrammedReason = "TLS mode can only support up to 2 server certificates", string(gatewayv1.ListenerReasonInvalidCertificateRef)
		return
	}
	var refused []string
	reason := ""
	grantsUnknown := ""
	for _, ref := range tls.CertificateRefs {
		group, kind := "", "Secret"
		if ref.Group != nil {
			group = string(*ref.Group)
		}
		if ref.Kind != nil {
			kind = string(*ref.Kind)
		}
		ns := gw.Namespace
		if ref.Namespace != nil {
			ns = string(*ref.Namespace)
		}
		name := ns + "/" + string(ref.Name)
		switch {
		case group != "" || kind != "Secret":
			refused = append(refused, fmt.Sprintf("invalid certificate reference %s/%s %s, only secret is allowed", group, kind, name))
			reason = string(gatewayv1.ListenerReasonInvalidCertificateRef)
			continue
		case ns != gw.Namespace:
			allowed, known := c.grantAllows(KindGateway, gw.Namespace, "Secret", ns, string(ref.Name))
			if !known {
				grantsUnknown = c.GatewayAPI.unknownWhy(KindReferenceGrant, ns)
			} else if !allowed {
				refused = append(refused, fmt.Sprintf("certificateRef %s/%s not accessible to a Gateway in namespace %q (missing a ReferenceGrant?)", ref.Name, ns, gw.Namespace))
				if reason == "" {
					reason = string(gatewayv1.ListenerReasonRefNotPermitted)
				}
				continue
			}
		}
		out.Credentials = append(out.Credentials, "kubernetes-gateway://"+name)
		out.CertificatesUnread = true
	}
	switch {
	case len(out.Credentials) == 0 && grantsUnknown != "":
		out.CertificatesUnread = true
	case len(out.Credentials) == 0 && len(refused) > 0:
		out.NotProgrammed, out.NotProgrammedReason = strings.Join(refused, "; "), reason
	}
}

// supportedKinds is GenerateGatewaySupportedKinds: the route kinds a
// listener's protocol takes, narrowed by allowedRoutes.kinds.
func supportedKinds(l gatewayv1.Listener) []string {
	var supported []string
	switch l.Protocol {
	case gatewayv1.HTTPProtocolType, gatewayv1.HTTPSProtocolType:
		supported = []string{KindHTTPRoute, KindGRPCRoute}
	case gatewayv1.TCPProtocolType:
		supported = []string{KindTCPRoute}
	case gatewayv1.TLSProtocolType:
		supported = []string{KindTLSRoute}
		if l.TLS != nil && l.TLS.Mode != nil && *l.TLS.Mode == gatewayv1.TLSModeTerminate {
			supported = append(supported, KindTCPRoute)
		}
	}
	if l.AllowedRoutes == nil || len(l.AllowedRoutes.Kinds) == 0 {
		return supported
	}
	var out []string
	for _, s := range supported {
		for _, k := range l.AllowedRoutes.Kinds {
			group := gatewayv1.GroupName
			if k.Group != nil {
				group = string(*k.Group)
			}
			if string(k.Kind) == s && group == gatewayv1.GroupName {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// serverHosts are buildHostnameMatch's hosts for the listener: ns/host
// for each namespace it admits among namespaces (its own included), "*/"
// for every namespace, "~/" when it admits none. unknown names the
// namespaces a selector may admit whose labels were not read.
func (c *Config) serverHosts(l APIListener, gwNamespace string, namespaces []string) (hosts []string, unknown []string) {
	host := l.Hostname
	if host == "" {
		host = "*"
	}
	if l.AllowedFrom == string(gatewayv1.NamespacesFromAll) || l.AllowedFrom == string(gatewayv1.NamespacesFromSelector) && l.selector == nil {
		return []string{"*/" + host}, nil
	}
	seen := map[string]bool{}
	for _, ns := range append([]string{gwNamespace}, namespaces...) {
		if seen[ns] {
			continue
		}
		seen[ns] = true
		switch ok, known := l.admits(c, gwNamespace, ns); {
		case !known:
			unknown = append(unknown, ns)
		case ok:
			hosts = append(hosts, ns+"/"+host)
		}
	}
	sort.Strings(hosts)
	if len(hosts) == 0 {
		return []string{"~/" + host}, unknown
	}
	return hosts, unknown
}

// derivedGateways are the Istio Gateways istiod makes of the Gateway API
// Gateways it owns: one a listener it programs (undecided ones too,
// noted), with the Services they bind to and gateway semantics.
// Waypoints' listeners are left out: istiod routes a waypoint otherwise.
func (c *Config) derivedGateways() (out []*networkingv1.Gateway, unknown []string) {
	routeNamespaces := c.apiRouteNamespaces()
	for _, g := range c.APIGateways() {
		if !g.Ours || g.Waypoint {
			continue
		}
		for _, l := range g.Listeners {
			if l.NoServer {
				continue
			}
			programmed, known, why := l.Programmed()
			if !programmed {
				continue
			}
			if !known {
				unknown = append(unknown, l.Ref()+": "+why)
			}
			hosts, hostsUnknown := c.serverHosts(l, g.Namespace, routeNamespaces)
			if len(hostsUnknown) > 0 {
				unknown = append(unknown, fmt.Sprintf("%s: whether its allowedRoutes selector admits namespaces %s is not known (not read)", l.Ref(), strings.Join(hostsUnknown, ", ")))
			}
			server := &networkingv1alpha3.Server{
				Port:  &networkingv1alpha3.Port{Number: uint32(l.Port), Protocol: l.Protocol, Name: "default"},
				Hosts: hosts,
			}
			switch l.TLSMode {
			case string(gatewayv1.TLSModeTerminate):
				server.Tls = &networkingv1alpha3.ServerTLSSettings{Mode: networkingv1alpha3.ServerTLSSettings_SIMPLE}
				if len(l.Credentials) > 0 {
					server.Tls.CredentialName = l.Credentials[0]
				}
			case string(gatewayv1.TLSModePassthrough):
				server.Tls = &networkingv1alpha3.ServerTLSSettings{Mode: networkingv1alpha3.ServerTLSSettings_PASSTHROUGH}
			}
			annotations := map[string]string{
				AnnotationGatewayService:  strings.Join(g.Services, ","),
				AnnotationGatewaySemantic: semanticsGateway,
			}
			if g.Managed {
				// Only a managed Gateway has one: strict merging keys on it.
				annotations[AnnotationServiceAccount] = g.Name + "-" + g.Class
			}
			_, name, _ := strings.Cut(l.Internal, "/")
			out = append(out, &networkingv1.Gateway{
				ObjectMeta: metav1.ObjectMeta{Namespace: g.Namespace, Name: name, Annotations: annotations, CreationTimestamp: g.obj.CreationTimestamp},
				Spec:       networkingv1alpha3.Gateway{Servers: []*networkingv1alpha3.Server{server}},
			})
		}
	}
	return out, unknown
}

// apiRouteNamespaces are the namespaces of the Gateway API routes read.
func (c *Config) apiRouteNamespaces() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range c.GatewayAPI.sortedRoutes() {
		if !seen[r.Namespace] {
			seen[r.Namespace] = true
			out = append(out, r.Namespace)
		}
	}
	sort.Strings(out)
	return out
}
