package main

import "time"

var vsUndefinedSubset = Scenario{
	Name:    "vs-undefined-subset",
	Title:   "VirtualService routes to a subset no DestinationRule defines",
	Summary: "VirtualService routes 20% to subset canary, the DestinationRule lost it: 503 NC",
	Description: `
Since yesterday the orders VirtualService splits 80/20 between subsets stable and canary. 47 minutes
ago a GitOps sync replaced the DestinationRule with an older revision that defines only stable. The
canary pod is running and ready, but no subset names it: istiod builds no cluster
outbound|8080|canary|..., web's route still points 20% of calls at it, and Envoy answers 503 NC
cluster_not_found without ever leaving the pod.
`,
	Expect: []string{"vs.subset-undefined"},
	Now:    at("2026-12-02T10:20:44"),
	Mesh:   MeshOptions{HoldApplicationUntilProxyStarts: true},
	Build:  buildVSUndefinedSubset,
}

func buildVSUndefinedSubset(s *Shop) Target {
	now := s.now
	names := append(append([]string{}, defaultOrdersPods...), "orders-canary-5c9d8f7b6-r2d4k")
	web, pods := s.subsetWorld(names, []string{"v1", "v1", "v1", "canary"})
	s.slice(Slice{Name: "web-b4f8d", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-6c571", Service: "orders", Endpoints: ready(pods...)})
	const host = "orders.shop.svc.cluster.local"
	s.destinationRule("orders", now.Add(-47*time.Minute), Object{{"host", host}, {"subsets", []Object{
		{{"name", "stable"}, {"labels", Object{{"version", "v1"}}}},
	}}})
	s.virtualService("orders", now.Add(-(day + 3*time.Hour)), Object{{"hosts", []string{host}}, {"http", []Object{{
		{"name", "orders-split"}, {"route", []Object{
			{{"destination", Object{{"host", host}, {"subset", "stable"}}}, {"weight", 80}},
			{{"destination", Object{{"host", host}, {"subset", "canary"}}}, {"weight", 20}},
		}},
	}}}})
	s.webUpstreamLogs(web, pods, nil)
	toStable := func(t time.Time, i int) {
		s.call(Call{From: web, Service: "orders", At: t, To: pods[i%3], Subset: "stable", Route: "orders-split"})
	}
	// Envoy picks the subset by weight: one call in five is for canary, a
	// cluster web's Envoy does not have.
	s.traffic(now.Add(-14*time.Minute), s.windowStart(), 1800, func(t time.Time, i int) {
		if s.rng.Float64() < 0.2 {
			s.call(Call{From: web, Service: "orders", At: t, Code: 503, Flags: "NC", Details: "cluster_not_found", NoUpstreamLog: true,
				TxBytes: exactly(0), Cluster: "-", Route: "orders-split"})
			return
		}
		toStable(t, i)
	})
	// The last three calls drew stable.
	s.inWindow(3, toStable)
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: pods}),
		s.outbound(Outbound{Service: "orders", Pods: pods[:3], Subset: "stable"}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{Routes: []Object{weightedRoute([]WeightedCluster{
		{"outbound|8080|stable|orders.shop.svc.cluster.local", 80},
		{"outbound|8080|canary|orders.shop.svc.cluster.local", 20},
	}, "orders-split")}})
	return Target{Service: "orders", Source: web}
}
