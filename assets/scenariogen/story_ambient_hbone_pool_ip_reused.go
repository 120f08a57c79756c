package main

import "time"

var ambientHBONEPoolIPReused = Scenario{
	Name:    "ambient-hbone-pool-ip-reused",
	Title:   "Ambient: a burst of 503 UC at the ingress gateway when a new orders pod got an old pod's IP",
	Summary: "orders (ambient) lost a pod to an eviction; its replacement got the same IP, and the gateway reused the HBONE connections it had pooled for the old pod: reset, 503 UC",
	Description: `
shop is in ambient; public traffic for shop.example.com enters through istio-ingressgateway, which
reaches the orders pods through HBONE tunnels (envoy://connect_originate/IP:8080) and keeps those
connections pooled for an hour (hboneIdleTimeout unset). At 09:04 the kubelet evicted an orders pod
(node memory pressure, no rollout); its replacement started at 09:05 on the same node and the CNI gave
it the evicted pod's IP. When the new pod became ready the gateway's workers sent requests on the
connections they still held for that IP: the new pod's network namespace knows none of them and
resets them (istio/ztunnel#1662). The gateway answers 503 UC
upstream_reset_before_response_started{connection_termination}, once a stale connection, then
opens fresh ones. Nothing is terminating; every orders pod is ready.
`,
	Expect: []string{"ambient.hbone-pool-ip-reused"},
	Now:    at("2026-12-05T09:20:30"),
	Build:  buildAmbientHBONEPoolIPReused,
}

func buildAmbientHBONEPoolIPReused(s *Shop) Target {
	now := s.now
	s.ambientNamespace(nil)
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(3*day + 5*time.Hour)), func(p *PodSpec) { inAmbient(p, true) })
	const rs = "orders-6d8f7c9b5"
	created := now.Add(-(5*day + 7*time.Hour))
	// q2w7z: evicted 09:04:31, gone; r5t8v took its IP (worker-a, host 21)
	// at 09:05:12 and was ready 9 s later.
	evicted, replaced := at("2026-12-05T09:04:31"), at("2026-12-05T09:05:12")
	readyAt := replaced.Add(9 * time.Second)
	gone := ghost(podIP("worker-a", 21), rs+"-q2w7z")
	replacement := s.pod("shop", rs+"-r5t8v", "orders", "worker-a", 21, replaced, func(p *PodSpec) {
		inAmbient(p, true)
		p.ReadyAt = readyAt
	})
	older := []*Pod{
		s.pod("shop", rs+"-2kq8v", "orders", "worker-b", 17, created, func(p *PodSpec) { inAmbient(p, true) }),
		s.pod("shop", rs+"-7xw4n", "orders", "worker-c", 18, created.Add(14*time.Second), func(p *PodSpec) { inAmbient(p, true) }),
	}
	current := append(append([]*Pod{}, older...), replacement)
	s.slice(Slice{Name: "web-3c7d1", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-b81e4", Service: "orders", Created: readyAt, Endpoints: ready(current...)})
	z := s.ztunnels("ztunnel-8k2df", "ztunnel-r7m4x", "ztunnel-w9c3p")

	gw := s.ingressGateway(now.Add(-(12*day + 4*time.Hour)))
	s.gatewayResource("public-gateway", now.Add(-(40 * day)), GatewayServer{80, "http", "HTTP", []string{"shop.example.com"}})
	const host = "orders.shop.svc.cluster.local"
	s.virtualService("orders-public", now.Add(-(9 * day)), Object{{"hosts", []string{"shop.example.com"}}, {"gateways", []string{"istio-system/public-gateway"}},
		{"http", []Object{{{"name", "orders"}, {"match", []Object{{{"uri", Object{{"prefix", "/api/orders"}}}}}}, {"route", []Object{
			{{"destination", Object{{"host", host}, {"port", Object{{"number", 8080}}}}}},
		}}}}}})

	s.appLog(web, webAppStart(web.AppStarted))
	for _, p := range older {
		s.appLog(p, ordersAppStart(p.AppStarted))
	}
	s.appLog(replacement, appLines(replacement.AppStarted, []AppLine{{0.21, "INFO", "orders starting version=2.14.0 commit=9c02e7a"}, {0.4, "INFO", "listening on :8080"}}))

	// Who serves at t: the evicted pod until its eviction, the
	// replacement once ready.
	live := func(t time.Time) []*Pod {
		out := append([]*Pod{}, older...)
		if t.Before(evicted) {
			out = append(out, gone)
		}
		if !t.Before(readyAt) {
			out = append(out, replacement)
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
	s.traffic(now.Add(-17*time.Minute), readyAt, 1500, ok)
	// The gateway's workers each reuse the connection they pooled for the
	// evicted pod once: reset, then a new connection.
	for k := 0; k < 4; k++ {
		at := readyAt.Add(time.Duration(40+160*k) * time.Millisecond)
		s.ingressCall(gw, IngressCall{At: at, Host: "shop.example.com", Path: "/api/orders", To: replacement, Service: "orders", Route: "orders", Tunnel: true,
			Code: 503, Flags: "UC", Details: "upstream_reset_before_response_started{connection_termination}"})
	}
	s.traffic(readyAt.Add(time.Second), s.windowStart(), 1200, ok)
	s.inWindow(6, ok)

	s.recordGateway(gw, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: current, Stats: map[string]int{"cx_connect_fail": 0, "membership_change": 2}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, []Object{routeConfig("http.8080", []Object{
		gatewayVirtualHost("shop.example.com", 80, gatewayRoute("shop", "orders-public", "orders", "/api/orders", []WeightedCluster{
			{"outbound|8080||orders.shop.svc.cluster.local", 100},
		})),
	})})
	enrolled := map[*Pod]bool{web: true}
	for _, p := range current {
		enrolled[p] = true
	}
	s.recordZtunnelConfig(z[web.Node], append([]*Pod{web, gw}, current...), enrolled,
		[]ZService{{Name: "orders", VIP: serviceIPs["orders"], Port: 8080, Pods: current}, {Name: "web", VIP: serviceIPs["web"], Port: 8080, Pods: []*Pod{web}}})
	return Target{Service: "orders", Source: gw}
}
