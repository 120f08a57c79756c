package main

import "time"

var gatewayAPIBackendPortMissing = Scenario{
	Name:    "gatewayapi-backend-port-missing",
	Title:   "The HTTPRoute for the orders API names a port the orders Service does not have (500 NC)",
	Summary: "shop/orders sends /api/orders to orders:80, a port the Service lacks: the Gateway API gateway answers 500 NC",
	Description: `
The orders API moved to the Gateway API 25 minutes ago: the HTTPRoute shop/orders, attached to the
Gateway istio-ingress/public (class istio), sends https://shop.example.com/api/orders to the Service
orders on port 80, "the port the public sees". orders listens on 8080 only. istiod does not check a
backendRef's port: the route's ResolvedRefs stays True and its requests go to
outbound|80||orders.shop.svc.cluster.local, a cluster it never builds. The gateway public-istio answers
every /api/orders request 500 NC cluster_not_found; the storefront (shop/web, the same host) works.
The on-call triages orders from the gateway pod.
`,
	Expect: []string{"gateway.backend-port-missing"},
	Now:    at("2026-12-04T09:12:37"),
	Build:  buildGatewayAPIBackendPortMissing,
}

func buildGatewayAPIBackendPortMissing(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(3*day + 4*time.Hour)), nil)
	orders := s.ordersPods(now.Add(-(day + 6*time.Hour)), nil, nil)
	s.slice(Slice{Name: "web-7qk2d", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-c4n8z", Service: "orders", Endpoints: ready(orders...)})
	gw := s.apiGateway(APIGateway{Name: "public", Created: now.Add(-(20 * day)), Listeners: []APIListener{
		{Name: "http", Port: 80, Protocol: "HTTP", Hostname: "shop.example.com", AllowedFrom: "All", Attached: 2}}})
	parent := Object{{"group", "gateway.networking.k8s.io"}, {"kind", "Gateway"}, {"name", "public"}, {"namespace", apiGatewayNamespace}}
	s.httpRoute("shop", "web", now.Add(-(20 * day)), Object{
		{"hostnames", []string{"shop.example.com"}}, {"parentRefs", []Object{{{"name", "public"}, {"namespace", apiGatewayNamespace}}}},
		{"rules", []Object{{{"backendRefs", []Object{{{"name", "web"}, {"port", 8080}}}}, {"matches", []Object{{{"path", Object{{"type", "PathPrefix"}, {"value", "/"}}}}}}}}},
	}, RouteParentStatus{ParentRef: parent, Accepted: routeAccepted, ResolvedRefs: refsResolved})
	s.httpRoute("shop", "orders", now.Add(-25*time.Minute), Object{
		{"hostnames", []string{"shop.example.com"}}, {"parentRefs", []Object{{{"name", "public"}, {"namespace", apiGatewayNamespace}}}},
		{"rules", []Object{{{"backendRefs", []Object{{{"name", "orders"}, {"port", 80}}}}, {"matches", []Object{{{"path", Object{{"type", "PathPrefix"}, {"value", "/api/orders"}}}}}}}}},
	}, RouteParentStatus{ParentRef: parent, Accepted: routeAccepted, ResolvedRefs: refsResolved})
	s.webUpstreamLogs(web, orders, nil)
	s.succeed(web, "orders", orders, now.Add(-14*time.Minute), now.Add(-time.Second), 1500)
	const missing = "outbound|80||orders.shop.svc.cluster.local"
	s.traffic(now.Add(-14*time.Minute), now.Add(-time.Second), 800, func(t time.Time, i int) {
		if i%3 == 0 {
			s.apiCall(gw, "web", APICall{At: t, Host: "shop.example.com", Path: "/", To: web, Cluster: "outbound|8080||web.shop.svc.cluster.local", Route: "shop.web.0"})
			return
		}
		s.apiCall(gw, "orders", APICall{At: t, Host: "shop.example.com", Path: "/api/orders", Code: 500, Flags: "NC", Details: "cluster_not_found", Route: "shop.orders.0"})
	})
	s.recordAPIGateway(gw, []int{80}, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, []Object{routeConfig("http.80", []Object{
		gatewayVirtualHost("shop.example.com", 80,
			apiGatewayRoute("shop", "orders", 0, "/api/orders", []WeightedCluster{{missing, 100}}),
			apiGatewayRoute("shop", "web", 0, "/", []WeightedCluster{{"outbound|8080||web.shop.svc.cluster.local", 100}})),
	})})
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: gw}
}
