package main

import "time"

var circuitBreakerOverflow = Scenario{
	Name:    "circuit-breaker-overflow",
	Title:   "Circuit breaker: one connection, one pending request",
	Summary: "maxConnections 1 / http1MaxPendingRequests 1 from a tutorial: 503 UO at peak",
	Description: `
Two days ago a DestinationRule for orders was merged with connectionPool tcp.maxConnections: 1 and
http.http1MaxPendingRequests: 1, copied from Istio's circuit-breaking task during a load test. At the
evening peak web's sidecar may hold one connection to all of orders and queue one request behind it;
everything beyond that is refused on the spot: 503 UO upstream_reset_before_response_started{overflow}
and upstream_rq_pending_overflow climbing, while every orders pod is healthy and idle.
`,
	Expect: []string{"circuit-breaker.overflow"},
	Now:    at("2026-12-02T19:03:10"),
	Mesh:   MeshOptions{HoldApplicationUntilProxyStarts: true},
	Build:  buildCircuitBreakerOverflow,
}

func buildCircuitBreakerOverflow(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(2*day + 2*time.Hour)), func(p *PodSpec) { p.Hold = true })
	orders := s.ordersPods(now.Add(-(2*day + 5*time.Hour)), nil, func(_ int, p *PodSpec) { p.Hold = true })
	s.slice(Slice{Name: "web-a31ed", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-6be26", Service: "orders", Endpoints: ready(orders...)})
	s.destinationRule("orders", now.Add(-2*day), Object{{"host", "orders.shop.svc.cluster.local"}, {"trafficPolicy", Object{{"connectionPool", Object{
		{"tcp", Object{{"maxConnections", 1}}}, {"http", Object{{"http1MaxPendingRequests", 1}}}}}}}})
	s.webUpstreamLogs(web, orders, nil)
	refused := func(t time.Time) {
		s.call(Call{From: web, Service: "orders", At: t, Code: 503, Flags: "UO", Details: "upstream_reset_before_response_started{overflow}",
			NoUpstreamLog: true, TxBytes: exactly(81), DurationMs: exactly(0)})
	}
	served := func(t time.Time, to *Pod, peak bool) {
		c := Call{From: web, Service: "orders", At: t, To: to}
		if peak {
			c.DurationMs = exactly(40 + s.rng.IntN(200))
		}
		s.call(c)
	}
	// From the peak on, about a third of the calls find the connection and
	// the pending slot taken.
	s.traffic(now.Add(-14*time.Minute), s.windowStart(), 1500, func(t time.Time, i int) {
		peak := t.After(now.Add(-9 * time.Minute))
		if peak && s.rng.Float64() < 0.35 {
			refused(t)
			return
		}
		served(t, orders[i%3], peak)
	})
	// The overflow comes in bursts: the last three calls were served.
	s.inWindow(3, func(t time.Time, i int) { served(t, orders[i%3], true) })
	n := s.countResponses(503)
	ordersCluster := s.outbound(Outbound{Service: "orders", Pods: orders, Thresholds: Thresholds{MaxConnections: 1, MaxPendingRequests: 1},
		Stats: map[string]int{"rq_pending_overflow": n * 37, "cx_overflow": n * 52, "cb_cx_open": 1, "cb_rq_pending_open": 1, "rq_pending_total": n * 80}})
	s.recordSidecar(web, []*Cluster{ordersCluster, s.outbound(Outbound{Service: "web", Pods: []*Pod{web}})}, EnvoyState{})
	// maxConnections 1: the one connection web's sidecar may hold.
	for _, h := range ordersCluster.Hosts {
		h.CxActive = 0
	}
	ordersCluster.Hosts[0].CxActive = 1
	return Target{Service: "orders", Source: web}
}
