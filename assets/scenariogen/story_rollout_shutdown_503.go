package main

import "time"

var rolloutShutdown503 = Scenario{
	Name:    "rollout-shutdown-503",
	Title:   "503s during a rollout: the sidecar exits before the app",
	Summary: "503 UC/UF bursts while orders rolls out: the sidecar exits before the app drains",
	Description: `
orders is mid-rollout (2.14.0 -> 2.15.0). Its pods run classic sidecars with the mesh defaults: no
terminationDrainDuration beyond 5 s, no EXIT_ON_ZERO_ACTIVE_CONNECTIONS, and the app has no preStop
hook. On SIGTERM pilot-agent drains for 5 s and kills Envoy while the app keeps serving for its 30 s
grace period: requests in flight are reset (503 UC) and new ones are refused until web's EDS drops the
address (503 UF,URX, connection refused). The old pod's own outbound calls fail too. Two old pods are
terminating right now, one with its istio-proxy already exited.
`,
	Expect: []string{"shutdown.proxy-exits-first"},
	Now:    at("2026-12-02T03:20:30"),
	Build:  buildRolloutShutdown503,
}

func buildRolloutShutdown503(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(2*day + time.Hour)), nil)
	const oldRS, newRS = "orders-6d8f7c9b5", "orders-85b9f6d7c"
	oldCreated := now.Add(-(6*day + 3*time.Hour))
	// 2kq8v: deleted 03:20:05; its sidecar drained 5 s and exited while the
	// app still finishes requests. 7xw4n: deleted 03:20:27, draining now.
	deleted1, deleted2 := at("2026-12-02T03:20:05"), at("2026-12-02T03:20:27")
	old1 := s.pod("shop", oldRS+"-2kq8v", "orders", "worker-b", 17, oldCreated, func(p *PodSpec) {
		p.Deletion = deleted1.Add(30 * time.Second)
		p.ProxyReady = false
		p.ReadyAt = deleted1.Add(6 * time.Second)
		p.ReadyMessage = "containers with unready status: [istio-proxy]"
		p.ProxyExited = &Termination{ExitCode: 0, Reason: "Completed", StartedAt: oldCreated.Add(3 * time.Second), FinishedAt: deleted1.Add(5 * time.Second)}
	})
	old2 := s.pod("shop", oldRS+"-7xw4n", "orders", "worker-c", 18, oldCreated.Add(14*time.Second), func(p *PodSpec) {
		p.Deletion = deleted2.Add(30 * time.Second)
	})
	var news []*Pod
	for _, plan := range []struct {
		suffix, node string
		host         int
		created      string
	}{{"h4k2m", "worker-a", 34, "03:19:40"}, {"p7r9t", "worker-b", 35, "03:19:52"}, {"x2v8c", "worker-c", 36, "03:20:14"}} {
		created := at("2026-12-02T" + plan.created)
		news = append(news, s.pod("shop", newRS+"-"+plan.suffix, "orders", plan.node, plan.host, created, func(p *PodSpec) {
			p.Image = "registry.shop.example.com/orders:2.15.0"
			p.ReadyAt = created.Add(12 * time.Second)
		}))
	}
	s.slice(Slice{Name: "web-812cc", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-6f26d", Service: "orders", Created: deleted2, Endpoints: append([]Endpoint{
		{Pod: old1.Name, Terminating: true},
		{Pod: old2.Name, Serving: true, Terminating: true},
	}, ready(news...)...)})
	s.webUpstreamLogs(web, append([]*Pod{old1, old2}, news...), nil)
	gone := ghost("10.244.0.21", "orders-6d8f7c9b5-m9p2d") // deleted at 03:19:52, already gone
	// Before the rollout: 200s from the three old pods.
	olds := []*Pod{old1, old2, gone}
	s.succeed(web, "orders", olds, now.Add(-11*time.Minute), at("2026-12-02T03:19:52"), 3000)

	burst := func(p *Pod, exitAt time.Time) {
		// In-flight requests reset when Envoy is killed (UC, not retried),
		// then connects refused until web's EDS drops the address (UF,URX).
		for k := 0; k < 3; k++ {
			s.call(Call{From: web, Service: "orders", At: exitAt.Add(time.Duration(40+90*k) * time.Millisecond), To: p, Code: 503, Flags: "UC",
				Details: "upstream_reset_before_response_started{connection_termination}", DurationMs: exactly(1200 + 300*k), NoUpstreamLog: true,
				Method: "POST", Path: "/api/orders"})
		}
		for k := 0; k < 4; k++ {
			s.call(Call{From: web, Service: "orders", At: exitAt.Add(time.Duration(400+350*k) * time.Millisecond), To: p, Code: 503, Flags: "UF,URX",
				Details:          "upstream_reset_before_response_started{connection_failure,delayed_connect_error:_111}",
				TransportFailure: "delayed_connect_error:_111", DurationMs: exactly(2), NoUpstreamLog: true})
		}
	}
	burst(gone, at("2026-12-02T03:19:57"))
	burst(old1, deleted1.Add(5*time.Second))
	s.succeed(web, "orders", []*Pod{old2, news[0], news[1]}, at("2026-12-02T03:19:53"), s.windowStart(), 1500)
	// In the last seconds old2 was deleted too; the new pods serve.
	s.inWindow(2, s.served(web, "orders", news))
	// Old pods' sidecars: pilot-agent drains for the default 5 s, then
	// kills Envoy; the app has a 30 s grace period and no preStop.
	s.world.log("shop", old1.Name, "istio-proxy", false, agentDrain(deleted1.Add(3*time.Millisecond))...)
	s.world.log("shop", old2.Name, "istio-proxy", false, agentDrain(deleted2.Add(3 * time.Millisecond))[:3]...)
	s.appLog(old1, appLines(deleted1, []AppLine{
		{0.004, "INFO", "SIGTERM received: finishing in-flight requests (grace 25s)"},
		{5.62, "ERROR", "publish order-shipped event failed: dial tcp 10.96.0.20:5432: connect: connection refused"},
		{7.1, "ERROR", "publish order-shipped event failed: dial tcp 10.96.0.20:5432: connect: connection refused"},
	}))
	s.appLog(old2, appLines(deleted2, []AppLine{{0.004, "INFO", "SIGTERM received: finishing in-flight requests (grace 25s)"}}))
	const resets, refused = 6, 8
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: news, Stats: map[string]int{
			"cx_destroy_remote_with_active_rq": resets, "cx_connect_fail": refused * 3, "rq_503": 0,
			"rq_retry": refused * 2, "rq_retry_limit_exceeded": refused, "membership_change": 9}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: web}
}
