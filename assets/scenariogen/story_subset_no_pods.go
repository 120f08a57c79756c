package main

import "time"

var subsetNoPods = Scenario{
	Name:    "subset-no-pods",
	Title:   "DestinationRule subset v2 selects no pods",
	Summary: "VirtualService keeps 10% on subset v2 after the canary was scaled to zero: 503 UH",
	Description: `
The orders canary was rolled back two hours ago: the v2 Deployment is scaled to zero. The
VirtualService still sends 10% of traffic to subset v2, whose labels (version: v2) now match no pod.
web's Envoy has the cluster outbound|8080|v2|orders.shop.svc.cluster.local with no hosts, so one call
in ten is 503 UH no_healthy_upstream while the Service's endpoints and the v1 subset are healthy.
`,
	Expect: []string{"dr.subset-no-pods"},
	Now:    at("2026-12-02T16:45:12"),
	Build:  buildSubsetNoPods,
}

func buildSubsetNoPods(s *Shop) Target {
	now := s.now
	web, pods := s.subsetWorld(defaultOrdersPods, []string{"v1", "v1", "v1"})
	s.slice(Slice{Name: "web-f65c9", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-e378b", Service: "orders", Endpoints: ready(pods...)})
	const host = "orders.shop.svc.cluster.local"
	s.destinationRule("orders", now.Add(-6*day), Object{{"host", host}, {"subsets", []Object{
		{{"name", "v1"}, {"labels", Object{{"version", "v1"}}}},
		{{"name", "v2"}, {"labels", Object{{"version", "v2"}}}},
	}}})
	s.virtualService("orders", now.Add(-(2*time.Hour + 38*time.Minute)), Object{{"hosts", []string{host}}, {"http", []Object{{
		{"name", "orders-canary"}, {"route", []Object{
			{{"destination", Object{{"host", host}, {"subset", "v1"}}}, {"weight", 90}},
			{{"destination", Object{{"host", host}, {"subset", "v2"}}}, {"weight", 10}},
		}},
	}}}})
	s.webUpstreamLogs(web, pods, nil)
	toV1 := func(t time.Time, i int) {
		s.call(Call{From: web, Service: "orders", At: t, To: pods[i%3], Subset: "v1", Route: "orders-canary"})
	}
	toV2 := func(t time.Time) {
		s.call(noHealthyUpstream(Call{From: web, Service: "orders", At: t, Subset: "v2", Route: "orders-canary"}))
	}
	// Envoy picks the subset by weight: about one call in ten goes to v2.
	s.traffic(now.Add(-15*time.Minute), s.windowStart(), 1800, func(t time.Time, i int) {
		if s.rng.Float64() < 0.1 {
			toV2(t)
			return
		}
		toV1(t, i)
	})
	// It is still happening: one of the last three calls.
	s.inWindow(3, func(t time.Time, i int) {
		if i == 1 {
			toV2(t)
			return
		}
		toV1(t, i)
	})
	n := s.countResponses(503)
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: pods}),
		s.outbound(Outbound{Service: "orders", Pods: pods, Subset: "v1"}),
		s.outbound(Outbound{Service: "orders", Subset: "v2", Stats: map[string]int{"cx_none_healthy": n, "cx_total": 0, "update_empty": 1}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{Routes: []Object{weightedRoute([]WeightedCluster{
		{"outbound|8080|v1|orders.shop.svc.cluster.local", 90},
		{"outbound|8080|v2|orders.shop.svc.cluster.local", 10},
	}, "orders-canary")}})
	return Target{Service: "orders", Source: web}
}
