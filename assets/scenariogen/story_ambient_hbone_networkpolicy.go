package main

import (
	"strconv"
	"time"
)

var ambientHBONENetworkPolicy = Scenario{
	Name:    "ambient-hbone-networkpolicy",
	Title:   "Ambient: a NetworkPolicy admits port 8080, not HBONE's 15008",
	Summary: "shop moved to ambient; a default-deny NetworkPolicy admits web to orders on 8080 only: every call times out",
	Description: `
shop runs in ambient mode: no sidecars, ztunnel on every node carries the pods' connections. At 04:51
the platform team rolled out the namespace's new NetworkPolicies, written in the sidecar era: a
default deny, and orders-from-web admitting web to the orders pods on TCP 8080. In ambient every
connection to a pod arrives on its port 15008 (HBONE), never on 8080, so the policy drops them all:
web's ztunnel logs "connection timed out, maybe a NetworkPolicy is blocking HBONE port 15008" after
10 s each, and web answers its users 503 when its calls to orders time out. The orders pods are
ready and serve nothing. There is no Envoy on web to read: the ztunnel logs are the evidence.
`,
	Expect: []string{"ambient.hbone-blocked"},
	Now:    at("2026-12-02T05:03:10"),
	Build:  buildAmbientHBONENetworkPolicy,
}

func buildAmbientHBONENetworkPolicy(s *Shop) Target {
	now := s.now
	s.ambientNamespace(nil)
	s.service("web")
	s.service("orders")
	enrolled := func(p *PodSpec) { inAmbient(p, true) }
	web := s.webPod(now.Add(-(day + 3*time.Hour)), enrolled)
	orders := s.ordersPods(now.Add(-(2*day + 5*time.Hour)), nil, func(_ int, p *PodSpec) { inAmbient(p, true) })
	s.slice(Slice{Name: "web-7a9ea", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-f88e7", Service: "orders", Endpoints: ready(orders...)})
	z := s.ztunnels("ztunnel-c6435", "ztunnel-59538", "ztunnel-49bfe")

	applied := at("2026-12-02T04:51:02")
	s.networkPolicy("default-deny", applied, Object{{"podSelector", Object{}}, {"policyTypes", []string{"Ingress"}}})
	s.networkPolicy("orders-from-web", applied.Add(time.Second), Object{
		{"podSelector", Object{{"matchLabels", Object{{"app", "orders"}}}}},
		{"policyTypes", []string{"Ingress"}},
		{"ingress", []Object{{
			{"from", []Object{{{"podSelector", Object{{"matchLabels", Object{{"app", "web"}}}}}}}},
			{"ports", []Object{{{"port", 8080}, {"protocol", "TCP"}}}},
		}}},
	})

	s.appLog(web, webAppStart(web.AppStarted))
	for _, p := range orders {
		s.appLog(p, ordersAppStart(p.AppStarted))
	}
	// Before the policies: connections complete, logged on both sides.
	s.traffic(now.Add(-25*time.Minute), applied, 9000, func(t time.Time, i int) {
		to := orders[i%len(orders)]
		sent, recv, ms := 380+s.rng.IntN(400), 900+s.rng.IntN(1200), 3+s.rng.IntN(12)
		s.ztunnelLog(z, web.Node, ZConn{At: t.Add(time.Duration(ms) * time.Millisecond), From: web, Target: to, Service: "orders", Port: 8080, Sent: sent, Recv: recv, DurationMs: ms})
		s.ztunnelLog(z, to.Node, ZConn{At: t.Add(time.Duration(ms-1) * time.Millisecond), From: web, Target: to, Service: "orders", Port: 8080, Inbound: true, Sent: recv, Recv: sent, DurationMs: ms - 1})
	})
	// After: every connect to 15008 times out after 10 s; nothing arrives.
	var webLines []AppLine
	start := applied.Add(seconds(1.7))
	s.traffic(start, now.Add(-11*time.Second), 4000, func(t time.Time, i int) {
		to := orders[i%len(orders)]
		ms := 10001 + s.rng.IntN(3)
		s.ztunnelLog(z, web.Node, ZConn{At: t.Add(time.Duration(ms) * time.Millisecond), From: web, Target: to, Service: "orders", Port: 8080, DurationMs: ms,
			Error: "connection timed out, maybe a NetworkPolicy is blocking HBONE port 15008: deadline has elapsed"})
		if i%4 == 0 {
			webLines = append(webLines, AppLine{t.Add(10 * time.Second).Sub(web.AppStarted).Seconds(), "ERROR",
				`GET /checkout -> 503: orders: Get "http://orders:8080/api/orders?customer=` + strconv.Itoa(10000+s.rng.IntN(89999)) + `": context deadline exceeded`})
		}
	})
	s.appLog(web, appLines(web.AppStarted, webLines))

	s.recordZtunnelConfig(z[web.Node], append([]*Pod{web}, orders...), map[*Pod]bool{web: true, orders[0]: true, orders[1]: true, orders[2]: true},
		[]ZService{{Name: "orders", VIP: serviceIPs["orders"], Port: 8080, Pods: orders}, {Name: "web", VIP: serviceIPs["web"], Port: 8080, Pods: []*Pod{web}}})
	return Target{Service: "orders", Source: web}
}
