package probes

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/ambientpath"
	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/istioconfig"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
	"github.com/meshtriage/meshtriage/probes/parse/clustername"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
	"github.com/meshtriage/meshtriage/probes/proxylog"
	"github.com/meshtriage/meshtriage/probes/readgroup"
	"github.com/meshtriage/meshtriage/probes/vocabulary"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// WaypointProbe reads the waypoint the Service is bound to: an Envoy, read
// as the sidecar probes read one. Its /clusters holds the Service's pods
// in inbound-vip|PORT|http|HOST, each an HBONE tunnel
// (envoy://connect_originate/IP:PORT); its access log has the requests it
// answered for the Service, with the 503s by response flag and the 403s its
// AuthorizationPolicies (targetRefs) returned.
type WaypointProbe struct{}

func (WaypointProbe) Meta() Meta {
	return Meta{
		ID:    "waypoint",
		Title: "Waypoint proxy (Envoy): the Service's cluster and its access log",
		Reads: []string{"pods (waypoint)", "pods/portforward (waypoint Envoy admin /clusters)", "pods/log (waypoint istio-proxy)", "services", "gateways.gateway.networking.k8s.io", "configmaps (mesh config: its access-log format)"},
		Facts: []FactSpec{
			{"waypoint_pods_read", FactInt, "waypoint pods whose Envoy was read"},
			{"waypoint_cluster_present", FactBool, "the waypoint holds an inbound-vip cluster for the Service's port"},
			{"waypoint_hosts_total", FactInt, "hosts of those clusters (the Service's pods, as HBONE tunnels)"},
			{"waypoint_hosts_healthy", FactInt, "of those, hosts Envoy sends to (not ejected, not failing health checks, not EDS-unhealthy)"},
			{"waypoint_log_entries", FactInt, "waypoint access-log entries for the Service"},
			{"waypoint_log_503", FactInt, "of those, responses 503"},
			{"waypoint_log_flags", FactList, "response flags of the waypoint's failed entries for the Service, as FLAG=COUNT"},
			{"waypoint_rbac_denied", FactInt, "requests the waypoint refused by AuthorizationPolicy (403, rbac_access_denied_matched_policy)"},
			{"waypoint_rbac_policies", FactList, "the policies those refusals name, NAMESPACE/NAME (\"none\": no ALLOW policy matched)"},
			{"waypoint_api_routes", FactList, "Gateway API routes the waypoint applies for the Service: a Service parentRef naming it, in the Service's or the waypoint's namespace (HTTPRoute NS/NAME)"},
			{"waypoint_api_backend_not_found", FactList, "backendRefs of those routes naming a Service that does not exist (BackendNotFound), as ROUTE rule N: KIND NS/NAME:PORT: the waypoint has no cluster for them, 500 NC"},
			{"waypoint_api_backend_port_missing", FactList, "such backendRefs naming a port the Service does not have (istiod keeps ResolvedRefs True): no cluster, 500 NC"},
			{"waypoint_api_backend_source", FactString, "where the backend verdicts come from: status (istiod's ResolvedRefs for the Service parent at the route's generation agrees), model (no status), disagree, stale; \"\" when no backend is invalid"},
			{"waypoint_api_broken_share", FactInt, "the largest share (%) of a route rule's requests that go to invalid backendRefs"},
			{"waypoint_api_partial", FactString, "why the routes the waypoint applies may not all have been read (\"\" when they were)"},
			{"waypoint_log_nc500", FactInt, "entries of the waypoint's access log for the Service answered 500 NC (cluster_not_found): a Gateway API route to a cluster istiod does not build"},
			{"waypoint_log_nc500_routes", FactList, "route names (route_name) of those entries, most frequent first"},
			{"waypoint_unexplained", FactList, "failures in the waypoint's log for the Service that the vocabulary knows no cause of the catalogue for, with flag, code and details, as LINE=COUNT"},
		},
	}
}

const maxWaypointPods = 3

type waypointPodRead struct {
	Pod      cluster.PodRef
	Clusters []envoy.Cluster
	AdminErr string
	Log      waypointLog
	LogErr   string
}

type waypointInput struct {
	ambientpath.Input
	// Routes is the config model (its Gateway API routes), read when the
	// Service is bound to a waypoint; RoutesProblem says why it was not.
	Routes        *mesh.Config
	RoutesProblem string
	Reads         []waypointPodRead
	// FormatProblems: the mesh's access-log format could not be read.
	FormatProblems []string
}

func (p WaypointProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	base, what, err := ambientpath.Fetch(ctx, c, t)
	if err != nil {
		return ErrorResult(what, err)
	}
	in := waypointInput{Input: base}
	if base.Binding.State == mesh.WaypointBound {
		// The routes the waypoint applies for the Service: the model's
		// Gateway API routes, read as for any caller.
		if cv, what, err := callerview.Fetch(ctx, c, t); err != nil {
			in.RoutesProblem = cluster.AccessProblem(what, err)
		} else {
			in.Routes = cv.Config
		}
	}
	formats, formatProblems := istioconfig.ReadAccessLogFormats(ctx, c)
	in.FormatProblems = formatProblems
	var running []*corev1.Pod
	for i := range base.WaypointPods {
		if base.WaypointPods[i].Status.Phase == corev1.PodRunning && len(running) < maxWaypointPods {
			running = append(running, &base.WaypointPods[i])
		}
	}
	in.Reads = make([]waypointPodRead, len(running))
	var g readgroup.Group
	for i, wp := range running {
		ref := cluster.PodRef{Namespace: wp.Namespace, Name: wp.Name}
		in.Reads[i].Pod = ref
		g.Go(func() {
			data, err := c.EnvoyAdmin(ctx, ref, "/clusters?format=json")
			if err == nil {
				in.Reads[i].Clusters, err = envoy.ParseClusters(data)
			}
			if err != nil {
				in.Reads[i].AdminErr = cluster.AccessProblem("GET /clusters from waypoint "+ref.String(), err)
			}
		})
		g.Go(func() {
			data, err := proxylog.NewestProxyLog(ctx, c, ref, proxylog.WaypointTailLines)
			if err != nil {
				in.Reads[i].LogErr = cluster.AccessProblem("read the log of waypoint "+ref.String(), err)
				return
			}
			in.Reads[i].Log = tallyWaypointLog(data, t, formats)
		})
	}
	g.Wait()
	return evaluateWaypoint(t, in)
}

// waypointLog is the tally of a waypoint's entries for the Service.
type waypointLog struct {
	Entries, Status503, RBACDenied int
	Flags, Policies                map[string]int
	// NC500 counts the 500 NC entries (cluster_not_found under Gateway API
	// semantics) by route name.
	NC500   map[string]int
	Samples []string
	// Failures counts the failed entries as the vocabulary reads them.
	Failures accesslog.Counter
}

// tallyWaypointLog keeps the entries for the Service: routed to its
// inbound-vip cluster, or (a request refused before routing has none) with
// its hostname as authority.
func tallyWaypointLog(data []byte, t cluster.Target, formats accesslog.Formats) waypointLog {
	l := waypointLog{Flags: map[string]int{}, Policies: map[string]int{}, NC500: map[string]int{}}
	var kept accesslog.Summary
	host := t.Host()
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		e, ok := formats.ParseLine(sc.Text())
		if !ok {
			continue
		}
		if !envoy.IsWaypointCluster(e.UpstreamCluster, host, t.Port) && !(e.UpstreamCluster == "" && authorityIs(e.Authority, t)) {
			continue
		}
		kept.AddEntry(&e, sc.Text())
		l.Entries++
		failed := false
		if e.ResponseCode == 503 {
			l.Status503++
			failed = true
		}
		if e.ResponseCode == 500 && e.HasFlag("NC") {
			l.NC500[wording.Dash(e.RouteName)]++
			failed = true
		}
		if p, ok := rbacPolicy(e.ResponseCodeDetails); ok && e.ResponseCode == 403 {
			l.RBACDenied++
			l.Policies[p]++
			failed = true
		}
		if e.Flags != "" && e.Is5xx() {
			for _, f := range strings.Split(e.Flags, ",") {
				l.Flags[f]++
			}
		}
		if failed && len(l.Samples) < accesslog.MaxSamples {
			l.Samples = append(l.Samples, sc.Text())
		}
	}
	l.Failures = kept.Failures
	return l
}

// authorityIs: the authority names the Service (NAME, NAME.NS, the FQDN,
// with or without the port).
func authorityIs(authority string, t cluster.Target) bool {
	h := authority
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	return h == t.Service || h == t.Service+"."+t.Namespace || strings.HasPrefix(h, t.Service+"."+t.Namespace+".svc")
}

// rbacPolicy reads the policy Envoy's RBAC filter names in
// rbac_access_denied_matched_policy[ns[NS]-policy[NAME]-rule[N]]: NS/NAME,
// or "none" when no ALLOW policy matched.
func rbacPolicy(details string) (string, bool) {
	_, rest, ok := strings.Cut(details, "rbac_access_denied_matched_policy[")
	if !ok {
		return "", false
	}
	rest = strings.TrimSuffix(rest, "]")
	if rest == "none" || rest == "" {
		return "none", true
	}
	ns, name := between(rest, "ns[", "]"), between(rest, "policy[", "]")
	if ns == "" || name == "" {
		return rest, true
	}
	return ns + "/" + name, true
}

func between(s, open, close string) string {
	_, after, ok := strings.Cut(s, open)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, close)
	return v
}

func evaluateWaypoint(t cluster.Target, in waypointInput) Result {
	r := Result{Status: StatusPass, Facts: Facts{}, Commands: waypointCommands(t, in.Input)}
	if !in.Binding.Use.Named {
		// No waypoint, so none refused anything: the one fact a rule
		// reads whatever the waypoint.
		r.Facts["waypoint_pods_read"], r.Facts["waypoint_rbac_denied"] = 0, 0
		r.Summary = "svc/" + t.Service + " names no waypoint (istio.io/use-waypoint on it or its namespace)"
		return r
	}
	if len(in.Reads) == 0 {
		if in.WaypointProblem != "" {
			r.Status, r.Summary = StatusError, in.WaypointProblem
			return r
		}
		// Nothing runs: nothing was refused there (the dataplane step says
		// why the waypoint has no pod).
		r.Facts["waypoint_pods_read"], r.Facts["waypoint_rbac_denied"] = 0, 0
		// Its routes are configuration: judged whether a pod runs or not.
		var problems []string
		if in.Routes != nil {
			problems = waypointRouteFacts(r, t, in)
		}
		r.Status = StatusWarn
		r.Summary = fmt.Sprintf("waypoint %s has no running pod to read (%d pods; %s)", in.Binding.Use.Ref, len(in.WaypointPods), in.Binding.State)
		if len(problems) > 0 {
			r.Status, r.Summary = StatusFail, r.Summary+"; "+strings.Join(problems, "; ")
		}
		return r
	}
	var problems, notes, raw []string
	notes = append(notes, in.FormatProblems...)
	reading := proxylog.NewReading()
	read, total, healthy := 0, 0, 0
	present := false
	var logs waypointLog
	logs.Flags, logs.Policies, logs.NC500 = map[string]int{}, map[string]int{}, map[string]int{}
	logsRead := 0
	r.Evidence.Columns = []string{"waypoint pod", "cluster", "hosts", "healthy", "tunnels to"}
	for _, rd := range in.Reads {
		if rd.AdminErr != "" {
			notes = append(notes, rd.AdminErr)
		} else {
			read++
			for _, cl := range rd.Clusters {
				if !envoy.IsWaypointCluster(cl.Name, t.Host(), t.Port) {
					continue
				}
				present = true
				h := 0
				var targets []string
				for _, host := range cl.Hosts {
					total++
					if host.Routable() {
						healthy++
						h++
					}
					tgt, _ := clustername.TunnelTarget(host.Address)
					targets = append(targets, tgt)
				}
				sort.Strings(targets)
				r.Evidence.Rows = append(r.Evidence.Rows, []string{rd.Pod.String(), cl.Name, fmt.Sprint(len(cl.Hosts)), fmt.Sprint(h), strings.Join(targets, " ")})
			}
		}
		if rd.LogErr != "" {
			notes = append(notes, rd.LogErr)
			continue
		}
		logsRead++
		reading.AddEnvoy(vocabulary.Waypoint, rd.Log.Failures)
		logs.Entries += rd.Log.Entries
		logs.Status503 += rd.Log.Status503
		logs.RBACDenied += rd.Log.RBACDenied
		for k, v := range rd.Log.Flags {
			logs.Flags[k] += v
		}
		for k, v := range rd.Log.Policies {
			logs.Policies[k] += v
		}
		for k, v := range rd.Log.NC500 {
			logs.NC500[k] += v
		}
		raw = append(raw, rd.Log.Samples...)
	}
	r.Facts["waypoint_pods_read"] = read
	if read > 0 {
		r.Facts["waypoint_cluster_present"] = present
		r.Facts["waypoint_hosts_total"] = total
		r.Facts["waypoint_hosts_healthy"] = healthy
		switch {
		case !present:
			problems = append(problems, fmt.Sprintf("the waypoint has no inbound-vip cluster for %s%s: the Service is not bound to it, or it is not in sync", t.Host(), wording.PortSuffix(t.Port)))
		case healthy == 0:
			problems = append(problems, fmt.Sprintf("the waypoint's cluster for %s has %d hosts, none healthy: 503 UH", t.Host(), total))
		}
	}
	if logsRead > 0 {
		r.Facts["waypoint_log_entries"] = logs.Entries
		r.Facts["waypoint_log_503"] = logs.Status503
		r.Facts["waypoint_log_flags"] = nonNil(wording.Counts(logs.Flags))
		r.Facts["waypoint_rbac_denied"] = logs.RBACDenied
		r.Facts["waypoint_rbac_policies"] = nonNil(slices.Sorted(maps.Keys(logs.Policies)))
		r.Facts["waypoint_unexplained"] = nonNil(reading.Unexplained())
		if u := reading.Summary(); u != "" {
			problems = append(problems, u)
		}
		raw = append(raw, reading.Raw()...)
		if logs.RBACDenied > 0 {
			problems = append(problems, fmt.Sprintf("the waypoint refused %d requests by AuthorizationPolicy (403; %s)", logs.RBACDenied, strings.Join(slices.Sorted(maps.Keys(logs.Policies)), ", ")))
		}
		if logs.Status503 > 0 {
			problems = append(problems, fmt.Sprintf("the waypoint answered %d 503s for svc/%s (%s)", logs.Status503, t.Service, strings.Join(wording.Counts(logs.Flags), ", ")))
		}
		nc500 := 0
		for _, n := range logs.NC500 {
			nc500 += n
		}
		r.Facts["waypoint_log_nc500"] = nc500
		r.Facts["waypoint_log_nc500_routes"] = nonNil(wording.ByCount(logs.NC500))
		if nc500 > 0 {
			problems = append(problems, fmt.Sprintf("the waypoint answered %d requests for svc/%s 500 NC (cluster_not_found: a Gateway API route to a cluster istiod does not build; %s)", nc500, t.Service, strings.Join(wording.Counts(logs.NC500), ", ")))
		}
	}
	if in.Routes != nil {
		problems = append(problems, waypointRouteFacts(r, t, in)...)
	} else if in.RoutesProblem != "" {
		notes = append(notes, in.RoutesProblem)
	}
	head := fmt.Sprintf("waypoint %s: %d/%d hosts healthy", in.Binding.Use.Ref, healthy, total)
	r.Status, r.Summary = verdict{Head: head, Problems: problems, Warnings: notes,
		Pass: fmt.Sprintf("%s, %d requests for svc/%s in its log, no 503 or 403", head, logs.Entries, t.Service)}.judge()
	r.Evidence.Raw = strings.Join(raw, "\n")
	return r
}

// waypointRouteFacts judges the Gateway API routes the waypoint applies
// for the Service (core/listener_waypoint.go getVirtualServiceForWaypoint:
// mesh routes of the Service's or the waypoint's namespace whose parent
// is the Service), as istiod converts them for a mesh parent, and sets
// their facts; it returns the problems they are. A backendRef istiod
// cannot resolve, or to a port its Service lacks, is routed to a cluster
// the waypoint does not have: 500 NC.
func waypointRouteFacts(r Result, t cluster.Target, in waypointInput) []string {
	cfg, ref := in.Routes, in.Binding.Use.Ref
	var partial []string
	for _, kind := range []string{mesh.KindHTTPRoute, mesh.KindGRPCRoute} {
		for _, ns := range wording.UniqueNonEmpty(t.Namespace, ref.Namespace) {
			if !cfg.GatewayAPI.Known(kind, ns) {
				partial = append(partial, fmt.Sprintf("the %ss of namespace %s were not read", kind, ns))
			}
		}
	}
	var routes, notFound, portMissing, problems []string
	source, share := "", 0
	for _, rv := range cfg.APIRoutes() {
		if rv.Namespace != t.Namespace && rv.Namespace != ref.Namespace {
			continue
		}
		var parent *mesh.ParentVerdict
		for i, p := range rv.Parents {
			if p.Mesh && p.ParentKind == "Service" && p.ParentNamespace == t.Namespace && p.ParentName == t.Service {
				parent = &rv.Parents[i]
			}
		}
		if parent == nil {
			continue
		}
		routes = append(routes, rv.Route)
		for _, bv := range rv.InvalidBackends(true) {
			entry := bv.Entry(rv.Route)
			switch bv.Invalid {
			case mesh.BackendNotFound, mesh.BackendInvalidKind:
				notFound = append(notFound, entry)
			case mesh.BackendPortMissing:
				portMissing = append(portMissing, entry)
			default:
				continue
			}
			problems = append(problems, fmt.Sprintf("%s (%d%% of the rule's requests): %s, the waypoint answers 500 NC", entry, bv.Percent, bv.Why))
			if src := meshParentBackendSource(parent, bv); source == "" || src != "status" && src != "model" {
				source = src
			}
		}
		if sh := rv.BrokenShare(true); sh > share {
			share = sh
		}
	}
	r.Facts["waypoint_api_routes"] = nonNil(routes)
	r.Facts["waypoint_api_backend_not_found"] = nonNil(notFound)
	r.Facts["waypoint_api_backend_port_missing"] = nonNil(portMissing)
	r.Facts["waypoint_api_backend_source"] = source
	r.Facts["waypoint_api_broken_share"] = share
	r.Facts["waypoint_api_partial"] = strings.Join(partial, "; ")
	for _, rt := range routes {
		r.Evidence.Rows = append(r.Evidence.Rows, []string{ref.String(), rt, "", "", "applied for svc/" + t.Service})
	}
	return problems
}

// meshParentBackendSource says where the verdict on an invalid backend of
// a route on the Service parent comes from: status when istiod's
// ResolvedRefs at the route's generation agrees (False for a reference it
// cannot resolve, True for a port the Service lacks, which it does not
// check), model without one, disagree or stale otherwise.
func meshParentBackendSource(p *mesh.ParentVerdict, b mesh.BackendVerdict) string {
	st := p.StatusResolvedRefs
	switch {
	case st == nil:
		return "model"
	case st.Stale:
		return "stale"
	case st.Status == "False" && b.Invalid != mesh.BackendPortMissing, st.Status == "True" && b.Invalid == mesh.BackendPortMissing:
		return "status"
	}
	return "disagree"
}

func waypointCommands(t cluster.Target, in ambientpath.Input) []string {
	ref := in.Binding.Use.Ref
	if !in.Binding.Use.Named {
		return []string{fmt.Sprintf("kubectl get service %s -n %s --show-labels", t.Service, t.Namespace)}
	}
	return []string{
		fmt.Sprintf("kubectl get gateways.gateway.networking.k8s.io %s -n %s -o yaml", ref.Name, ref.Namespace),
		fmt.Sprintf("istioctl proxy-config cluster deploy/%s -n %s --fqdn %s", ref.Name, ref.Namespace, t.Host()),
		fmt.Sprintf("istioctl proxy-config endpoint deploy/%s -n %s --cluster 'inbound-vip|%d|http|%s'", ref.Name, ref.Namespace, t.Port, t.Host()),
		fmt.Sprintf("kubectl logs -n %s deploy/%s --since=30m", ref.Namespace, ref.Name),
		fmt.Sprintf("kubectl get authorizationpolicy -n %s -o yaml", t.Namespace),
	}
}
