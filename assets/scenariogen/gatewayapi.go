package main

import (
	"fmt"
	"strconv"
	"time"
)

// The shop's Gateway API ingress: a Gateway of class istio in
// istio-ingress, and what istiod's deployment controller makes of it
// (gwc/deploymentcontroller.go, kube-gateway.yaml): the Deployment's pod
// NAME-istio running `proxy router`, labelled with the Gateway's name, and
// the Service NAME-istio with the status port and one port a distinct
// listener port (targetPort the same). istiod writes what it made of the
// Gateway and its routes in their status.

const (
	apiGatewayNamespace = "istio-ingress"
	apiGatewayClusterIP = "10.96.100.20"
	// controllerIstio is istiod's gateway controller name.
	controllerIstio = "istio.io/gateway-controller"
)

// APIListener is one listener of a Gateway API Gateway.
type APIListener struct {
	Name     string
	Port     int
	Protocol string
	Hostname string
	// AllowedFrom is allowedRoutes.namespaces.from ("" leaves it unset:
	// Same).
	AllowedFrom string
	// Attached is the status' attachedRoutes.
	Attached int
}

// APIGateway is a managed Gateway API Gateway in istio-ingress.
type APIGateway struct {
	Name      string
	Created   time.Time
	Listeners []APIListener
}

// Service is the name of the Service istiod deploys for it.
func (g APIGateway) Service() string { return g.Name + "-istio" }

// apiGateway adds the namespace istio-ingress, the GatewayClass istio,
// the Gateway with the status istiod wrote, and the Deployment's pod,
// Service and EndpointSlice; it returns the gateway pod.
func (s *Shop) apiGateway(g APIGateway) *Pod {
	w := s.world
	ns := apiGatewayNamespace
	w.Namespace(ns, g.Created.Add(-time.Hour), "")
	w.add("gatewayclasses.yaml", Object{
		{"apiVersion", "gateway.networking.k8s.io/v1"}, {"kind", "GatewayClass"},
		{"metadata", w.meta("GatewayClass", "", "istio", g.Created.Add(-30*time.Minute), ObjectMeta{Extra: Object{{"generation", 1}}})},
		{"spec", Object{{"controllerName", controllerIstio}, {"description", "The default Istio GatewayClass"}}},
		{"status", Object{{"conditions", []Object{condition("Accepted", "True", "Accepted", "Handled by Istio controller", g.Created.Add(-30*time.Minute))}}}},
	})
	var listeners, listenerStatus []Object
	for _, l := range g.Listeners {
		lo := Object{{"name", l.Name}, {"port", l.Port}, {"protocol", l.Protocol}}
		if l.Hostname != "" {
			lo.Set("hostname", l.Hostname)
		}
		if l.AllowedFrom != "" {
			lo.Set("allowedRoutes", Object{{"namespaces", Object{{"from", l.AllowedFrom}}}})
		}
		listeners = append(listeners, lo)
		at := g.Created.Add(3 * time.Second)
		listenerStatus = append(listenerStatus, Object{
			{"attachedRoutes", l.Attached},
			{"conditions", []Object{
				condition("Accepted", "True", "Accepted", "No errors found", at),
				condition("Conflicted", "False", "NoConflicts", "No errors found", at),
				condition("Programmed", "True", "Programmed", "No errors found", at),
				condition("ResolvedRefs", "True", "ResolvedRefs", "No errors found", at),
			}},
			{"name", l.Name},
			{"supportedKinds", []Object{{{"group", "gateway.networking.k8s.io"}, {"kind", "HTTPRoute"}}, {{"group", "gateway.networking.k8s.io"}, {"kind", "GRPCRoute"}}}},
		})
	}
	at := g.Created.Add(3 * time.Second)
	host := fmt.Sprintf("%s.%s.svc.%s", g.Service(), ns, meshDomain)
	w.add(ns+"-gatewayapi.yaml", Object{
		{"apiVersion", "gateway.networking.k8s.io/v1"}, {"kind", "Gateway"},
		{"metadata", w.meta("Gateway", ns, g.Name, g.Created, ObjectMeta{Extra: Object{{"generation", 1}}})},
		{"spec", Object{{"gatewayClassName", "istio"}, {"listeners", listeners}}},
		{"status", Object{
			{"addresses", []Object{{{"type", "Hostname"}, {"value", host}}}},
			{"conditions", []Object{
				condition("Accepted", "True", "Accepted", "Resource accepted", at),
				condition("Programmed", "True", "Programmed", "Resource programmed, assigned to service(s) "+host+":"+strconv.Itoa(g.Listeners[0].Port), at),
			}},
			{"listeners", listenerStatus},
		}},
	})

	podName := g.Service() + "-5d9c7b8f6-w4q8n"
	labels := Object{{"gateway.istio.io/managed", "istio.io-gateway-controller"}, {"gateway.networking.k8s.io/gateway-class-name", "istio"},
		{"gateway.networking.k8s.io/gateway-name", g.Name}, {"istio.io/gateway-name", g.Name},
		{"pod-template-hash", lastDashPart(withoutLastDashPart(podName))},
		{"service.istio.io/canonical-name", g.Service()}, {"service.istio.io/canonical-revision", "latest"}, {"sidecar.istio.io/inject", "false"}}
	p := s.routerPod(RouterPod{
		Namespace: ns, Name: podName, Workload: g.Service(), Host: 40, Created: g.Created.Add(2 * time.Second), Labels: labels,
		Ports: []Object{
			{{"containerPort", 15021}, {"name", "status-port"}, {"protocol", "TCP"}},
			{{"containerPort", 15090}, {"name", "http-envoy-prom"}, {"protocol", "TCP"}},
		},
	})
	ports := []ServicePort{{"status-port", 15021, 15021}}
	seen := map[int]bool{}
	for _, l := range g.Listeners {
		if !seen[l.Port] {
			seen[l.Port] = true
			ports = append(ports, ServicePort{l.Name, l.Port, l.Port})
		}
	}
	selector := Object{{"gateway.networking.k8s.io/gateway-name", g.Name}}
	w.Service(ServiceSpec{
		Namespace: ns, Name: g.Service(), ClusterIP: apiGatewayClusterIP, Selector: selector, Created: g.Created.Add(time.Second),
		Ports: ports, Labels: Object{{"gateway.istio.io/managed", "istio.io-gateway-controller"}, {"gateway.networking.k8s.io/gateway-name", g.Name}},
	})
	w.EndpointSlice(ns, g.Service(), g.Service()+"-k2v9d", ready(p), g.Listeners[0].Name, g.Listeners[0].Port, g.Created.Add(10*time.Second))
	s.proxyLog(p)
	return p
}

// condition is a status condition istiod wrote at generation 1.
func condition(typ, status, reason, message string, at time.Time) Object {
	return Object{{"lastTransitionTime", apiTime(at)}, {"message", message}, {"observedGeneration", 1}, {"reason", reason}, {"status", status}, {"type", typ}}
}

// RouteParentStatus is what istiod wrote for one parentRef of a route.
type RouteParentStatus struct {
	ParentRef Object
	// Accepted and ResolvedRefs: status, reason, message.
	Accepted, ResolvedRefs [3]string
}

// httpRoute adds an HTTPRoute (generation 1) in namespace with the status
// istiod wrote at created plus a few seconds.
func (s *Shop) httpRoute(namespace, name string, created time.Time, spec Object, parents ...RouteParentStatus) {
	at := created.Add(2 * time.Second)
	var statusParents []Object
	for _, p := range parents {
		statusParents = append(statusParents, Object{
			{"conditions", []Object{
				condition("Accepted", p.Accepted[0], p.Accepted[1], p.Accepted[2], at),
				condition("ResolvedRefs", p.ResolvedRefs[0], p.ResolvedRefs[1], p.ResolvedRefs[2], at),
			}},
			{"controllerName", controllerIstio},
			{"parentRef", p.ParentRef},
		})
	}
	s.world.add(namespace+"-gatewayapi.yaml", Object{
		{"apiVersion", "gateway.networking.k8s.io/v1"}, {"kind", "HTTPRoute"},
		{"metadata", s.world.meta("HTTPRoute", namespace, name, created, ObjectMeta{Extra: Object{{"generation", 1}}})},
		{"spec", spec},
		{"status", Object{{"parents", statusParents}}},
	})
}

// accepted is a parentRef istiod accepted with every reference resolved.
var (
	routeAccepted = [3]string{"True", "Accepted", "Route was valid"}
	refsResolved  = [3]string{"True", "ResolvedRefs", "All references resolved"}
)

// recordAPIGateway saves a Gateway API gateway's Envoy admin output: one
// listener a listener port (istiod binds them to the Service port's
// targetPort, the same here).
func (s *Shop) recordAPIGateway(p *Pod, ports []int, clusters []*Cluster, routes []Object) *Sidecar {
	var ls []Listener
	for _, port := range ports {
		ls = append(ls, Listener{fmt.Sprintf("0.0.0.0_%d", port), "0.0.0.0", port})
	}
	sc := s.recordSidecar(p, clusters, EnvoyState{Listeners: ls, Routes: routes})
	sc.NodeType = "router"
	return sc
}

// apiGatewayRoute is a route istiod converts from an HTTPRoute rule:
// named NAMESPACE.NAME.RULE, prefix match, to one cluster or weighted
// clusters.
func apiGatewayRoute(routeNamespace, route string, rule int, prefix string, clusters []WeightedCluster) Object {
	r := gatewayRoute(routeNamespace, route, fmt.Sprintf("%s.%s.%d", routeNamespace, route, rule), prefix, clusters)
	r.Set("metadata", Object{{"filter_metadata", Object{{"istio", Object{{"config", "/apis/gateway.networking.k8s.io/v1/namespaces/" + routeNamespace + "/httproute/" + route}}}}}})
	// Gateway semantics: a cluster istiod did not build answers 500.
	action, _ := r.Get("route")
	r.Set("route", append(action.(Object), Object{{"cluster_not_found_response_code", "INTERNAL_SERVER_ERROR"}}...))
	return r
}

// APICall is one request through a Gateway API gateway on port 80.
type APICall struct {
	At   time.Time
	Host string
	Path string
	// To is the pod the request reached (nil for none); Cluster the
	// route's cluster ("" for none).
	To      *Pod
	Cluster string
	// Code defaults to 200; Flags, Details to the success's.
	Code           int
	Flags, Details string
	Route          string
}

// apiCall logs a request through the Gateway API gateway gw: its line in
// the gateway's access log, the upstream sidecar's when it reached a pod,
// and the gateway's istio_requests_total.
func (s *Shop) apiCall(gw *Pod, service string, c APICall) {
	rng := s.rng
	code := firstNonZero(c.Code, 200)
	flags, details := firstNonEmpty(c.Flags, "-"), firstNonEmpty(c.Details, "via_upstream")
	upstreamHost, upstreamLocal := "-", "-"
	if c.To != nil {
		upstreamHost = c.To.IP + ":8080"
		upstreamLocal = fmt.Sprintf("%s:%d", gw.IP, 30000+rng.IntN(30000))
	}
	duration, tx := 0, 0
	if code == 200 {
		duration, tx = 2+rng.IntN(14), 400+rng.IntN(900)
	}
	client := fmt.Sprintf("198.51.100.%d", 10+rng.IntN(200))
	port := 30000 + rng.IntN(30000)
	requestID := randomUUID(rng)
	s.world.log(gw.Namespace, gw.Name, "istio-proxy", false, s.accessLine(AccessEntry{
		Start: c.At, Method: "GET", Path: c.Path, Code: code, Flags: flags, Details: details,
		UpstreamHost: upstreamHost, Cluster: firstNonEmpty(c.Cluster, "-"), UpstreamLocal: upstreamLocal,
		DownstreamLocal: gw.IP + ":80", DownstreamRemote: gatewayClient + ":" + strconv.Itoa(port),
		Authority: c.Host, ForwardedFor: client, UserAgent: "Mozilla/5.0", RequestID: requestID,
		TxBytes: tx, DurationMs: duration, Route: firstNonEmpty(c.Route, "-"),
	}))
	name, namespace := c.Host, "unknown"
	if c.To != nil {
		name, namespace = service, c.To.Namespace
	}
	s.requests = append(s.requests, request{gw, c.At, code, flags, name, namespace, c.To})
	if c.To != nil {
		s.world.log(c.To.Namespace, c.To.Name, "istio-proxy", false, s.accessLine(AccessEntry{
			Start: c.At.Add(time.Millisecond), Method: "GET", Path: c.Path, Code: code, Flags: "-", Details: "via_upstream",
			UpstreamHost: upstreamHost, Cluster: "inbound|8080||", UpstreamLocal: fmt.Sprintf("127.0.0.6:%d", 30000+rng.IntN(30000)),
			DownstreamLocal: upstreamHost, DownstreamRemote: fmt.Sprintf("%s:%d", gw.IP, port+7),
			Authority: c.Host, ForwardedFor: client, UserAgent: "Mozilla/5.0", RequestID: requestID,
			TxBytes: tx, DurationMs: max(duration-1, 1),
			SNI: fmt.Sprintf("outbound_.8080_._.%s.%s.svc.%s", service, c.To.Namespace, meshDomain),
		}))
	}
}

func firstNonZero(v, fallback int) int {
	if v != 0 {
		return v
	}
	return fallback
}
