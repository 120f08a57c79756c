package main

import "time"

var meshRouteBackendNotFound = Scenario{
	Name:    "mesh-route-backend-not-found",
	Title:   "The mesh HTTPRoute for orders still sends 20% to orders-canary, whose Service was deleted (500 NC)",
	Summary: "shop/orders-canary (parentRef Service orders) splits 80/20 to orders and orders-canary; orders-canary is gone, so web's sidecar answers one call in five 500 NC",
	Description: `
The orders team runs its canary with a Gateway API mesh route (GAMMA): the HTTPRoute shop/orders-canary,
parentRef the Service orders, sends 80% to orders:8080 and 20% to orders-canary:8080. The canary was
rolled back 40 minutes ago and its Service deleted with it; the route stayed. istiod reports ResolvedRefs
False BackendNotFound on the route, keeps the weighted destination and routes its share to
outbound|8080||orders-canary.shop.svc.cluster.local, a cluster it no longer builds: under Gateway API
semantics web's sidecar answers those requests 500 NC cluster_not_found, one in five. The on-call
triages orders from web.
`,
	Expect: []string{"gateway.backend-not-found"},
	Now:    at("2026-12-04T22:41:19"),
	Build:  buildMeshRouteBackendNotFound,
}

func buildMeshRouteBackendNotFound(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(4*day + 2*time.Hour)), nil)
	orders := s.ordersPods(now.Add(-(2*day + 6*time.Hour)), nil, nil)
	s.slice(Slice{Name: "web-t6n2q", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-w3k9m", Service: "orders", Endpoints: ready(orders...)})
	s.ordersCanaryMeshRoute(now.Add(-(3 * day)))
	s.webUpstreamLogs(web, orders, nil)
	const route = "shop.orders-canary.0"
	toOrders := func(t time.Time, i int) {
		s.call(Call{From: web, Service: "orders", At: t, To: orders[i%3], Route: route})
	}
	// Envoy picks the backend by weight: one call in five is for
	// orders-canary, a cluster web's Envoy does not have.
	s.traffic(now.Add(-14*time.Minute), s.windowStart(), 1800, func(t time.Time, i int) {
		if s.rng.Float64() < 0.2 {
			s.call(Call{From: web, Service: "orders", At: t, Code: 500, Flags: "NC", Details: "cluster_not_found", NoUpstreamLog: true,
				TxBytes: exactly(0), Cluster: "-", Route: route})
			return
		}
		toOrders(t, i)
	})
	// The last three calls drew orders.
	s.inWindow(3, toOrders)
	weighted := []Object{
		{{"name", "outbound|8080||orders.shop.svc.cluster.local"}, {"weight", 80}},
		{{"name", "outbound|8080||orders-canary.shop.svc.cluster.local"}, {"weight", 20}},
	}
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{Routes: []Object{routeConfig("8080", []Object{
		virtualHost("shop", "orders", serviceIPs["orders"], 8080, Object{
			{"match", Object{{"prefix", "/"}}},
			{"route", Object{{"weighted_clusters", Object{{"clusters", weighted}}}, {"timeout", "0s"},
				{"retry_policy", defaultRetry()}, {"max_grpc_timeout", "0s"},
				// Gateway semantics: a cluster istiod did not build answers 500.
				{"cluster_not_found_response_code", "INTERNAL_SERVER_ERROR"}}},
			{"metadata", Object{{"filter_metadata", Object{{"istio", Object{{"config", "/apis/gateway.networking.k8s.io/v1/namespaces/shop/httproute/orders-canary"}}}}}}},
			{"decorator", Object{{"operation", "orders:8080/*"}}}, {"name", route}}),
	})}})
	return Target{Service: "orders", Source: web}
}

// ordersCanaryMeshRoute adds the HTTPRoute shop/orders-canary: parentRef
// the Service orders (GAMMA), 80% to orders:8080 and 20% to
// orders-canary:8080, a Service that does not exist, with the status
// istiod writes for it (Accepted, ResolvedRefs False BackendNotFound).
func (s *Shop) ordersCanaryMeshRoute(created time.Time) {
	parent := Object{{"group", ""}, {"kind", "Service"}, {"name", "orders"}}
	s.httpRoute("shop", "orders-canary", created, Object{
		{"parentRefs", []Object{parent}},
		{"rules", []Object{{{"backendRefs", []Object{
			{{"name", "orders"}, {"port", 8080}, {"weight", 80}},
			{{"name", "orders-canary"}, {"port", 8080}, {"weight", 20}},
		}}}}},
	}, RouteParentStatus{ParentRef: parent, Accepted: routeAccepted,
		ResolvedRefs: [3]string{"False", "BackendNotFound", "backend(orders-canary.shop.svc.cluster.local) not found"}})
}
