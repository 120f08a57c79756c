package main

import "time"

var ambientWaypointNotReady = Scenario{
	Name:    "ambient-waypoint-not-ready",
	Title:   "Ambient: the Service's new waypoint never became ready",
	Summary: "orders got a waypoint and a policy admitting only it; the waypoint's image does not pull, so every call is refused",
	Description: `
At 06:41 a GitOps sync gave orders (ambient, shop) its first waypoint: the Gateway orders-waypoint,
istio.io/use-waypoint on the Service, and the AuthorizationPolicy orders-via-waypoint that admits only
the waypoint's identity, so that every request must pass its L7 rules. The waypoint's pod has been
Pending since: its image does not pull from the registry mirror. istiod binds nothing to a waypoint
without a ready pod (the Gateway has no address; the Service's istio.io/WaypointBound condition says
WaypointIsNotReady), so web's ztunnel sends straight to the orders pods, and their ztunnel refuses
every connection: "allow policies exist, but none allowed". web sees resets and answers 503.
`,
	Expect: []string{"ambient.waypoint-not-ready"},
	Now:    at("2026-12-02T06:52:18"),
	Build:  buildAmbientWaypointNotReady,
}

func buildAmbientWaypointNotReady(s *Shop) Target {
	now := s.now
	s.ambientNamespace(nil)
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(2*day + 6*time.Hour)), func(p *PodSpec) { inAmbient(p, true) })
	orders := s.ordersPods(now.Add(-(3*day + 2*time.Hour)), nil, func(_ int, p *PodSpec) { inAmbient(p, true) })
	s.slice(Slice{Name: "web-ba5xf", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-fcbx9", Service: "orders", Endpoints: ready(orders...)})
	z := s.ztunnels("ztunnel-5fdf9", "ztunnel-333ca", "ztunnel-3f587")

	synced := at("2026-12-02T06:41:07")
	wp := s.waypoint(WaypointSpec{Name: "orders-waypoint", Created: synced, Ready: false,
		Pods: []NamedPod{{"orders-waypoint-45ae1696d-753de", "worker-c"}}, Slice: "orders-waypoint-1f4b6"})
	s.useWaypoint("orders", "orders-waypoint", "WaypointIsNotReady", `waypoint "shop/orders-waypoint" is not ready`, synced.Add(2*time.Second))
	s.authorizationPolicy("orders-via-waypoint", synced, Object{
		{"selector", Object{{"matchLabels", Object{{"app", "orders"}}}}},
		{"action", "ALLOW"},
		{"rules", []Object{{{"from", []Object{{{"source", Object{{"principals", []string{"cluster.local/ns/shop/sa/orders-waypoint"}}}}}}}}}},
	})

	s.appLog(web, webAppStart(web.AppStarted))
	for _, p := range orders {
		s.appLog(p, ordersAppStart(p.AppStarted))
	}
	// Before the sync: web's connections go straight to orders and
	// complete; after it, the orders pods' ztunnel refuses them and web's
	// sees 401.
	s.traffic(now.Add(-24*time.Minute), now.Add(-3*time.Second), 6000, func(t time.Time, i int) {
		to := orders[i%len(orders)]
		if t.Before(synced.Add(3 * time.Second)) {
			sent, recv, ms := 380+s.rng.IntN(400), 900+s.rng.IntN(1200), 3+s.rng.IntN(12)
			s.ztunnelLog(z, web.Node, ZConn{At: t.Add(time.Duration(ms) * time.Millisecond), From: web, Target: to, Service: "orders", Port: 8080, Sent: sent, Recv: recv, DurationMs: ms})
			s.ztunnelLog(z, to.Node, ZConn{At: t.Add(time.Duration(ms-1) * time.Millisecond), From: web, Target: to, Service: "orders", Port: 8080, Inbound: true, Sent: recv, Recv: sent, DurationMs: ms - 1})
			return
		}
		s.ztunnelLog(z, to.Node, ZConn{At: t.Add(time.Millisecond), From: web, Target: to, Service: "orders", Port: 8080, Inbound: true,
			Error: "connection closed due to policy rejection: allow policies exist, but none allowed"})
		s.ztunnelLog(z, web.Node, ZConn{At: t.Add(2 * time.Millisecond), From: web, Target: to, Service: "orders", Port: 8080, DurationMs: 1,
			Error: "http status: 401 Unauthorized"})
	})
	s.appLog(web, appLines(web.AppStarted, []AppLine{{now.Add(-10 * time.Minute).Sub(web.AppStarted).Seconds(), "ERROR",
		`GET /checkout -> 503: orders: Get "http://orders:8080/api/orders": read tcp 10.244.0.9:51734->10.96.14.20:8080: read: connection reset by peer`}}))

	all := append([]*Pod{web}, orders...)
	all = append(all, wp.Pods...)
	s.recordZtunnelConfig(z[web.Node], all, map[*Pod]bool{web: true, orders[0]: true, orders[1]: true, orders[2]: true},
		[]ZService{{Name: "orders", VIP: serviceIPs["orders"], Port: 8080, Pods: orders}, {Name: "web", VIP: serviceIPs["web"], Port: 8080, Pods: []*Pod{web}}})
	return Target{Service: "orders", Source: web}
}
