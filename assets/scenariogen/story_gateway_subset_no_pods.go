package main

import "time"

var gatewaySubsetNoPods = Scenario{
	Name:    "gateway-subset-no-pods",
	Title:   "The ingress gateway sends 20% of shop.example.com/api/orders to a subset without pods",
	Summary: "the public route splits 80/20 to a canary subset scaled to zero: 503 UH at the ingress gateway",
	Description: `
shop/orders-public, bound to istio-system/public-gateway, splits https://shop.example.com/api/orders
80/20 between the DestinationRule subsets stable (version v1) and canary (version v2). The canary
Deployment was scaled to zero an hour ago and the route was not changed back: istio-ingressgateway's
cluster outbound|8080|canary|orders.shop.svc.cluster.local has no host, and one public request in five
is 503 UH no_healthy_upstream at the gateway. Calls inside the mesh, which take no VirtualService,
work. The on-call triages orders from the gateway pod.
`,
	Expect: []string{"dr.subset-no-pods"},
	Now:    at("2026-12-03T14:02:19"),
	Build:  buildGatewaySubsetNoPods,
}

func buildGatewaySubsetNoPods(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(4*day + 2*time.Hour)), nil)
	orders := s.ordersPods(now.Add(-(2*day + 3*time.Hour)), nil, nil)
	s.slice(Slice{Name: "web-55da8", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-9d693", Service: "orders", Endpoints: ready(orders...)})
	gw := s.ingressGateway(now.Add(-(9*day + 6*time.Hour)))
	s.gatewayResource("public-gateway", now.Add(-(40 * day)), GatewayServer{80, "http", "HTTP", []string{"shop.example.com"}})
	const host = "orders.shop.svc.cluster.local"
	s.destinationRule("orders", now.Add(-(6 * day)), Object{{"host", host}, {"subsets", []Object{
		{{"name", "stable"}, {"labels", Object{{"version", "v1"}}}},
		{{"name", "canary"}, {"labels", Object{{"version", "v2"}}}},
	}}})
	s.virtualService("orders-public", now.Add(-(3 * day)), Object{{"hosts", []string{"shop.example.com"}}, {"gateways", []string{"istio-system/public-gateway"}},
		{"http", []Object{{{"name", "orders-canary"}, {"match", []Object{{{"uri", Object{{"prefix", "/api/orders"}}}}}}, {"route", []Object{
			{{"destination", Object{{"host", host}, {"subset", "stable"}}}, {"weight", 80}},
			{{"destination", Object{{"host", host}, {"subset", "canary"}}}, {"weight", 20}},
		}}}}}})
	s.webUpstreamLogs(web, orders, nil)
	s.succeed(web, "orders", orders, now.Add(-13*time.Minute), now.Add(-time.Second), 1600)
	toCanary := func(t time.Time) {
		s.ingressCall(gw, IngressCall{At: t, Host: "shop.example.com", Path: "/api/orders", Service: "orders", Subset: "canary",
			Code: 503, Flags: "UH", Details: "no_healthy_upstream", Route: "orders-canary"})
	}
	toStable := func(t time.Time, to *Pod) {
		s.ingressCall(gw, IngressCall{At: t, Host: "shop.example.com", Path: "/api/orders", To: to, Service: "orders", Subset: "stable", Route: "orders-canary"})
	}
	// Envoy picks the subset by weight: one public request in five goes to
	// canary.
	s.traffic(now.Add(-13*time.Minute), s.windowStart(), 700, func(t time.Time, i int) {
		if s.rng.Float64() < 0.2 {
			toCanary(t)
			return
		}
		toStable(t, orders[i%3])
	})
	// It is still happening: one of the last five requests.
	s.inWindow(5, func(t time.Time, i int) {
		if i == 2 {
			toCanary(t)
			return
		}
		toStable(t, orders[i%3])
	})
	n := s.countResponses(503)
	s.recordGateway(gw, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "orders", Pods: orders, Subset: "stable"}),
		s.outbound(Outbound{Service: "orders", Subset: "canary", Stats: map[string]int{"cx_none_healthy": n, "cx_total": 0, "update_empty": 1}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, []Object{routeConfig("http.8080", []Object{
		gatewayVirtualHost("shop.example.com", 80, gatewayRoute("shop", "orders-public", "orders-canary", "/api/orders", []WeightedCluster{
			{"outbound|8080|stable|orders.shop.svc.cluster.local", 80},
			{"outbound|8080|canary|orders.shop.svc.cluster.local", 20},
		})),
	})})
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: gw}
}
