package main

import "time"

var gatewayListenerUnreachable = Scenario{
	Name:    "gateway-listener-unreachable",
	Title:   "The partner API's Gateway server listens on a port the ingress gateway's Service does not expose",
	Summary: "partner-gateway's server is on 8081, which no port of istio-ingressgateway's Service is or targets: partners cannot connect",
	Description: `
The partner API went live an hour ago at http://partner.shop.example.com:8081: the Gateway
istio-system/partner-gateway has a server on port 8081, and the VirtualService shop/orders-partner
routes its host to orders. istio-ingressgateway's Envoy listens on 8081 and holds the route, but its
Service exposes 80 (to 8080) and 443 (to 8443) only: the load balancer has no port 8081, so the
partners' connections never reach the gateway (istioctl analyze: IST0162). The public site on port 80
works, and the gateway's log shows no partner request at all. The on-call triages orders from the
gateway pod.
`,
	Expect: []string{"gateway.listener-unreachable"},
	Now:    at("2026-12-04T17:05:44"),
	Build:  buildGatewayListenerUnreachable,
}

func buildGatewayListenerUnreachable(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(6*day + time.Hour)), nil)
	orders := s.ordersPods(now.Add(-(2*day + 5*time.Hour)), nil, nil)
	s.slice(Slice{Name: "web-b3q7s", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-f6d2x", Service: "orders", Endpoints: ready(orders...)})
	gw := s.ingressGateway(now.Add(-(12*day + 3*time.Hour)))
	s.gatewayResource("public-gateway", now.Add(-(40 * day)), GatewayServer{80, "http", "HTTP", []string{"www.shop.example.com"}})
	s.gatewayResource("partner-gateway", now.Add(-62*time.Minute), GatewayServer{8081, "http-partner", "HTTP", []string{"partner.shop.example.com"}})
	s.virtualService("web-public", now.Add(-(40 * day)), Object{{"hosts", []string{"www.shop.example.com"}}, {"gateways", []string{"istio-system/public-gateway"}},
		{"http", []Object{{{"route", []Object{{{"destination", Object{{"host", "web.shop.svc.cluster.local"}}}}}}}}}})
	s.virtualService("orders-partner", now.Add(-62*time.Minute), Object{{"hosts", []string{"partner.shop.example.com"}}, {"gateways", []string{"istio-system/partner-gateway"}},
		{"http", []Object{{{"route", []Object{{{"destination", Object{{"host", "orders.shop.svc.cluster.local"}, {"port", Object{{"number", 8080}}}}}}}}}}}})
	s.webUpstreamLogs(web, orders, nil)
	s.succeed(web, "orders", orders, now.Add(-14*time.Minute), now.Add(-time.Second), 1500)
	s.traffic(now.Add(-14*time.Minute), now.Add(-time.Second), 1200, func(t time.Time, i int) {
		s.ingressCall(gw, IngressCall{At: t, Host: "www.shop.example.com", Path: "/", To: web, Service: "web", Route: "default"})
	})
	sc := s.recordSidecar(gw, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{Listeners: []Listener{{"0.0.0.0_8080", "0.0.0.0", 8080}, {"0.0.0.0_8081", "0.0.0.0", 8081}}, Routes: []Object{
		routeConfig("http.8080", []Object{
			gatewayVirtualHost("www.shop.example.com", 80, gatewayRoute("shop", "web-public", "default", "/",
				[]WeightedCluster{{"outbound|8080||web.shop.svc.cluster.local", 100}})),
		}),
		routeConfig("http.8081", []Object{
			gatewayVirtualHost("partner.shop.example.com", 8081, gatewayRoute("shop", "orders-partner", "default", "/",
				[]WeightedCluster{{"outbound|8080||orders.shop.svc.cluster.local", 100}})),
		}),
	}})
	sc.NodeType = "router"
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: gw}
}
