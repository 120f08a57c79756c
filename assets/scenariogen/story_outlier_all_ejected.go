package main

import "time"

var outlierAllEjected = Scenario{
	Name:    "outlier-all-ejected",
	Title:   "Outlier detection ejected every host",
	Summary: "consecutive5xxErrors 1 + maxEjectionPercent 100: one DB blip ejected every host",
	Description: `
The orders DestinationRule sets outlierDetection consecutive5xxErrors: 1 and maxEjectionPercent: 100.
At 05:09:58 a postgres failover made each orders pod answer one 500. One error per host was enough:
web's Envoy ejected all three (failed_outlier_check) for baseEjectionTime 3m, and with Istio's panic
threshold at 0 it has nowhere to send traffic, so every call since is 503 UH no_healthy_upstream while
Kubernetes shows three ready, healthy pods.
`,
	Expect: []string{"outlier.all-ejected"},
	Now:    at("2026-12-02T05:12:33"),
	Build:  buildOutlierAllEjected,
}

func buildOutlierAllEjected(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(day + 8*time.Hour)), nil)
	orders := s.ordersPods(now.Add(-(2*day + 4*time.Hour)), nil, nil)
	s.slice(Slice{Name: "web-16cd4", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-df4x6", Service: "orders", Endpoints: ready(orders...)})
	s.destinationRule("orders", now.Add(-9*day), Object{{"host", "orders.shop.svc.cluster.local"}, {"trafficPolicy", Object{{"outlierDetection", Object{
		{"consecutive5xxErrors", 1}, {"interval", "5s"}, {"baseEjectionTime", "3m"}, {"maxEjectionPercent", 100}}}}}})
	blip := at("2026-12-02T05:09:58")
	s.webUpstreamLogs(web, orders, nil)
	for i, p := range orders {
		s.appLog(p, appLines(blip, []AppLine{
			{0.2 + float64(0.4*float64(i)), "ERROR", "list orders: pq: the database system is starting up (postgres failover)"},
			{3.5, "INFO", "database reconnected pool=10"},
		}))
	}
	s.succeed(web, "orders", orders, now.Add(-13*time.Minute), blip, 1500)
	for i, p := range orders {
		s.call(Call{From: web, Service: "orders", At: blip.Add(time.Duration(200+400*i) * time.Millisecond), To: p, Code: 500,
			Details: "via_upstream", TxBytes: exactly(61)})
	}
	noHost := func(t time.Time, _ int) {
		s.call(noHealthyUpstream(Call{From: web, Service: "orders", At: t}))
	}
	// Every call since the ejections, up to the last second, finds no host.
	s.traffic(blip.Add(seconds(1.4)), s.windowStart(), 2500, noHost)
	s.inWindow(1, noHost)
	n := s.countResponses(503)
	var hosts []*Host
	for i, p := range orders {
		hosts = append(hosts, &Host{IP: p.IP, Port: 8080, Node: p.Node, Ejected: true, CxTotal: 4 + i, RqSuccess: 900 + 37*i, RqError: 1, CxActive: 1})
	}
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Hosts: hosts,
			Outlier: &OutlierDetection{Consecutive5xx: 1, Interval: "5s", BaseEjectionTime: "180s", MaxEjectionPercent: 100},
			OutlierStats: map[string]int{"ejections_active": 3, "ejections_consecutive_5xx": 3, "ejections_detected_consecutive_5xx": 3,
				"ejections_enforced_consecutive_5xx": 3, "ejections_enforced_total": 3, "ejections_total": 3},
			Stats: map[string]int{"cx_none_healthy": n, "rq_500": 3}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: web}
}
