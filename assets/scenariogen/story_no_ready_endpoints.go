package main

import (
	"time"
)

var noReadyEndpoints = Scenario{
	Name:    "no-ready-endpoints",
	Title:   "No ready endpoints: readiness failing after a deploy",
	Summary: "orders pods Running but never Ready (migration stuck): 503 UH no_healthy_upstream",
	Description: `
orders 2.15.0 was deployed with strategy Recreate at 07:18. The new build refuses readiness until a
schema migration has run, and the migration Job is stuck, so both pods are Running but not Ready: the
EndpointSlice lists them with ready false, istiod sends web's Envoy an empty endpoint set and every
call is 503 UH no_healthy_upstream. Nothing is wrong with the mesh; the fix is in the rollout.
`,
	Expect: []string{"endpoints.none-ready"},
	Now:    at("2026-12-02T07:31:50"),
	Mesh:   MeshOptions{HoldApplicationUntilProxyStarts: true},
	Build:  buildNoReadyEndpoints,
}

func buildNoReadyEndpoints(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(2*day + 6*time.Hour)), func(p *PodSpec) { p.Hold = true })
	created := at("2026-12-02T07:18:04")
	orders := s.ordersPods(created, []string{"orders-69f4d7c8b-fx2mw", "orders-69f4d7c8b-s9hkt"}, func(_ int, p *PodSpec) {
		p.Hold = true
		p.Image = "registry.shop.example.com/orders:2.15.0"
		p.AppReady = false
		p.ReadyMessage = "containers with unready status: [orders]"
	})
	s.slice(Slice{Name: "web-c4x42", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-a61c2", Service: "orders", Endpoints: []Endpoint{{Pod: orders[0].Name}, {Pod: orders[1].Name}}})
	s.webUpstreamLogs(web, orders, func(t time.Time) []string {
		lines := []AppLine{
			{0.21, "INFO", "orders starting version=2.15.0 commit=77ad0e2"},
			{0.36, "INFO", "database connected pool=10"},
			{0.41, "INFO", "listening on :8080"},
			{0.44, "WARN", "schema version 41, this build needs 42: readiness stays false until migration job orders-migrate-29459018 completes"},
		}
		for k := 1; k < 14; k++ {
			lines = append(lines, AppLine{float64(60*k) + 2.0, "WARN", "readiness check failed: schema version 41 < 42 (migration pending)"})
		}
		return appLines(t, lines)
	})
	previous := []*Pod{ghost("10.244.1.12", "orders-5b8c7d9f4-kx8pq"), ghost("10.244.2.14", "orders-5b8c7d9f4-w7tbn")}
	s.succeed(web, "orders", previous, now.Add(-22*time.Minute), created.Add(-3*time.Second), 4000)
	noHost := func(t time.Time, _ int) {
		s.call(noHealthyUpstream(Call{From: web, Service: "orders", At: t}))
	}
	// Every call since the deploy, up to the last second, finds no endpoint.
	s.traffic(created.Add(time.Second), s.windowStart(), 3500, noHost)
	s.inWindow(1, noHost)
	n := s.countResponses(503)
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Stats: map[string]int{"cx_none_healthy": n, "cx_total": 41, "membership_change": 6, "update_empty": 2}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: web}
}
