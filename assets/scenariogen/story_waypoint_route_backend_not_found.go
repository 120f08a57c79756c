package main

import (
	"fmt"
	"time"
)

var waypointRouteBackendNotFound = Scenario{
	Name:    "waypoint-route-backend-not-found",
	Title:   "Ambient: the orders waypoint's HTTPRoute sends 20% to a deleted canary Service (500 NC)",
	Summary: "shop/orders-canary (parentRef Service orders, which uses orders-waypoint) splits 80/20 to orders and orders-canary; orders-canary is gone, so the waypoint answers one call in five 500 NC",
	Description: `
shop runs in ambient and orders has a waypoint (orders-waypoint) for its L7 rules. The orders team's
canary is a Gateway API mesh route: the HTTPRoute shop/orders-canary, parentRef the Service orders,
sends 80% to orders:8080 and 20% to orders-canary:8080. The canary was rolled back 40 minutes ago and
its Service deleted; the route stayed. istiod reports ResolvedRefs False BackendNotFound and keeps the
weighted destination: the waypoint, which applies the route for orders, has no cluster for
orders-canary and answers its share 500 NC cluster_not_found. web, an ambient pod, sees one call in
five fail. The on-call triages orders from web.
`,
	Expect: []string{"gateway.backend-not-found"},
	Now:    at("2026-12-04T23:12:51"),
	Build:  buildWaypointRouteBackendNotFound,
}

func buildWaypointRouteBackendNotFound(s *Shop) Target {
	now := s.now
	s.ambientNamespace(nil)
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(3*day + 4*time.Hour)), func(p *PodSpec) { inAmbient(p, true) })
	orders := s.ordersPods(now.Add(-(2*day + 7*time.Hour)), nil, func(_ int, p *PodSpec) { inAmbient(p, true) })
	s.slice(Slice{Name: "web-q7c2d", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-h4v8n", Service: "orders", Endpoints: ready(orders...)})
	z := s.ztunnels("ztunnel-8k2fq", "ztunnel-m3x7p", "ztunnel-t9d4w")

	wpCreated := now.Add(-(6 * day))
	wp := s.waypoint(WaypointSpec{Name: "orders-waypoint", Created: wpCreated, Ready: true,
		Pods: []NamedPod{{"orders-waypoint-7c4f9d6b8-q2m5t", "worker-b"}}, Slice: "orders-waypoint-5rk2w"})
	s.useWaypoint("orders", "orders-waypoint", "", "", wpCreated.Add(9*time.Second))
	s.ordersCanaryMeshRoute(now.Add(-(3 * day)))

	s.appLog(web, webAppStart(web.AppStarted))
	for _, p := range orders {
		s.appLog(p, ordersAppStart(p.AppStarted))
	}
	const route = "shop.orders-canary.0"
	wpPod := wp.Pods[0]
	s.world.log("shop", wpPod.Name, "istio-proxy", false, agentStartup(wpPod, wpPod.ProxyStarted, 1.0)...)
	// web's ztunnel tunnels every call to the waypoint; the waypoint picks
	// the backend by weight and answers orders-canary's share itself.
	s.traffic(now.Add(-14*time.Minute), now.Add(-time.Second), 1600, func(t time.Time, i int) {
		ms := 3 + s.rng.IntN(12)
		id := fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", s.rng.Uint32(), s.rng.IntN(1<<16), s.rng.IntN(1<<12), 0x8000|s.rng.IntN(1<<14), s.rng.Uint64()&(1<<48-1))
		peer := fmt.Sprintf("%s:%d", web.IP, 32768+s.rng.IntN(28000))
		line := ""
		if s.rng.Float64() < 0.2 {
			line = fmt.Sprintf(`[%s] "GET /api/orders HTTP/1.1" 500 NC cluster_not_found - "-" 0 0 0 - "-" "web/1.8.3" "%s" "orders.shop.svc.%s:8080" "-" - - %s:8080 %s - %s`,
				accessLogTime(t), id, meshDomain, serviceIPs["orders"], peer, route)
		} else {
			to := orders[i%len(orders)]
			line = fmt.Sprintf(`[%s] "GET /api/orders HTTP/1.1" 200 - via_upstream - "-" 0 %d %d %d "-" "web/1.8.3" "%s" "orders.shop.svc.%s:8080" "envoy://connect_originate/%s:8080" inbound-vip|8080|http|orders.shop.svc.%s envoy://internal_client_address/ %s:8080 %s - %s`,
				accessLogTime(t), 400+s.rng.IntN(900), ms, ms-1, id, meshDomain, to.IP, meshDomain, serviceIPs["orders"], peer, route)
		}
		s.world.log("shop", wpPod.Name, "istio-proxy", false, line)
		s.ztunnelLog(z, web.Node, ZConn{At: t.Add(time.Duration(ms) * time.Millisecond), From: web, To: wpPod, Target: wpPod, Service: "orders", Port: 8080,
			Sent: 380 + s.rng.IntN(400), Recv: 300 + s.rng.IntN(900), DurationMs: ms})
	})
	s.recordWaypoint(wpPod, "orders", 8080, orders, nil)
	all := append([]*Pod{web}, orders...)
	all = append(all, wp.Pods...)
	s.recordZtunnelConfig(z[web.Node], all, map[*Pod]bool{web: true, orders[0]: true, orders[1]: true, orders[2]: true},
		[]ZService{{Name: "orders", VIP: serviceIPs["orders"], Port: 8080, Pods: orders, Waypoint: "orders-waypoint.shop.svc.cluster.local"},
			{Name: "web", VIP: serviceIPs["web"], Port: 8080, Pods: []*Pod{web}}})
	return Target{Service: "orders", Source: web}
}
