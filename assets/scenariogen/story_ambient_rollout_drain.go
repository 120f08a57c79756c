package main

import "time"

var ambientRolloutDrain = Scenario{
	Name:    "ambient-rollout-drain",
	Title:   "Ambient: 503 bursts at the ingress gateway during a rollout of orders",
	Summary: "orders (ambient) rolls out; each old pod exits on SIGTERM before istiod's removal of it reaches the gateway and web's ztunnel: refused, 503",
	Description: `
shop is in ambient; public traffic for shop.example.com enters through istio-ingressgateway, which
reaches the orders pods through HBONE tunnels (envoy://connect_originate/IP:8080). orders is rolling
out (2.14.0 -> 2.15.0). Its app has no preStop hook and exits on SIGTERM at once: ztunnel drains the
pod's connections (ClosedFromDrain), and for a few hundred milliseconds, until istiod's removal of the
pod reaches them, the gateway and web's ztunnel keep connecting to the ended pod's 15008: refused
(istio/istio#58514). The gateway answers 503 UF, web's ztunnel logs "Connection refused (os error
111)". One old pod is gone, one terminating, one still serving; the two new ones are ready.
`,
	Expect: []string{"ambient.drain-before-removal"},
	Now:    at("2026-12-05T09:14:30"),
	Build:  buildAmbientRolloutDrain,
}

func buildAmbientRolloutDrain(s *Shop) Target {
	now := s.now
	s.ambientNamespace(nil)
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(3*day + 5*time.Hour)), func(p *PodSpec) { inAmbient(p, true) })
	const oldRS, newRS = "orders-6d8f7c9b5", "orders-85b9f6d7c"
	oldCreated := now.Add(-(5*day + 7*time.Hour))
	// m9p2d: deleted 09:13:58, gone. 7xw4n: deleted 09:14:21, its app
	// exited at once (no preStop), the pod is still terminating. 2kq8v is
	// next.
	deletedGone, deletedOld := at("2026-12-05T09:13:58"), at("2026-12-05T09:14:21")
	gone := ghost(podIP("worker-a", 21), oldRS+"-m9p2d")
	ending := s.pod("shop", oldRS+"-7xw4n", "orders", "worker-c", 18, oldCreated.Add(14*time.Second), func(p *PodSpec) {
		inAmbient(p, true)
		p.Deletion = deletedOld.Add(30 * time.Second)
	})
	serving := s.pod("shop", oldRS+"-2kq8v", "orders", "worker-b", 17, oldCreated, func(p *PodSpec) { inAmbient(p, true) })
	var news []*Pod
	for _, plan := range []struct {
		suffix, node string
		host         int
		created      string
	}{{"h4k2m", "worker-a", 34, "09:13:40"}, {"p7r9t", "worker-c", 35, "09:14:05"}} {
		created := at("2026-12-05T" + plan.created)
		news = append(news, s.pod("shop", newRS+"-"+plan.suffix, "orders", plan.node, plan.host, created, func(p *PodSpec) {
			inAmbient(p, true)
			p.Image = "registry.shop.example.com/orders:2.15.0"
			p.ReadyAt = created.Add(9 * time.Second)
		}))
	}
	s.slice(Slice{Name: "web-3c7d1", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-b81e4", Service: "orders", Created: deletedOld, Endpoints: append([]Endpoint{
		{Pod: ending.Name, Terminating: true},
	}, ready(append([]*Pod{serving}, news...)...)...)})
	z := s.ztunnels("ztunnel-8k2df", "ztunnel-r7m4x", "ztunnel-w9c3p")

	gw := s.ingressGateway(now.Add(-(12*day + 4*time.Hour)))
	s.gatewayResource("public-gateway", now.Add(-(40 * day)), GatewayServer{80, "http", "HTTP", []string{"shop.example.com"}})
	const host = "orders.shop.svc.cluster.local"
	s.virtualService("orders-public", now.Add(-(9 * day)), Object{{"hosts", []string{"shop.example.com"}}, {"gateways", []string{"istio-system/public-gateway"}},
		{"http", []Object{{{"name", "orders"}, {"match", []Object{{{"uri", Object{{"prefix", "/api/orders"}}}}}}, {"route", []Object{
			{{"destination", Object{{"host", host}, {"port", Object{{"number", 8080}}}}}},
		}}}}}})

	s.appLog(web, webAppStart(web.AppStarted))
	s.appLog(serving, ordersAppStart(serving.AppStarted))
	s.appLog(ending, append(ordersAppStart(ending.AppStarted), appLines(deletedOld, []AppLine{
		{0.002, "INFO", "SIGTERM received: shutting down"},
		{0.011, "INFO", "http server closed"},
	})...))
	for _, p := range news {
		s.appLog(p, appLines(p.AppStarted, []AppLine{{0.21, "INFO", "orders starting version=2.15.0 commit=4be81d0"}, {0.4, "INFO", "listening on :8080"}}))
	}

	// Who serves at t: the old pods until they are deleted, the new ones
	// once ready.
	live := func(t time.Time) []*Pod {
		var out []*Pod
		if t.Before(deletedGone) {
			out = append(out, gone)
		}
		if t.Before(deletedOld) {
			out = append(out, ending)
		}
		out = append(out, serving)
		for _, p := range news {
			if !t.Before(p.AppStarted.Add(9 * time.Second)) {
				out = append(out, p)
			}
		}
		return out
	}
	ok := func(t time.Time, i int) {
		pods := live(t)
		to := pods[i%len(pods)]
		s.ingressCall(gw, IngressCall{At: t, Host: "shop.example.com", Path: "/api/orders", To: to, Service: "orders", Route: "orders", Tunnel: true})
		if i%3 == 0 {
			sent, recv, ms := 380+s.rng.IntN(400), 900+s.rng.IntN(1200), 3+s.rng.IntN(12)
			s.ztunnelLog(z, web.Node, ZConn{At: t.Add(time.Duration(ms) * time.Millisecond), From: web, Target: to, Service: "orders", Port: 8080, Sent: sent, Recv: recv, DurationMs: ms})
		}
	}
	// Each deletion: the requests in flight on the pod's connections are
	// drained (UC at the gateway, ClosedFromDrain at the pod's ztunnel),
	// then for ~400 ms the gateway and web's ztunnel still connect to it
	// and are refused.
	burst := func(p *Pod, deleted time.Time, node string) {
		for k := 0; k < 2; k++ {
			at := deleted.Add(time.Duration(5+k*7) * time.Millisecond)
			s.ingressCall(gw, IngressCall{At: at, Host: "shop.example.com", Path: "/api/orders", To: p, Service: "orders", Route: "orders", Tunnel: true,
				Code: 503, Flags: "UC", Details: "upstream_reset_before_response_started{connection_termination}"})
			if node != "" {
				s.ztunnelLog(z, node, ZConn{At: at.Add(time.Millisecond), From: gw, Target: p, Service: "orders", Port: 8080, Inbound: true,
					Sent: 0, Recv: 412, DurationMs: 1800 + 90*k, Error: "connection closed due to connection drain"})
			}
		}
		for k := 0; k < 14; k++ {
			at := deleted.Add(time.Duration(30+27*k) * time.Millisecond)
			s.ingressCall(gw, IngressCall{At: at, Host: "shop.example.com", Path: "/api/orders", To: p, Service: "orders", Route: "orders", Tunnel: true,
				Code: 503, Flags: "UF", Details: "upstream_reset_before_response_started{remote_connection_failure,delayed_connect_error:_Connection_refused}",
				TransportFailure: "delayed_connect_error:_Connection_refused"})
			if k%4 == 1 {
				s.ztunnelLog(z, web.Node, ZConn{At: at.Add(2 * time.Millisecond), From: web, Target: p, Service: "orders", Port: 8080, DurationMs: 1,
					Error: "io error: Connection refused (os error 111)"})
			}
		}
	}
	s.traffic(now.Add(-12*time.Minute), deletedGone, 900, ok)
	burst(gone, deletedGone, "")
	s.traffic(deletedGone.Add(500*time.Millisecond), deletedOld, 400, ok)
	burst(ending, deletedOld, ending.Node)
	s.traffic(deletedOld.Add(500*time.Millisecond), s.windowStart(), 300, ok)
	s.inWindow(6, ok)

	current := append([]*Pod{serving}, news...)
	s.recordGateway(gw, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: current, Stats: map[string]int{"cx_connect_fail": 0, "membership_change": 6}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, []Object{routeConfig("http.8080", []Object{
		gatewayVirtualHost("shop.example.com", 80, gatewayRoute("shop", "orders-public", "orders", "/api/orders", []WeightedCluster{
			{"outbound|8080||orders.shop.svc.cluster.local", 100},
		})),
	})})
	enrolled := map[*Pod]bool{web: true, ending: true, serving: true}
	for _, p := range news {
		enrolled[p] = true
	}
	s.recordZtunnelConfig(z[web.Node], append([]*Pod{web, gw, ending}, current...), enrolled,
		[]ZService{{Name: "orders", VIP: serviceIPs["orders"], Port: 8080, Pods: current}, {Name: "web", VIP: serviceIPs["web"], Port: 8080, Pods: []*Pod{web}}})
	return Target{Service: "orders", Source: gw}
}
