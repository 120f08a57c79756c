package main

import "time"

var circuitBreakerTemplate = Scenario{
	Name:    "circuit-breaker-template",
	Title:   "Circuit breaker from a DestinationRule template (Istio 1.24 output: alt_stat_name stats, JSON access log)",
	Summary: "a platform DestinationRule template caps orders at 5 connections and 5 pending: 503 UO at peak",
	Description: `
With the move to Istio 1.24 the platform team applied its DestinationRule template to every service;
for orders it sets connectionPool tcp.maxConnections: 5 and http.http1MaxPendingRequests: 5, sized
for a batch job. At the evening peak web's sidecar refuses everything beyond that on the spot: 503 UO
upstream_reset_before_response_started{overflow}, while every orders pod is healthy and half idle.
The mesh logs access in JSON (accessLogEncoding: JSON) and, as every 1.23+ proxy does, names cluster
stats after their alt_stat_name: cluster.outbound|8080||orders.shop.svc.cluster.local;.upstream_rq_pending_overflow
and "upstream_cluster":"outbound|8080||orders.shop.svc.cluster.local;".
`,
	Expect: []string{"circuit-breaker.overflow"},
	Now:    at("2026-12-02T20:41:52"),
	Mesh:   MeshOptions{HoldApplicationUntilProxyStarts: true},
	Shapes: Shapes{AltStatNames: true, AccessLog: AccessLogJSON},
	Build:  buildCircuitBreakerTemplate,
}

func buildCircuitBreakerTemplate(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(3*day + 5*time.Hour)), func(p *PodSpec) { p.Hold = true })
	orders := s.ordersPods(now.Add(-(3*day + 6*time.Hour)), nil, func(_ int, p *PodSpec) { p.Hold = true })
	s.slice(Slice{Name: "web-86fd6", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-2fx3d", Service: "orders", Endpoints: ready(orders...)})
	s.destinationRule("orders", now.Add(-3*day), Object{{"host", "orders.shop.svc.cluster.local"}, {"trafficPolicy", Object{{"connectionPool", Object{
		{"tcp", Object{{"maxConnections", 5}}}, {"http", Object{{"http1MaxPendingRequests", 5}}}}}}}})
	s.webUpstreamLogs(web, orders, nil)
	refused := func(t time.Time) {
		s.call(Call{From: web, Service: "orders", At: t, Code: 503, Flags: "UO", Details: "upstream_reset_before_response_started{overflow}",
			NoUpstreamLog: true, TxBytes: exactly(81), DurationMs: exactly(0)})
	}
	served := func(t time.Time, to *Pod, peak bool) {
		c := Call{From: web, Service: "orders", At: t, To: to}
		if peak {
			c.DurationMs = exactly(60 + s.rng.IntN(240))
		}
		s.call(c)
	}
	// From the peak on, one call in five is refused.
	s.traffic(now.Add(-13*time.Minute), s.windowStart(), 1200, func(t time.Time, i int) {
		peak := t.After(now.Add(-7 * time.Minute))
		if peak && s.rng.Float64() < 0.2 {
			refused(t)
			return
		}
		served(t, orders[i%3], peak)
	})
	// The overflow comes in bursts: the last two calls were served.
	s.inWindow(2, func(t time.Time, i int) { served(t, orders[i%3], true) })
	n := s.countResponses(503)
	ordersCluster := s.outbound(Outbound{Service: "orders", Pods: orders, Thresholds: Thresholds{MaxConnections: 5, MaxPendingRequests: 5},
		Stats: map[string]int{"rq_pending_overflow": n * 23, "cx_overflow": n * 31, "cb_cx_open": 1, "cb_rq_pending_open": 1, "rq_pending_total": n * 64}})
	s.recordSidecar(web, []*Cluster{ordersCluster, s.outbound(Outbound{Service: "web", Pods: []*Pod{web}})}, EnvoyState{})
	// maxConnections 5: the connections web's sidecar may hold, all busy.
	for i, h := range ordersCluster.Hosts {
		h.CxActive = 1 + i%2
	}
	return Target{Service: "orders", Source: web}
}
