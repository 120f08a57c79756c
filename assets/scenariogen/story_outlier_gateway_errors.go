package main

import "time"

var outlierGatewayErrors = Scenario{
	Name:    "outlier-gateway-errors",
	Title:   "Outlier detection on one gateway error ejected every host (Istio 1.24 output)",
	Summary: "consecutiveGatewayErrors 1 + maxEjectionPercent 100: one 502 each and orders is gone",
	Description: `
The orders DestinationRule was tuned for "fast failover" from a blog post: outlierDetection
consecutiveGatewayErrors: 1, maxEjectionPercent: 100, and no consecutive5xxErrors. At 22:04:11 the
payment provider orders calls had a 20-second outage, and orders maps its failures to 502 Bad Gateway.
A 502 is a gateway error: web's Envoy ejected each orders pod after its first one, all three within a
second, for baseEjectionTime 2m and longer on each repeat. Every call since is 503 UH
no_healthy_upstream while the three pods are ready and answering their health checks. The mesh runs
Istio 1.24: cluster stats carry the alt_stat_name (NAME;) and the access log is JSON.
`,
	Expect: []string{"outlier.all-ejected"},
	Now:    at("2026-12-02T22:07:26"),
	Shapes: Shapes{AltStatNames: true, AccessLog: AccessLogJSON},
	Build:  buildOutlierGatewayErrors,
}

func buildOutlierGatewayErrors(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(2*day + 3*time.Hour)), nil)
	orders := s.ordersPods(now.Add(-(2*day + 9*time.Hour)), nil, nil)
	s.slice(Slice{Name: "web-ca196", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-5ce48", Service: "orders", Endpoints: ready(orders...)})
	s.destinationRule("orders", now.Add(-6*day), Object{{"host", "orders.shop.svc.cluster.local"}, {"trafficPolicy", Object{{"outlierDetection", Object{
		{"consecutiveGatewayErrors", 1}, {"interval", "10s"}, {"baseEjectionTime", "2m"}, {"maxEjectionPercent", 100}}}}}})
	outage := at("2026-12-02T22:04:11")
	s.webUpstreamLogs(web, orders, nil)
	for i, p := range orders {
		s.appLog(p, appLines(outage, []AppLine{
			{0.1 + 0.3*float64(i), "ERROR", "create order: payment provider: dial tcp 203.0.113.40:443: i/o timeout: answering 502"},
			{21.0, "INFO", "payment provider reachable again"},
		}))
	}
	s.succeed(web, "orders", orders, now.Add(-12*time.Minute), outage, 1400)
	for i, p := range orders {
		s.call(Call{From: web, Service: "orders", At: outage.Add(time.Duration(100+300*i) * time.Millisecond), To: p, Code: 502,
			Method: "POST", Path: "/api/orders", Details: "via_upstream", TxBytes: exactly(58)})
	}
	noHost := func(t time.Time, _ int) {
		s.call(noHealthyUpstream(Call{From: web, Service: "orders", At: t}))
	}
	// Every call since the ejections, up to the last seconds, finds no host.
	s.traffic(outage.Add(seconds(1.2)), s.windowStart(), 1900, noHost)
	s.inWindow(2, noHost)
	n := s.countResponses(503)
	var hosts []*Host
	for i, p := range orders {
		hosts = append(hosts, &Host{IP: p.IP, Port: 8080, Node: p.Node, Ejected: true, CxTotal: 6 + i, RqSuccess: 700 + 41*i, RqError: 1, CxActive: 1})
	}
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Hosts: hosts,
			Outlier: &OutlierDetection{ConsecutiveGatewayErrors: 1, Interval: "10s", BaseEjectionTime: "120s", MaxEjectionPercent: 100},
			OutlierStats: map[string]int{"ejections_active": 3, "ejections_detected_consecutive_gateway_failure": 3,
				"ejections_enforced_consecutive_gateway_failure": 3, "ejections_enforced_total": 3, "ejections_total": 3},
			Stats: map[string]int{"cx_none_healthy": n, "rq_502": 3}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: web}
}
