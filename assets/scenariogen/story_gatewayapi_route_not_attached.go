package main

import "time"

var gatewayAPIRouteNotAttached = Scenario{
	Name:    "gatewayapi-route-not-attached",
	Title:   "The orders team's HTTPRoute is not attached to the Gateway: its listener admits routes of its own namespace only (404 NR)",
	Summary: "shop/orders names Gateway istio-ingress/public, whose listener takes routes from istio-ingress alone: api.shop.example.com gets 404 NR",
	Description: `
The orders team published its API 30 minutes ago at https://api.shop.example.com with the HTTPRoute
shop/orders, whose parentRef is the platform team's Gateway istio-ingress/public (class istio). The
Gateway's listener http (*.shop.example.com) sets no allowedRoutes, so it admits routes of the
Gateway's own namespace only, like istio-ingress/storefront for www.shop.example.com. istiod writes
Accepted False NotAllowedByListeners on shop/orders and gives the gateway no route for its host:
every request for api.shop.example.com gets 404 NR route_not_found at public-istio, while the
storefront works. The on-call triages orders from the gateway pod.
`,
	Expect: []string{"gateway.route-not-attached"},
	Now:    at("2026-12-04T11:47:05"),
	Build:  buildGatewayAPIRouteNotAttached,
}

func buildGatewayAPIRouteNotAttached(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(2*day + 9*time.Hour)), nil)
	orders := s.ordersPods(now.Add(-(day + 2*time.Hour)), nil, nil)
	s.slice(Slice{Name: "web-x8v3m", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-p5t9k", Service: "orders", Endpoints: ready(orders...)})
	gw := s.apiGateway(APIGateway{Name: "public", Created: now.Add(-(35 * day)), Listeners: []APIListener{
		{Name: "http", Port: 80, Protocol: "HTTP", Hostname: "*.shop.example.com", Attached: 1}}})
	parent := Object{{"group", "gateway.networking.k8s.io"}, {"kind", "Gateway"}, {"name", "public"}, {"namespace", apiGatewayNamespace}}
	s.httpRoute(apiGatewayNamespace, "storefront", now.Add(-(35 * day)), Object{
		{"hostnames", []string{"www.shop.example.com"}}, {"parentRefs", []Object{{{"name", "public"}}}},
		{"rules", []Object{{{"backendRefs", []Object{{{"name", "web"}, {"namespace", "shop"}, {"port", 8080}}}}}}},
	}, RouteParentStatus{ParentRef: Object{{"group", "gateway.networking.k8s.io"}, {"kind", "Gateway"}, {"name", "public"}}, Accepted: routeAccepted, ResolvedRefs: refsResolved})
	s.world.add("shop-gatewayapi.yaml", Object{
		{"apiVersion", "gateway.networking.k8s.io/v1beta1"}, {"kind", "ReferenceGrant"},
		{"metadata", s.world.meta("ReferenceGrant", "shop", "storefront-from-ingress", now.Add(-(35 * day)), ObjectMeta{Extra: Object{{"generation", 1}}})},
		{"spec", Object{{"from", []Object{{{"group", "gateway.networking.k8s.io"}, {"kind", "HTTPRoute"}, {"namespace", apiGatewayNamespace}}}},
			{"to", []Object{{{"group", ""}, {"kind", "Service"}, {"name", "web"}}}}}},
	})
	s.httpRoute("shop", "orders", now.Add(-30*time.Minute), Object{
		{"hostnames", []string{"api.shop.example.com"}}, {"parentRefs", []Object{{{"name", "public"}, {"namespace", apiGatewayNamespace}}}},
		{"rules", []Object{{{"backendRefs", []Object{{{"name", "orders"}, {"port", 8080}}}}}}},
	}, RouteParentStatus{ParentRef: parent,
		Accepted:     [3]string{"False", "NotAllowedByListeners", `hostnames matched parent hostname "*.shop.example.com", but namespace "shop" is not allowed by the parent`},
		ResolvedRefs: refsResolved})
	s.webUpstreamLogs(web, orders, nil)
	s.succeed(web, "orders", orders, now.Add(-14*time.Minute), now.Add(-time.Second), 1500)
	s.traffic(now.Add(-14*time.Minute), now.Add(-time.Second), 800, func(t time.Time, i int) {
		if i%3 == 0 {
			s.apiCall(gw, "web", APICall{At: t, Host: "www.shop.example.com", Path: "/", To: web, Cluster: "outbound|8080||web.shop.svc.cluster.local", Route: "istio-ingress.storefront.0"})
			return
		}
		s.apiCall(gw, "orders", APICall{At: t, Host: "api.shop.example.com", Path: "/api/orders", Code: 404, Flags: "NR", Details: "route_not_found"})
	})
	s.recordAPIGateway(gw, []int{80}, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, []Object{routeConfig("http.80", []Object{
		gatewayVirtualHost("www.shop.example.com", 80,
			apiGatewayRoute(apiGatewayNamespace, "storefront", 0, "/", []WeightedCluster{{"outbound|8080||web.shop.svc.cluster.local", 100}})),
	})})
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: gw}
}
