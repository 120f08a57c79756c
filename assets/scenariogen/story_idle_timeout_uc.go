package main

import "time"

var idleTimeoutUC = Scenario{
	Name:    "idle-timeout-uc",
	Title:   "503 UC at steady state: app keep-alive shorter than Envoy's idle timeout",
	Summary: "Node.js keepAliveTimeout 5 s vs Envoy's 1 h idle timeout: sporadic 503 UC, no rollout",
	Description: `
orders was rewritten in Node.js 20, whose HTTP server closes idle keep-alive connections after 5 s
(server.keepAliveTimeout). The orders sidecar keeps upstream connections to the app for up to an hour
(Envoy's default idle_timeout) and now and then sends a request on a connection Node.js is closing at
that instant: 503 UC upstream_reset_before_response_started{connection_termination} in the orders
sidecars' inbound log, a few a minute, usually hidden by web's retries and sometimes not. There is no
rollout, no pod is terminating, and nothing is overloaded.
`,
	Expect: []string{"upstream.idle-reset"},
	Now:    at("2026-12-02T15:27:48"),
	Build:  buildIdleTimeoutUC,
}

func buildIdleTimeoutUC(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-4*day), nil)
	orders := s.ordersPods(now.Add(-(day + 6*time.Hour)), nil, func(_ int, p *PodSpec) {
		p.Image = "registry.shop.example.com/orders:3.1.0-node"
	})
	s.slice(Slice{Name: "web-b4599", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-ceexc", Service: "orders", Endpoints: ready(orders...)})
	s.webUpstreamLogs(web, orders, func(t time.Time) []string {
		return appLines(t, []AppLine{
			{0.3, "info", "orders 3.1.0 (node v20.18.0) starting"},
			{0.5, "info", "postgres pool ready size=10"},
			{0.52, "info", "http server listening on :8080 keepAliveTimeout=5000ms headersTimeout=60000ms"},
		})
	})
	// The orders sidecar's inbound line when it reused a pooled connection
	// the Node.js server had just closed after 5 s idle.
	idleReset := func(t time.Time, to *Pod, durationMs int) Call {
		return Call{Service: "orders", At: t, To: to, Code: 503, Remote: web.IP, InboundFlags: "UC",
			InboundDetails: "upstream_reset_before_response_started{connection_termination}", DurationMs: exactly(durationMs)}
	}
	// A few calls a minute reuse a connection Node.js is closing; web made
	// none in the last seconds (the metrics window).
	s.traffic(now.Add(-15*time.Minute), s.windowStart(), 6500, func(t time.Time, i int) {
		up := orders[i%3]
		switch r := s.rng.Float64(); {
		case r < 0.025:
			// web's retries hit the same race twice.
			for k := 0; k < 3; k++ {
				s.call(idleReset(t.Add(time.Duration(3*k)*time.Millisecond), orders[(i+k)%3], 2))
			}
			s.call(Call{From: web, Service: "orders", At: t, To: orders[(i+2)%3], Code: 503, Flags: "URX", Details: "via_upstream",
				NoUpstreamLog: true, DurationMs: exactly(9), TxBytes: exactly(95)})
		case r < 0.09:
			s.call(idleReset(t, up, 1))
			s.call(Call{From: web, Service: "orders", At: t.Add(30 * time.Millisecond), To: orders[(i+1)%3], DurationMs: exactly(8)})
		default:
			s.call(Call{From: web, Service: "orders", At: t, To: up})
		}
	})
	n := s.countResponses(503)
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders, Stats: map[string]int{
			"rq_503": 3*n + 12, "rq_retry": 2*n + 12, "rq_retry_success": 12, "retry_503": 2*n + 12, "rq_retry_limit_exceeded": n}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: web}
}
