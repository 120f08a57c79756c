package main

import "time"

var gatewayVSNotBound = Scenario{
	Name:    "gateway-vs-not-bound",
	Title:   "The public VirtualService for orders is not bound to the ingress gateway (404 NR)",
	Summary: "orders-public names its Gateway by a short name: the ingress gateway answers shop.example.com with 404 NR",
	Description: `
The orders API went public 40 minutes ago at https://shop.example.com/api/orders: a new VirtualService
shop/orders-public routes the host to orders and names its gateway "public-gateway". The Gateway is
istio-system/public-gateway, and a short gateway name is read in the VirtualService's own namespace:
istiod looks for shop/public-gateway, finds none, and never gives the route to istio-ingressgateway.
Every request for shop.example.com gets 404 NR route_not_found at the gateway, while www.shop.example.com
(bound correctly by web-public) and the mesh's own calls to orders work. The on-call triages orders from
the gateway pod.
`,
	Expect: []string{"gateway.vs-not-bound"},
	Now:    at("2026-12-03T10:24:41"),
	Build:  buildGatewayVSNotBound,
}

func buildGatewayVSNotBound(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(3*day + 5*time.Hour)), nil)
	orders := s.ordersPods(now.Add(-(2*day + 7*time.Hour)), nil, nil)
	s.slice(Slice{Name: "web-4f7xb", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-e75cb", Service: "orders", Endpoints: ready(orders...)})
	gw := s.ingressGateway(now.Add(-(9*day + time.Hour)))
	s.gatewayResource("public-gateway", now.Add(-(40 * day)), GatewayServer{80, "http", "HTTP", []string{"www.shop.example.com", "shop.example.com"}})
	s.virtualService("web-public", now.Add(-(40 * day)), Object{{"hosts", []string{"www.shop.example.com"}}, {"gateways", []string{"istio-system/public-gateway"}},
		{"http", []Object{{{"route", []Object{{{"destination", Object{{"host", "web.shop.svc.cluster.local"}}}}}}}}}})
	s.virtualService("orders-public", now.Add(-41*time.Minute), Object{{"hosts", []string{"shop.example.com"}}, {"gateways", []string{"public-gateway"}},
		{"http", []Object{{{"match", []Object{{{"uri", Object{{"prefix", "/api/orders"}}}}}}, {"route", []Object{
			{{"destination", Object{{"host", "orders.shop.svc.cluster.local"}, {"port", Object{{"number", 8080}}}}}}}}}}}})
	s.webUpstreamLogs(web, orders, nil)
	s.succeed(web, "orders", orders, now.Add(-14*time.Minute), now.Add(-time.Second), 1500)
	s.traffic(now.Add(-14*time.Minute), now.Add(-time.Second), 900, func(t time.Time, i int) {
		if i%3 == 0 {
			s.ingressCall(gw, IngressCall{At: t, Host: "www.shop.example.com", Path: "/", To: web, Service: "web", Route: "default"})
			return
		}
		s.ingressCall(gw, IngressCall{At: t, Host: "shop.example.com", Path: "/api/orders", Code: 404, Flags: "NR", Details: "route_not_found"})
	})
	s.recordGateway(gw, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, []Object{routeConfig("http.8080", []Object{
		gatewayVirtualHost("www.shop.example.com", 80, gatewayRoute("shop", "web-public", "default", "/",
			[]WeightedCluster{{"outbound|8080||web.shop.svc.cluster.local", 100}})),
	})})
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: gw}
}
