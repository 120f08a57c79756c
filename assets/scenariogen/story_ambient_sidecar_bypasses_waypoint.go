package main

import "time"

var ambientSidecarBypassesWaypoint = Scenario{
	Name:    "ambient-sidecar-bypasses-waypoint",
	Title:   "Ambient: a caller still on its sidecar goes around the waypoint",
	Summary: "orders admits only its waypoint; web kept its sidecar, which sends to the orders pods directly: refused, 503",
	Description: `
shop moved to ambient last week, all but web, whose pods keep their sidecar (sidecar.istio.io/inject=true)
until its team finishes testing. Yesterday orders got its waypoint and, at 09:30 today, the
AuthorizationPolicy orders-via-waypoint admitting only the waypoint's identity, so that its L7 rules
cannot be skipped. They are skipped by web: a sidecar never sends through a Service's waypoint
(istiod gives it the orders pods, and it tunnels HBONE to them directly). The orders pods' ztunnel
refuses web's connections ("allow policies exist, but none allowed"), and web's Envoy answers 503.
The waypoint itself is healthy and idle.
`,
	Expect: []string{"ambient.sidecar-bypasses-waypoint"},
	Now:    at("2026-12-02T09:38:44"),
	Build:  buildAmbientSidecarBypassesWaypoint,
}

func buildAmbientSidecarBypassesWaypoint(s *Shop) Target {
	now := s.now
	s.ambientNamespace(nil)
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(4*day + 2*time.Hour)), func(p *PodSpec) { p.InjectLabel = "true" })
	orders := s.ordersPods(now.Add(-(5*day + 3*time.Hour)), nil, func(_ int, p *PodSpec) { inAmbient(p, true) })
	s.slice(Slice{Name: "web-d2f94", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-d3e22", Service: "orders", Endpoints: ready(orders...)})
	z := s.ztunnels("ztunnel-z1dc3", "ztunnel-a22b5", "ztunnel-3zz25")

	wpCreated := now.Add(-(day + 2*time.Hour))
	wp := s.waypoint(WaypointSpec{Name: "orders-waypoint", Created: wpCreated, Ready: true,
		Pods: []NamedPod{{"orders-waypoint-5b73de4e5-6743w", "worker-b"}}, Slice: "orders-waypoint-448xc"})
	s.useWaypoint("orders", "orders-waypoint", "", "", wpCreated.Add(11*time.Second))
	applied := at("2026-12-02T09:30:12")
	s.authorizationPolicy("orders-via-waypoint", applied, Object{
		{"selector", Object{{"matchLabels", Object{{"app", "orders"}}}}},
		{"action", "ALLOW"},
		{"rules", []Object{{{"from", []Object{{{"source", Object{{"principals", []string{"cluster.local/ns/shop/sa/orders-waypoint"}}}}}}}}}},
	})

	s.webUpstreamLogs(web, orders, nil)
	// Until the policy: web's calls succeed, straight to the pods.
	s.succeed(web, "orders", orders, now.Add(-21*time.Minute), applied, 3000)
	for i, p := range orders {
		s.ztunnelLog(z, p.Node, ZConn{At: applied.Add(-time.Duration(2+i) * time.Second), From: web, Target: p, Service: "orders", Port: 8080, Inbound: true,
			Sent: 1184, Recv: 421, DurationMs: 9})
	}
	// Since: refused at the orders pods' ztunnel; web's Envoy answers 503.
	rejected := func(t time.Time, i int) {
		to := orders[i%len(orders)]
		s.ztunnelLog(z, to.Node, ZConn{At: t.Add(time.Millisecond), From: web, Target: to, Service: "orders", Port: 8080, Inbound: true,
			Error: "connection closed due to policy rejection: allow policies exist, but none allowed"})
		s.call(Call{From: web, Service: "orders", At: t, Code: 503, Flags: "UF,URX", Details: "upstream_reset_before_response_started{connection_failure}",
			NoUpstreamLog: true})
	}
	// Every call since the policy, up to the last second.
	s.traffic(applied.Add(seconds(0.8)), s.windowStart(), 2500, rejected)
	s.inWindow(1, rejected)
	n := s.countResponses(503)
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders, Stats: map[string]int{"upstream_cx_connect_fail": n, "upstream_rq_503": n}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	s.world.log("shop", wp.Pods[0].Name, "istio-proxy", false, agentStartup(wp.Pods[0], wp.Pods[0].ProxyStarted, 1.1)...)
	s.recordWaypoint(wp.Pods[0], "orders", 8080, orders, nil)
	s.recordZtunnelConfig(z[orders[0].Node], append(append([]*Pod{web}, orders...), wp.Pods...),
		map[*Pod]bool{orders[0]: true, orders[1]: true, orders[2]: true},
		[]ZService{{Name: "orders", VIP: serviceIPs["orders"], Port: 8080, Pods: orders, Waypoint: "orders-waypoint.shop.svc.cluster.local"},
			{Name: "web", VIP: serviceIPs["web"], Port: 8080, Pods: []*Pod{web}}})
	return Target{Service: "orders", Source: web}
}
