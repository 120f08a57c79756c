package main

import "time"

var portMismatch = Scenario{
	Name:    "port-mismatch",
	Title:   "Service targetPort 8080, container listens on 8000",
	Summary: "orders 3.0 listens on 8000, the Service still targets 8080: 503 UF connection refused",
	Description: `
orders 3.0.0 changed its default listen port from 8080 to 8000 and the Deployment declares
containerPort 8000, but the Service still says targetPort 8080. The readiness probe checks 8000, so
all three endpoints are ready and web's Envoy calls them healthy, yet every request dies at the
orders sidecar, which forwards to the pod on 8080: 503 UF with delayed_connect_error:_111 (connection
refused) in the orders sidecars' inbound log, and 503 URX via_upstream at web after two retries. It
looks like an mTLS or mesh problem; it is a Service port.
`,
	Expect: []string{"service.port-mismatch"},
	Now:    at("2026-12-02T14:12:05"),
	Mesh:   MeshOptions{HoldApplicationUntilProxyStarts: true},
	Build:  buildPortMismatch,
}

func buildPortMismatch(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-3*day), func(p *PodSpec) { p.Hold = true })
	created := at("2026-12-02T13:58:20")
	orders := s.ordersPods(created, []string{"orders-7c6d5b8f9-4nq8s", "orders-7c6d5b8f9-kw2ld", "orders-7c6d5b8f9-zt6hp"}, func(_ int, p *PodSpec) {
		p.Hold = true
		p.Image = "registry.shop.example.com/orders:3.0.0"
		p.Ports = []ContainerPort{{"http", 8000}}
		p.Readiness = &HTTPCheck{"/healthz/ready", 8000}
	})
	s.slice(Slice{Name: "web-bb4c3", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-3xe9f", Service: "orders", Endpoints: ready(orders...)})
	s.webUpstreamLogs(web, orders, func(t time.Time) []string {
		return appLines(t, []AppLine{
			{0.2, "INFO", "orders starting version=3.0.0 commit=1be04c7"},
			{0.31, "INFO", "config: PORT not set, using default :8000 (was :8080 before 3.0)"},
			{0.36, "INFO", "database connected pool=10"},
			{0.4, "INFO", "listening on :8000"},
		})
	})
	old := []*Pod{ghost("10.244.1.27", "orders-5d9c7b6f8-r4c7m"), ghost("10.244.2.28", "orders-5d9c7b6f8-wq9zd"), ghost("10.244.0.29", "orders-5d9c7b6f8-b8m3x")}
	s.succeed(web, "orders", old, now.Add(-20*time.Minute), created.Add(2*time.Second), 4000)
	refused := func(t time.Time, i int) {
		// Each attempt reaches an orders sidecar, whose inbound cluster dials
		// the pod on the Service's targetPort 8080, where nothing listens.
		for k := 0; k < 3; k++ {
			s.call(Call{Service: "orders", At: t.Add(time.Duration(2*k) * time.Millisecond), To: orders[(i+k)%3], Code: 503, Remote: web.IP,
				InboundFlags: "UF", InboundDetails: "upstream_reset_before_response_started{connection_failure,delayed_connect_error:_111}",
				InboundTransportFailure: "delayed_connect_error:_111"})
		}
		s.call(Call{From: web, Service: "orders", At: t, To: orders[(i+2)%3], Code: 503, Flags: "URX", Details: "via_upstream",
			DurationMs: exactly(7), NoUpstreamLog: true, TxBytes: exactly(145)})
	}
	// Every call since the rollout, up to the last second.
	s.traffic(created.Add(30*time.Second), s.windowStart(), 2500, refused)
	s.inWindow(1, refused)
	n := s.countResponses(503)
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders, Stats: map[string]int{
			"rq_503": n * 3, "rq_retry": n * 2, "rq_retry_limit_exceeded": n, "retry_503": n * 2}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: web}
}
