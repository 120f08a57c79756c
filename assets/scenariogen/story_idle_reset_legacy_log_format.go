package main

import "time"

var idleResetLegacyLogFormat = Scenario{
	Name:    "idle-reset-legacy-log-format",
	Title:   "503 UC from a short keep-alive, in Istio 1.0's access-log format",
	Summary: "gunicorn keepalive 2 s vs Envoy's 1 h idle timeout; the mesh still logs in Istio 1.0's format",
	Description: `
orders moved to Python behind gunicorn, whose keepalive closes an idle connection after 2 s. The
orders sidecars keep upstream connections to the app for up to an hour (Envoy's default idle_timeout)
and now and then send a request on one gunicorn is closing: 503 UC in the orders sidecars' inbound
log, a few a minute, mostly hidden by web's retries. No rollout, nothing terminating, nothing
overloaded. The mesh config still sets accessLogFormat to Istio 1.0's format, which the team's log
pipeline parses: Envoy's default fields plus cluster and addresses, with no response_code_details and
no transport failure reason, so the flag UC is all the log says about these resets.
`,
	Expect: []string{"upstream.idle-reset"},
	Now:    at("2026-12-02T11:52:09"),
	Shapes: Shapes{AccessLog: AccessLogIstio10},
	Build:  buildIdleResetLegacyLogFormat,
}

func buildIdleResetLegacyLogFormat(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-6*day), nil)
	orders := s.ordersPods(now.Add(-(2*day + 1*time.Hour)), nil, func(_ int, p *PodSpec) {
		p.Image = "registry.shop.example.com/orders:4.0.2-py"
	})
	s.slice(Slice{Name: "web-dfx3c", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-ba53x", Service: "orders", Endpoints: ready(orders...)})
	s.webUpstreamLogs(web, orders, func(t time.Time) []string {
		return appLines(t, []AppLine{
			{0.4, "INFO", "Starting gunicorn 22.0.0"},
			{0.45, "INFO", "Listening at: http://0.0.0.0:8080 (1)"},
			{0.5, "INFO", "Using worker: gthread keepalive=2"},
		})
	})
	// The orders sidecar's inbound line when it reused a pooled connection
	// gunicorn had just closed after 2 s idle.
	idleReset := func(t time.Time, to *Pod, durationMs int) Call {
		return Call{Service: "orders", At: t, To: to, Code: 503, Remote: web.IP, InboundFlags: "UC",
			InboundDetails: "upstream_reset_before_response_started{connection_termination}", DurationMs: exactly(durationMs)}
	}
	// A few calls a minute reuse a connection gunicorn is closing; most are
	// saved by a retry.
	s.traffic(now.Add(-14*time.Minute), s.windowStart(), 5200, func(t time.Time, i int) {
		up := orders[i%3]
		switch r := s.rng.Float64(); {
		case r < 0.03:
			for k := 0; k < 3; k++ {
				s.call(idleReset(t.Add(time.Duration(4*k)*time.Millisecond), orders[(i+k)%3], 1))
			}
			s.call(Call{From: web, Service: "orders", At: t, To: orders[(i+2)%3], Code: 503, Flags: "URX", Details: "via_upstream",
				NoUpstreamLog: true, DurationMs: exactly(11), TxBytes: exactly(95)})
		case r < 0.1:
			s.call(idleReset(t, up, 1))
			s.call(Call{From: web, Service: "orders", At: t.Add(25 * time.Millisecond), To: orders[(i+1)%3], DurationMs: exactly(7)})
		default:
			s.call(Call{From: web, Service: "orders", At: t, To: up})
		}
	})
	// The last call, a second before the recording, was served.
	s.inWindow(1, func(t time.Time, i int) { s.call(Call{From: web, Service: "orders", At: t, To: orders[i]}) })
	n := s.countResponses(503)
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders, Stats: map[string]int{
			"rq_503": 3*n + 9, "rq_retry": 2*n + 9, "rq_retry_success": 9, "retry_503": 2*n + 9, "rq_retry_limit_exceeded": n}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: web}
}
