package main

import "time"

var gatewayAPIRefNotPermitted = Scenario{
	Name:    "gatewayapi-ref-not-permitted",
	Title:   "The ingress route to orders crosses into shop without a ReferenceGrant (500 NC)",
	Summary: "istio-ingress/orders-api sends api.shop.example.com to shop/orders, which no ReferenceGrant admits: 500 NC at the Gateway API gateway",
	Description: `
The platform team keeps the ingress routes beside the Gateway istio-ingress/public (class istio):
istio-ingress/storefront sends www.shop.example.com to shop/web, which the ReferenceGrant
shop/storefront-from-ingress admits. Twenty minutes ago they added istio-ingress/orders-api for
https://api.shop.example.com, to the Service orders in shop, and did not extend the grant, which names
web alone. istiod writes ResolvedRefs False RefNotPermitted on the route and empties its destination:
the gateway public-istio routes api.shop.example.com to UnknownService and answers every request
500 NC cluster_not_found. The on-call triages orders from the gateway pod.
`,
	Expect: []string{"gateway.ref-not-permitted"},
	Now:    at("2026-12-04T15:31:52"),
	Build:  buildGatewayAPIRefNotPermitted,
}

func buildGatewayAPIRefNotPermitted(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(5*day + 3*time.Hour)), nil)
	orders := s.ordersPods(now.Add(-(3*day + 8*time.Hour)), nil, nil)
	s.slice(Slice{Name: "web-h2r6b", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-m7w4j", Service: "orders", Endpoints: ready(orders...)})
	gw := s.apiGateway(APIGateway{Name: "public", Created: now.Add(-(60 * day)), Listeners: []APIListener{
		{Name: "http", Port: 80, Protocol: "HTTP", Hostname: "*.shop.example.com", Attached: 2}}})
	parent := Object{{"group", "gateway.networking.k8s.io"}, {"kind", "Gateway"}, {"name", "public"}}
	s.httpRoute(apiGatewayNamespace, "storefront", now.Add(-(60 * day)), Object{
		{"hostnames", []string{"www.shop.example.com"}}, {"parentRefs", []Object{{{"name", "public"}}}},
		{"rules", []Object{{{"backendRefs", []Object{{{"name", "web"}, {"namespace", "shop"}, {"port", 8080}}}}}}},
	}, RouteParentStatus{ParentRef: parent, Accepted: routeAccepted, ResolvedRefs: refsResolved})
	s.world.add("shop-gatewayapi.yaml", Object{
		{"apiVersion", "gateway.networking.k8s.io/v1beta1"}, {"kind", "ReferenceGrant"},
		{"metadata", s.world.meta("ReferenceGrant", "shop", "storefront-from-ingress", now.Add(-(60 * day)), ObjectMeta{Extra: Object{{"generation", 1}}})},
		{"spec", Object{{"from", []Object{{{"group", "gateway.networking.k8s.io"}, {"kind", "HTTPRoute"}, {"namespace", apiGatewayNamespace}}}},
			{"to", []Object{{{"group", ""}, {"kind", "Service"}, {"name", "web"}}}}}},
	})
	s.httpRoute(apiGatewayNamespace, "orders-api", now.Add(-20*time.Minute), Object{
		{"hostnames", []string{"api.shop.example.com"}}, {"parentRefs", []Object{{{"name", "public"}}}},
		{"rules", []Object{{{"backendRefs", []Object{{{"name", "orders"}, {"namespace", "shop"}, {"port", 8080}}}}}}},
	}, RouteParentStatus{ParentRef: parent, Accepted: routeAccepted,
		ResolvedRefs: [3]string{"False", "RefNotPermitted", `backendRef orders/shop not accessible to a HTTPRoute in namespace "istio-ingress" (missing a ReferenceGrant?)`}})
	s.webUpstreamLogs(web, orders, nil)
	s.succeed(web, "orders", orders, now.Add(-14*time.Minute), now.Add(-time.Second), 1500)
	s.traffic(now.Add(-14*time.Minute), now.Add(-time.Second), 800, func(t time.Time, i int) {
		if i%3 == 0 {
			s.apiCall(gw, "web", APICall{At: t, Host: "www.shop.example.com", Path: "/", To: web, Cluster: "outbound|8080||web.shop.svc.cluster.local", Route: "istio-ingress.storefront.0"})
			return
		}
		s.apiCall(gw, "orders", APICall{At: t, Host: "api.shop.example.com", Path: "/api/orders", Code: 500, Flags: "NC", Details: "cluster_not_found", Route: "istio-ingress.orders-api.0"})
	})
	s.recordAPIGateway(gw, []int{80}, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, []Object{routeConfig("http.80", []Object{
		gatewayVirtualHost("api.shop.example.com", 80,
			apiGatewayRoute(apiGatewayNamespace, "orders-api", 0, "/", []WeightedCluster{{"UnknownService", 100}})),
		gatewayVirtualHost("www.shop.example.com", 80,
			apiGatewayRoute(apiGatewayNamespace, "storefront", 0, "/", []WeightedCluster{{"outbound|8080||web.shop.svc.cluster.local", 100}})),
	})})
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: gw}
}
