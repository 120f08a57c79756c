package probes

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	networkingk8s "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/meshtriage/meshtriage/probes/ambientpath"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/podfacts"
	"github.com/meshtriage/meshtriage/probes/readgroup"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// AmbientPolicyProbe judges, from configuration alone, the hops an
// ambient connection takes from the caller to the Service's pods (through
// the waypoint when the caller's requests go through one): whether a
// Kubernetes NetworkPolicy lets each hop's HBONE (TCP 15008), or its
// connection to the app's port (plaintext, or a sidecar's mTLS to a sidecar
// pod), through, and whether the destination's ztunnel admits the connection by
// AuthorizationPolicy and PeerAuthentication, as ztunnel decides.
type AmbientPolicyProbe struct{}

func (AmbientPolicyProbe) Meta() Meta {
	return Meta{
		ID:    "ambient-policy",
		Title: "Ambient path: NetworkPolicy on HBONE 15008 and ztunnel's AuthorizationPolicy",
		Reads: []string{"services", "pods", "namespaces", "networkpolicies", "authorizationpolicies", "peerauthentications", "configmaps (mesh config)", "gateways.gateway.networking.k8s.io"},
		Facts: []FactSpec{
			{"hbone_netpol_blocked", FactBool, "a Kubernetes NetworkPolicy drops a hop of the path: HBONE to a pod's 15008 (or plaintext, or a sidecar's or gateway's mTLS to a sidecar pod, to its app port) is not admitted by the policies that select it"},
			{"hbone_netpol_policies", FactList, "the NetworkPolicies that isolate the blocked hops' pods and admit none of them"},
			{"hbone_blocked_hops", FactList, "the hops NetworkPolicy drops, as FROM -> TO TCP PORT"},
			{"authz_denied", FactBool, "the destination pod's ztunnel refuses the connection as it arrives (from the caller, or from the waypoint the caller goes through)"},
			{"authz_denied_by", FactString, "the DENY policy that matches, NAMESPACE/NAME (istio_converted_static_strict for STRICT), or \"\""},
			{"authz_reason", FactString, "ztunnel's words for the refusal: \"allow policies exist, but none allowed\" or \"explicitly denied by: NS/NAME\""},
			{"authz_waypoint_admitted", FactBool, "the Service names a waypoint and the destination's ztunnel would admit it (its pods' identity): the policy expects the traffic through it; false when none is named"},
			{"authz_policies", FactList, "the policies ztunnel enforces at the Service's pods, as ACTION NAMESPACE/NAME"},
			{"authz_waypoint_policies", FactList, "policies of the Service's namespace attached to a waypoint or Service (targetRefs): enforced at the waypoint, not by ztunnel"},
		},
	}
}

type ambientPolicyInput struct {
	ambientpath.Input
	Mesh mesh.MeshConfig
	// NetworkPolicies by namespace; a namespace absent was not read.
	NetworkPolicies map[string][]networkingk8s.NetworkPolicy
	NetpolProblems  []string
	Authz           []*securityv1.AuthorizationPolicy
	AuthzKnown      bool
	AuthzProblem    string
	PeerAuths       []*securityv1.PeerAuthentication
	PeerKnown       bool
	Port            int32
	// WaypointNamespace is the namespace of the waypoint the Service names
	// (nil when none is named, or it could not be read): a NetworkPolicy's
	// namespaceSelector judges the waypoint's hops by its labels.
	WaypointNamespace *corev1.Namespace
}

func (p AmbientPolicyProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	base, what, err := ambientpath.Fetch(ctx, c, t)
	if err != nil {
		return ErrorResult(what, err)
	}
	in := ambientPolicyInput{Input: base, NetworkPolicies: map[string][]networkingk8s.NetworkPolicy{}, Port: t.Port}
	if !base.OnPath() {
		return evaluateAmbientPolicy(t, in)
	}
	mc, err := istioconfig.ReadMeshConfig(ctx, c)
	if err != nil {
		return ErrorResult("read the mesh config", err)
	}
	in.Mesh = mc
	root := mc.RootNamespace(base.ControlPlane)
	namespaces := []string{t.Namespace}
	if base.Source != nil {
		namespaces = append(namespaces, base.Source.Namespace)
	}
	if base.Binding.Use.Named {
		namespaces = append(namespaces, base.Binding.Use.Ref.Namespace)
	}
	namespaces = wording.UniqueNonEmpty(namespaces...)
	nps := make([][]networkingk8s.NetworkPolicy, len(namespaces))
	npErrs := make([]error, len(namespaces))
	var (
		g                readgroup.Group
		apNS, apRoot     []*securityv1.AuthorizationPolicy
		apErr, apRootErr error
		paNS, paRoot     []*securityv1.PeerAuthentication
		paErr, paRootErr error
	)
	for i, ns := range namespaces {
		g.Go(func() { nps[i], npErrs[i] = cluster.NetworkPolicies(ctx, c, ns) })
	}
	// The waypoint's namespace, unless ambientpath.Fetch read it already.
	switch wpNS := base.Binding.Use.Ref.Namespace; {
	case !base.Binding.Use.Named:
	case wpNS == t.Namespace:
		in.WaypointNamespace = base.Namespace
	case base.Source != nil && wpNS == base.Source.Namespace:
		in.WaypointNamespace = base.SourceNamespace
	default:
		g.Go(func() {
			if ns, err := c.GetNamespace(ctx, wpNS); err == nil {
				in.WaypointNamespace = ns
			}
		})
	}
	g.Go(func() { apNS, apErr = cluster.AuthorizationPolicies(ctx, c, t.Namespace) })
	g.Go(func() { paNS, paErr = c.PeerAuthentications(ctx, t.Namespace) })
	if root != t.Namespace {
		g.Go(func() { apRoot, apRootErr = cluster.AuthorizationPolicies(ctx, c, root) })
		g.Go(func() { paRoot, paRootErr = c.PeerAuthentications(ctx, root) })
	}
	g.Wait()
	for i, ns := range namespaces {
		if npErrs[i] != nil {
			in.NetpolProblems = append(in.NetpolProblems, cluster.AccessProblem("list networkpolicies in "+ns, npErrs[i]))
			continue
		}
		in.NetworkPolicies[ns] = nps[i]
	}
	missingKind := func(err error) bool { return apierrors.IsNotFound(err) && cluster.IsMissingKind(err) }
	switch {
	case apErr != nil && !missingKind(apErr):
		in.AuthzProblem = cluster.AccessProblem("list authorizationpolicies in "+t.Namespace, apErr)
	case apRootErr != nil && !missingKind(apRootErr):
		in.AuthzProblem = cluster.AccessProblem("list authorizationpolicies in "+root, apRootErr)
	default:
		in.Authz, in.AuthzKnown = append(apNS, apRoot...), true
	}
	if (paErr == nil || missingKind(paErr)) && (paRootErr == nil || missingKind(paRootErr)) {
		in.PeerAuths, in.PeerKnown = append(paNS, paRoot...), true
	} else if in.AuthzProblem == "" {
		in.AuthzProblem = "PeerAuthentications could not be read: STRICT is unknown"
	}
	return evaluateAmbientPolicy(t, in)
}

// hop is one connection of the path: from a pod to a pod's port.
type hop struct {
	from, to     *corev1.Pod
	fromNS, toNS *corev1.Namespace
	port         int32
	hbone        bool
}

func (h hop) String() string {
	return fmt.Sprintf("%s/%s -> %s/%s TCP %d", h.from.Namespace, h.from.Name, h.to.Namespace, h.to.Name, h.port)
}

func evaluateAmbientPolicy(t cluster.Target, in ambientPolicyInput) Result {
	r := Result{Status: StatusPass, Facts: Facts{}, Commands: ambientPolicyCommands(t, in.Input)}
	if !in.OnPath() {
		r.Status = StatusSkipped
		r.Summary = "nothing on the path is in ambient: no HBONE hop or ztunnel policy to judge"
		return r
	}
	if in.Source == nil {
		r.Status = StatusSkipped
		r.Summary = "no caller to judge the path from (name one with --from pod/NAME)"
		return r
	}
	kind := ambientpath.CallerKind(in.Source)
	if kind == mesh.CallerNone && in.Source != nil && mesh.DataPlaneOf(in.Source, nil).Pending() {
		// Held until its node's ztunnel proxies it, then HBONE: judge the
		// path it will take, not plaintext on the app's port.
		kind = mesh.CallerAmbient
	}
	srcNS := in.SourceNamespace
	throughWaypoint := false
	var waypoints []*corev1.Pod
	if in.Binding.State == mesh.WaypointBound {
		throughWaypoint, _ = mesh.TraversesServiceWaypoint(kind, in.Service, in.Namespace)
		for i := range in.WaypointPods {
			if ready, _ := mesh.PodReady(&in.WaypointPods[i]); ready {
				waypoints = append(waypoints, &in.WaypointPods[i])
			}
		}
	}
	var targets []*corev1.Pod
	for i := range in.Pods {
		if in.Pods[i].Status.Phase == corev1.PodRunning && in.Pods[i].DeletionTimestamp == nil {
			targets = append(targets, &in.Pods[i])
		}
	}
	svcPort := servicePortOf(in.Service, in.Port)

	// The hops, and who each destination's ztunnel sees coming.
	var hops []hop
	type arrival struct {
		to  *corev1.Pod
		src mesh.AuthzSource
		by  string
	}
	var arrivals []arrival
	td := in.Mesh.TrustDomain()
	identity := func(p *corev1.Pod, authenticated bool) mesh.AuthzSource {
		return mesh.AuthzSource{Namespace: p.Namespace, ServiceAccount: cmp.Or(p.Spec.ServiceAccountName, "default"), IP: p.Status.PodIP, Authenticated: authenticated, TrustDomain: td}
	}
	for _, to := range targets {
		toHBONE := mesh.AcceptsHBONE(to)
		callerHBONE := callerTunnelsTo(kind, to, in.Namespace)
		port := targetPortOn(svcPort, to)
		if (throughWaypoint && toHBONE) || (!throughWaypoint && callerHBONE) {
			port = mesh.HBONEPort
		}
		if throughWaypoint && len(waypoints) == 0 {
			continue // no waypoint pod to take it: the dataplane step says so
		}
		if throughWaypoint {
			for _, wp := range waypoints {
				hops = append(hops, hop{from: wp, to: to, fromNS: in.WaypointNamespace, toNS: in.Namespace, port: port, hbone: toHBONE})
			}
			if mesh.DataPlaneOf(to, in.Namespace).Enrolled() {
				arrivals = append(arrivals, arrival{to: to, src: identity(waypoints[0], true), by: "waypoint " + waypoints[0].Name})
			}
			continue
		}
		hops = append(hops, hop{from: in.Source, to: to, fromNS: srcNS, toNS: in.Namespace, port: port, hbone: callerHBONE})
		if mesh.DataPlaneOf(to, in.Namespace).Enrolled() {
			arrivals = append(arrivals, arrival{to: to, src: identity(in.Source, callerHBONE), by: "caller " + in.Source.Name})
		}
	}
	if throughWaypoint {
		for _, wp := range waypoints {
			hops = append(hops, hop{from: in.Source, to: wp, fromNS: srcNS, toNS: in.WaypointNamespace, port: mesh.HBONEPort, hbone: true})
		}
	}

	// NetworkPolicy, hop by hop.
	r.Evidence.Columns = []string{"hop", "check", "verdict", "why"}
	blocked, undecided := []string{}, false
	isolating := map[string]bool{}
	for _, h := range hops {
		ingress, inOK := in.NetworkPolicies[h.to.Namespace]
		egress, outOK := in.NetworkPolicies[h.from.Namespace]
		if !inOK || !outOK {
			undecided = true
			r.Evidence.Rows = append(r.Evidence.Rows, []string{h.String(), "NetworkPolicy", "unknown", "the NetworkPolicies of the namespace could not be read"})
			continue
		}
		if h.port == 0 {
			// No port to judge: the Service has none, or its named
			// targetPort names no port of the pod (then no endpoint of the
			// pod serves it).
			undecided = true
			r.Evidence.Rows = append(r.Evidence.Rows, []string{h.String(), "NetworkPolicy", "unknown", unresolvedPortWhy(svcPort, h.to)})
			continue
		}
		v := mesh.NetworkPolicyAllows(mesh.NetPeer{Pod: h.from, Namespace: h.fromNS}, mesh.NetPeer{Pod: h.to, Namespace: h.toNS}, h.port, ingress, egress)
		verdict := "admitted"
		switch {
		case !v.Decided:
			undecided, verdict = true, "unknown"
		case !v.Allowed:
			verdict = "DROPPED"
			blocked = append(blocked, h.String())
			for _, p := range v.Isolating {
				isolating[strings.TrimPrefix(p, "NetworkPolicy ")] = true
			}
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{h.String(), "NetworkPolicy", verdict, v.Why})
	}
	switch {
	case len(blocked) > 0:
		r.Facts["hbone_netpol_blocked"] = true
	case !undecided && len(hops) > 0:
		r.Facts["hbone_netpol_blocked"] = false
	}
	r.Facts["hbone_netpol_policies"] = nonNil(slices.Sorted(maps.Keys(isolating)))
	r.Facts["hbone_blocked_hops"] = blocked

	// ztunnel's authorization at each enrolled destination.
	var problems, notes []string
	if len(blocked) > 0 {
		problems = append(problems, fmt.Sprintf("NetworkPolicy drops %s", strings.Join(blocked, ", ")))
	} else if undecided {
		notes = append(notes, "NetworkPolicy's verdict on some hops is unknown")
	}
	if in.AuthzKnown && in.PeerKnown && len(arrivals) > 0 {
		cfg := &mesh.Config{RootNamespace: in.Mesh.RootNamespace(in.ControlPlane), PeerAuthentications: in.PeerAuths}
		denied, decided := false, true
		var deniedBy, reason, refused string
		var policies, waypointPolicies []string
		for _, a := range arrivals {
			arrives := a.by + " -> " + a.to.Namespace + "/" + a.to.Name
			port := targetPortOn(svcPort, a.to)
			if port == 0 {
				decided = false
				r.Evidence.Rows = append(r.Evidence.Rows, []string{arrives, "ztunnel authorization", "unknown", unresolvedPortWhy(svcPort, a.to)})
				continue
			}
			peer := cfg.PeerAuthMode(a.to.Namespace, a.to.Labels, port)
			v := mesh.ZtunnelAuthorize(in.Authz, cfg.RootNamespace, a.to, a.src, port, peer)
			if !denied {
				// The policies at the pod that refuses, else at the last.
				policies, waypointPolicies = v.Policies, v.WaypointPolicies
			}
			verdict := "admitted"
			switch {
			case !v.Decided:
				decided, verdict = false, "unknown"
			case !v.Allowed:
				verdict = "REFUSED: " + v.Reason
				if !denied {
					denied, deniedBy, reason = true, v.DeniedBy, v.Reason
					refused = fmt.Sprintf("%s at %s/%s", a.by, a.to.Namespace, a.to.Name)
				}
			}
			r.Evidence.Rows = append(r.Evidence.Rows, []string{arrives, "ztunnel authorization", verdict, v.Why})
		}
		switch {
		case denied:
			r.Facts["authz_denied"] = true
			problems = append(problems, fmt.Sprintf("the Service's ztunnel refuses the %s: %s", refused, reason))
		case decided:
			r.Facts["authz_denied"] = false
		default:
			notes = append(notes, "ztunnel's verdict on some connections is unknown")
		}
		r.Facts["authz_denied_by"] = deniedBy
		r.Facts["authz_reason"] = reason
		r.Facts["authz_policies"] = nonNil(policies)
		r.Facts["authz_waypoint_policies"] = nonNil(waypointPolicies)
		if in.Binding.Use.Named {
			admitted := waypointAdmitted(in, cfg, svcPort, td)
			if admitted != nil {
				r.Facts["authz_waypoint_admitted"] = *admitted
			}
		} else {
			r.Facts["authz_waypoint_admitted"] = false // no waypoint to admit
		}
	} else if len(arrivals) > 0 {
		notes = append(notes, cmp.Or(in.AuthzProblem, "the policies could not be read"))
	}
	notes = append(notes, in.NetpolProblems...)

	head := fmt.Sprintf("%d hops judged", len(hops))
	if throughWaypoint {
		head += fmt.Sprintf(" (through waypoint %s)", in.Binding.Use.Ref)
	}
	r.Status, r.Summary = verdict{Head: head, Problems: problems, Warnings: notes,
		Pass: head + ": NetworkPolicy admits every hop and ztunnel admits the connection"}.judge()
	return r
}

// callerTunnelsTo reports whether a caller of kind sends HBONE (to port
// 15008) to pod in namespace ns. An ambient caller's ztunnel, and a
// waypoint, tunnel to every pod that accepts HBONE. A sidecar or a gateway tunnels only to a pod
// enrolled in ambient, as the TLS model has it (mesh.ClientTLS.Sends: an
// endpoint Ambient and HBONE): to a sidecar pod, whose endpoint keeps
// tlsMode=istio, istiod's endpoint builder gives it classic mTLS on the
// app's port (supportsMtls && !PILOT_PREFER_SENDING_HBONE), whatever its
// networking.istio.io/tunnel label says. A caller outside the mesh sends
// plaintext to the app's port.
func callerTunnelsTo(kind string, pod *corev1.Pod, ns *corev1.Namespace) bool {
	switch kind {
	case mesh.CallerAmbient, mesh.DataPlaneWaypoint:
		return mesh.AcceptsHBONE(pod)
	case mesh.CallerSidecar, mesh.CallerGateway:
		d := mesh.DataPlaneOf(pod, ns)
		return d.Mode == mesh.DataPlaneAmbient && d.Enrolled()
	}
	return false
}

// waypointAdmitted: would the Service's enrolled pods' ztunnel admit the
// named waypoint's pods (their service account; the waypoint's name when
// no pod is read, as istiod names its service account)?
func waypointAdmitted(in ambientPolicyInput, cfg *mesh.Config, svcPort *corev1.ServicePort, td string) *bool {
	sa := in.Binding.Use.Ref.Name
	if len(in.WaypointPods) > 0 && in.WaypointPods[0].Spec.ServiceAccountName != "" {
		sa = in.WaypointPods[0].Spec.ServiceAccountName
	}
	src := mesh.AuthzSource{Namespace: in.Binding.Use.Ref.Namespace, ServiceAccount: sa, Authenticated: true, TrustDomain: td}
	for i := range in.Pods {
		to := &in.Pods[i]
		if !mesh.DataPlaneOf(to, in.Namespace).Enrolled() {
			continue
		}
		port := targetPortOn(svcPort, to)
		v := mesh.ZtunnelAuthorize(in.Authz, cfg.RootNamespace, to, src, port, cfg.PeerAuthMode(to.Namespace, to.Labels, port))
		if !v.Decided {
			return nil
		}
		return &v.Allowed
	}
	return nil
}

// unresolvedPortWhy says why a hop to pod has no port.
func unresolvedPortWhy(sp *corev1.ServicePort, pod *corev1.Pod) string {
	if sp == nil {
		return "the Service has no port: the port the connection takes is unknown"
	}
	tp := podfacts.ServiceTargetPort(*sp)
	return fmt.Sprintf("the Service port's targetPort %s names no port of %s/%s (no endpoint of it serves the port): the port the connection takes is unknown", tp.String(), pod.Namespace, pod.Name)
}

// servicePortOf is the Service's port numbered port, or its first port.
func servicePortOf(svc *corev1.Service, port int32) *corev1.ServicePort {
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			return &svc.Spec.Ports[i]
		}
	}
	if len(svc.Spec.Ports) > 0 {
		return &svc.Spec.Ports[0]
	}
	return nil
}

// targetPortOn is the pod port the Service port sends to
// (podfacts.ResolvedTargetPort), 0 when the Service has no port.
func targetPortOn(sp *corev1.ServicePort, pod *corev1.Pod) int32 {
	if sp == nil {
		return 0
	}
	return podfacts.ResolvedTargetPort(*sp, pod)
}

func ambientPolicyCommands(t cluster.Target, in ambientpath.Input) []string {
	cmds := []string{
		fmt.Sprintf("kubectl get networkpolicy -n %s -o yaml", t.Namespace),
		fmt.Sprintf("kubectl get authorizationpolicy -n %s -o yaml", t.Namespace),
		"kubectl get peerauthentication -A",
		"istioctl ztunnel-config policies",
	}
	if t.Source != nil && t.Source.Namespace != t.Namespace {
		cmds = append(cmds, fmt.Sprintf("kubectl get networkpolicy -n %s -o yaml", t.Source.Namespace))
	}
	return cmds
}
