package main

import "time"

var healthy = Scenario{
	Name:    "healthy",
	Title:   "Healthy: orders answers 200s",
	Summary: "web -> orders with native sidecars, STRICT mTLS, all SYNCED: nothing for the check to find",
	Description: `
web calls orders in namespace shop. Both run Istio 1.24 native sidecars (ENABLE_NATIVE_SIDECARS on
Kubernetes 1.30), mesh-wide mTLS is STRICT and every proxy is SYNCED. All three orders endpoints are
ready and healthy in web's Envoy, the DestinationRule's outlier detection is moderate
(consecutive5xxErrors 5, maxEjectionPercent 50) and the access logs show only 200s. The check must
find nothing: this is what a service looks like when the mesh is not the problem.
`,
	Expect: []string{},
	Now:    at("2026-12-02T09:42:10"),
	Mesh:   MeshOptions{NativeSidecars: true},
	Build:  buildHealthy,
}

func buildHealthy(s *Shop) Target {
	now := s.now
	s.namespace()
	s.world.IstioObject("security.istio.io/v1", "PeerAuthentication", "istio-system", "default", now.Add(-9*day),
		Object{{"mtls", Object{{"mode", "STRICT"}}}})
	s.service("web")
	s.service("orders")
	created := now.Add(-(3*day + 5*time.Hour + 12*time.Minute))
	web := s.webPod(created.Add(-2*time.Hour), nil)
	orders := s.ordersPods(created, nil, nil)
	s.slice(Slice{Name: "web-9822b", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-7ff85", Service: "orders", Endpoints: ready(orders...)})
	s.destinationRule("orders", now.Add(-40*day), Object{{"host", "orders.shop.svc.cluster.local"}, {"trafficPolicy", Object{
		{"outlierDetection", Object{{"consecutive5xxErrors", 5}, {"interval", "30s"}, {"baseEjectionTime", "30s"}, {"maxEjectionPercent", 50}}}}}})
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Pods: orders,
			Outlier: &OutlierDetection{Consecutive5xx: 5, Interval: "30s", BaseEjectionTime: "30s", MaxEjectionPercent: 50}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	s.webUpstreamLogs(web, orders, nil)
	// A quiet moment: no call in the last seconds (the metrics window).
	s.succeed(web, "orders", orders, now.Add(-12*time.Minute), s.windowStart(), 5000)
	return Target{Service: "orders", Source: web}
}
