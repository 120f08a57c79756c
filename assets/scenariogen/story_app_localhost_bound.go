package main

import "time"

var appLocalhostBound = Scenario{
	Name:    "app-localhost-bound",
	Title:   "orders 3.1 on Flask listens on 127.0.0.1: the sidecar's inbound is refused",
	Summary: "orders 3.1 moved to Flask's app.run, whose default host is 127.0.0.1; the sidecar dials the pod's IP: 503 UF delayed connect error 111 at orders' inbound",
	Description: `
orders 3.1.0 moved from its Go server to a Python rewrite served by Flask's app.run(port=8080),
without host: Flask's default host is 127.0.0.1, and it says so ("Running on
http://127.0.0.1:8080"). The readiness probe checks the management server on 8081, which binds
0.0.0.0, so all three pods are Ready and web's Envoy calls them healthy. Since Istio 1.10 the
sidecar's inbound cluster dials the pod's own IP, not loopback: every request dies at the orders
sidecar, 503 UF with delayed_connect_error:_111 on inbound|8080||, and web sees 503 URX via_upstream
after two retries. In the developer's laptop test, without a sidecar, curl to localhost worked.
`,
	Expect: []string{"app.localhost-bound"},
	Now:    at("2026-12-03T09:41:27"),
	Mesh:   MeshOptions{HoldApplicationUntilProxyStarts: true},
	Build:  buildAppLocalhostBound,
}

func buildAppLocalhostBound(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-4*day), func(p *PodSpec) { p.Hold = true })
	created := at("2026-12-03T09:22:48")
	orders := s.ordersPods(created, []string{"orders-58d4c7b9f6-2xkqp", "orders-58d4c7b9f6-h7vzn", "orders-58d4c7b9f6-t9wmr"}, func(_ int, p *PodSpec) {
		p.Hold = true
		p.Image = "registry.shop.example.com/orders:3.1.0"
		p.Ports = []ContainerPort{{"http", 8080}, {"http-mgmt", 8081}}
		p.Readiness = &HTTPCheck{"/healthz/ready", 8081}
	})
	s.slice(Slice{Name: "web-bb4c3", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-6kd2w", Service: "orders", Endpoints: ready(orders...)})
	s.webUpstreamLogs(web, orders, func(t time.Time) []string {
		return appLines(t, []AppLine{
			{0.9, "INFO", "management server listening on 0.0.0.0:8081"},
			{1.2, "INFO", " * Serving Flask app 'orders'"},
			{1.21, "INFO", " * Debug mode: off"},
			{1.22, "WARNING", "This is a development server. Do not use it in a production deployment. Use a production WSGI server instead."},
			{1.23, "INFO", " * Running on http://127.0.0.1:8080"},
			{1.24, "INFO", "Press CTRL+C to quit"},
		})
	})
	old := []*Pod{ghost("10.244.1.31", "orders-6d8f7c9b5-q2w8z"), ghost("10.244.2.32", "orders-6d8f7c9b5-c5n7v"), ghost("10.244.0.33", "orders-6d8f7c9b5-k8d4p")}
	s.succeed(web, "orders", old, now.Add(-25*time.Minute), created.Add(3*time.Second), 4000)
	refused := func(t time.Time, i int) {
		// Each attempt reaches an orders sidecar, whose inbound cluster
		// dials the pod's IP on 8080: Flask holds only 127.0.0.1:8080.
		for k := 0; k < 3; k++ {
			s.call(Call{Service: "orders", At: t.Add(time.Duration(2*k) * time.Millisecond), To: orders[(i+k)%3], Code: 503, Remote: web.IP,
				InboundFlags: "UF", InboundDetails: "upstream_reset_before_response_started{connection_failure,delayed_connect_error:_111}",
				InboundTransportFailure: "delayed_connect_error:_111"})
		}
		s.call(Call{From: web, Service: "orders", At: t, To: orders[(i+2)%3], Code: 503, Flags: "URX", Details: "via_upstream",
			DurationMs: exactly(6), NoUpstreamLog: true, TxBytes: exactly(145)})
	}
	s.traffic(created.Add(35*time.Second), s.windowStart(), 2600, refused)
	s.inWindow(1, refused)
	n := s.countResponses(503)
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders, Stats: map[string]int{
			"rq_503": n * 3, "rq_retry": n * 2, "rq_retry_limit_exceeded": n, "retry_503": n * 2}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: web}
}
