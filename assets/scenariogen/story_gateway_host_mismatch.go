package main

import "time"

var gatewayHostMismatch = Scenario{
	Name:    "gateway-host-mismatch",
	Title:   "The public VirtualService names the Service's short host: the ingress gateway 404s shop.example.com",
	Summary: "hosts: [orders] on a \"*\" Gateway binds orders.shop.svc.cluster.local only; clients send shop.example.com and get 404 NR",
	Description: `
shop/orders-public was copied from the mesh's VirtualService and bound to istio-system/public-gateway,
whose server takes every host ("*"). Its hosts still say "orders": Istio completes a short name to
orders.shop.svc.cluster.local, so istio-ingressgateway builds a virtual host for that name only. Browsers
and the mobile app send Host: shop.example.com, which no virtual host takes: 404 NR route_not_found
for every public request, while the configuration looks bound. The on-call triages orders from the
gateway pod.
`,
	Expect: []string{"gateway.host-mismatch"},
	Now:    at("2026-12-03T16:51:08"),
	Build:  buildGatewayHostMismatch,
}

func buildGatewayHostMismatch(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(2*day + 9*time.Hour)), nil)
	orders := s.ordersPods(now.Add(-(day + 20*time.Hour)), nil, nil)
	s.slice(Slice{Name: "web-33f4d", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-abebe", Service: "orders", Endpoints: ready(orders...)})
	gw := s.ingressGateway(now.Add(-(11*day + 3*time.Hour)))
	s.gatewayResource("public-gateway", now.Add(-(40 * day)), GatewayServer{80, "http", "HTTP", []string{"*"}})
	s.virtualService("orders-public", now.Add(-26*time.Minute), Object{{"hosts", []string{"orders"}}, {"gateways", []string{"istio-system/public-gateway"}},
		{"http", []Object{{{"route", []Object{{{"destination", Object{{"host", "orders"}}}}}}}}}})
	s.webUpstreamLogs(web, orders, nil)
	s.succeed(web, "orders", orders, now.Add(-14*time.Minute), now.Add(-time.Second), 1500)
	s.traffic(now.Add(-14*time.Minute), now.Add(-time.Second), 1100, func(t time.Time, i int) {
		path := []string{"/api/orders", "/api/orders/4471", "/api/orders?customer=8812"}[i%3]
		s.ingressCall(gw, IngressCall{At: t, Host: "shop.example.com", Path: path, Code: 404, Flags: "NR", Details: "route_not_found"})
	})
	s.recordGateway(gw, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, []Object{routeConfig("http.8080", []Object{
		gatewayVirtualHost("orders.shop.svc.cluster.local", 80, gatewayRoute("shop", "orders-public", "default", "/",
			[]WeightedCluster{{"outbound|8080||orders.shop.svc.cluster.local", 100}})),
	})})
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: gw}
}
