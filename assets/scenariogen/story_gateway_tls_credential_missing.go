package main

import "time"

var gatewayTLSCredentialMissing = Scenario{
	Name:    "gateway-tls-credential-missing",
	Title:   "The HTTPS server's certificate Secret is in the app's namespace, not the ingress gateway's",
	Summary: "shop-gateway's HTTPS server names credentialName shop-example-com-tls, which istiod looks for in istio-system: the gateway never gets the certificate and resets every TLS handshake",
	Description: `
https://shop.example.com went live 35 minutes ago: the Gateway istio-system/shop-gateway got an HTTPS
server on 443 (tls SIMPLE, credentialName shop-example-com-tls) and the VirtualService shop/orders-public
routes /api/orders there to orders. cert-manager issued the certificate, but its Certificate was created
in shop, so the Secret shop-example-com-tls is in shop. istiod reads a credentialName from the gateway
pod's namespace (istio-system), finds none and sends istio-ingressgateway no certificate: its Envoy keeps
the SDS secret kubernetes://shop-example-com-tls warming and resets every TLS handshake on 443. The
browsers see a connection reset; the gateway's access log has no line for them. The storefront on plain
HTTP (www.shop.example.com) works. The on-call triages orders from the gateway pod.
`,
	Expect: []string{"gateway.tls-credential-missing"},
	Now:    at("2026-12-04T21:14:37"),
	Build:  buildGatewayTLSCredentialMissing,
}

func buildGatewayTLSCredentialMissing(s *Shop) Target {
	now := s.now
	const credential = "shop-example-com-tls"
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(3*day + 7*time.Hour)), nil)
	orders := s.ordersPods(now.Add(-(day + 2*time.Hour)), nil, nil)
	s.slice(Slice{Name: "web-k2m8d", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-p4x7c", Service: "orders", Endpoints: ready(orders...)})
	gw := s.ingressGateway(now.Add(-(9*day + 5*time.Hour)))
	s.world.IstioObject("networking.istio.io/v1", "Gateway", gatewayNamespace, "shop-gateway", now.Add(-35*time.Minute),
		Object{{"selector", Object{{"istio", "ingressgateway"}}}, {"servers", []Object{
			{{"port", Object{{"number", 80}, {"name", "http"}, {"protocol", "HTTP"}}}, {"hosts", []string{"www.shop.example.com"}}},
			{{"port", Object{{"number", 443}, {"name", "https"}, {"protocol", "HTTPS"}}}, {"hosts", []string{"shop.example.com"}},
				{"tls", Object{{"mode", "SIMPLE"}, {"credentialName", credential}}}},
		}}})
	s.virtualService("web-public", now.Add(-(30 * day)), Object{{"hosts", []string{"www.shop.example.com"}}, {"gateways", []string{"istio-system/shop-gateway"}},
		{"http", []Object{{{"route", []Object{{{"destination", Object{{"host", "web.shop.svc.cluster.local"}}}}}}}}}})
	s.virtualService("orders-public", now.Add(-35*time.Minute), Object{{"hosts", []string{"shop.example.com"}}, {"gateways", []string{"istio-system/shop-gateway"}},
		{"http", []Object{{{"match", []Object{{{"uri", Object{{"prefix", "/api/orders"}}}}}},
			{"route", []Object{{{"destination", Object{{"host", "orders.shop.svc.cluster.local"}, {"port", Object{{"number", 8080}}}}}}}}}}}})
	s.webUpstreamLogs(web, orders, nil)
	s.succeed(web, "orders", orders, now.Add(-14*time.Minute), now.Add(-time.Second), 1400)
	// Plain HTTP works; every TLS handshake on 443 is reset before any
	// request, so the gateway logs none of them.
	s.traffic(now.Add(-14*time.Minute), now.Add(-time.Second), 900, func(t time.Time, i int) {
		s.ingressCall(gw, IngressCall{At: t, Host: "www.shop.example.com", Path: "/", To: web, Service: "web", Route: "default"})
	})
	sc := s.recordSidecar(gw, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{Listeners: []Listener{{"0.0.0.0_8080", "0.0.0.0", 8080}, {"0.0.0.0_8443", "0.0.0.0", 8443}}, Routes: []Object{
		routeConfig("http.8080", []Object{
			gatewayVirtualHost("www.shop.example.com", 80, gatewayRoute("shop", "web-public", "default", "/",
				[]WeightedCluster{{"outbound|8080||web.shop.svc.cluster.local", 100}})),
		}),
		routeConfig("https.443.https.shop-gateway.istio-system", []Object{
			gatewayVirtualHost("shop.example.com", 443, gatewayRoute("shop", "orders-public", "default", "/api/orders",
				[]WeightedCluster{{"outbound|8080||orders.shop.svc.cluster.local", 100}})),
		}),
	}, WarmingSecrets: []string{"kubernetes://" + credential}})
	sc.NodeType = "router"
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: gw}
}
