package main

import (
	"fmt"
	"time"
)

var missingServiceEntry = Scenario{
	Name:    "missing-serviceentry",
	Title:   "External host blocked: REGISTRY_ONLY without a ServiceEntry",
	Summary: "REGISTRY_ONLY, checkout calls api.payments.example.com, no ServiceEntry: BlackHoleCluster",
	Description: `
The mesh runs outboundTrafficPolicy REGISTRY_ONLY. checkout 4.0.7, deployed 26 minutes ago, calls the
payment provider's new API host api.payments.example.com; the ServiceEntry payments-provider still
lists only the old payments.example.com. checkout's sidecar sends the TLS connection to
BlackHoleCluster (a TCP entry flagged UH with SNI api.payments.example.com), the app gets "connection
reset by peer" and answers web 502. Run from a checkout pod: its sidecar is the one that blocks.
`,
	Expect: []string{"serviceentry.missing"},
	Now:    at("2026-12-02T12:40:18"),
	Mesh:   MeshOptions{RegistryOnly: true},
	Build:  buildMissingServiceEntry,
}

func buildMissingServiceEntry(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("checkout")
	web := s.webPod(now.Add(-3*day), nil)
	created := now.Add(-26 * time.Minute)
	paymentsAPI := func(p *PodSpec) {
		p.Env = []Object{{{"name", "PAYMENTS_API"}, {"value", "https://api.payments.example.com/v1"}}}
	}
	checkout := []*Pod{
		s.pod("shop", "checkout-7d5b9c8f6-k2j4h", "checkout", "worker-b", 33, created, paymentsAPI),
		s.pod("shop", "checkout-7d5b9c8f6-w9c3n", "checkout", "worker-c", 34, created.Add(11*time.Second), paymentsAPI),
	}
	s.slice(Slice{Name: "web-1fee3", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "checkout-356ad", Service: "checkout", Endpoints: ready(checkout...)})
	s.istio("networking.istio.io/v1", "ServiceEntry", "payments-provider", now.Add(-200*day), Object{
		{"hosts", []string{"payments.example.com"}}, {"location", "MESH_EXTERNAL"},
		{"ports", []Object{{{"name", "tls"}, {"number", 443}, {"protocol", "TLS"}}}}, {"resolution", "DNS"}})
	s.istio("networking.istio.io/v1", "ServiceEntry", "shipping-api", now.Add(-200*day), Object{
		{"hosts", []string{"api.shipping.example.net"}}, {"location", "MESH_EXTERNAL"},
		{"ports", []Object{{{"name", "https"}, {"number", 443}, {"protocol", "TLS"}}}}, {"resolution", "DNS"}})
	for _, p := range append([]*Pod{web}, checkout...) {
		s.proxyLog(p)
	}
	s.appLog(web, webAppStart(web.AppStarted))
	appLog := map[*Pod][]string{}
	for _, p := range checkout {
		appLog[p] = appLines(p.AppStarted, []AppLine{
			{0.2, "INFO", "checkout starting version=4.0.7"},
			{0.3, "INFO", "payments API https://api.payments.example.com/v1"},
			{0.35, "INFO", "listening on :8080"},
		})
	}
	charge := func(t time.Time, i int) {
		p := checkout[i%2]
		port := 40000 + s.rng.IntN(20000)
		// checkout's TLS connection to the provider matches no filter chain
		// of the 0.0.0.0_443 listener (its ServiceEntry names only the old
		// host) and falls through to BlackHoleCluster.
		s.world.log(p.Namespace, p.Name, "istio-proxy", false, AccessEntry{
			Start: t.Add(3 * time.Millisecond), Method: "-", Path: "-", Code: 0, Flags: "UH", Details: "-", UpstreamHost: "-",
			Cluster: "BlackHoleCluster", DownstreamLocal: "203.0.113.10:443", DownstreamRemote: fmt.Sprintf("%s:%d", p.IP, port), Authority: "-",
			DurationMs: 0, UpstreamTime: "-", SNI: "api.payments.example.com", Route: "-",
		}.Line())
		s.call(Call{From: web, Service: "checkout", At: t, To: p, Code: 502, Details: "via_upstream", Method: "POST", Path: "/api/checkout",
			DurationMs: exactly(8), TxBytes: exactly(87)})
		appLog[p] = append(appLog[p], fmt.Sprintf(
			`%s ERROR payment authorization failed: Post "https://api.payments.example.com/v1/charges": read tcp %s:%d->203.0.113.10:443: read: connection reset by peer`,
			accessLogTime(t.Add(4*time.Millisecond)), p.IP, port))
	}
	// web's checkouts alternate between the two pods, and every one fails;
	// the last, a second before the recording, went to k2j4h, the pod the
	// on-call triages from (so it leads the caller search too).
	s.traffic(now.Add(-24*time.Minute), s.windowStart(), 6000, charge)
	s.inWindow(1, charge)
	for _, p := range checkout {
		s.appLog(p, appLog[p])
	}
	// The ServiceEntry hosts' DNS clusters, which the triage reads only in
	// /clusters.
	external := func(name, ip string) *Cluster {
		return &Cluster{Name: name, Hosts: []*Host{{IP: ip, Port: 443}}, Kind: BootstrapDNSCluster, TLS: Plaintext, NotInConfigDump: true}
	}
	s.recordSidecar(checkout[0], []*Cluster{
		s.outbound(Outbound{Service: "checkout", Pods: checkout}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
		external("outbound|443||payments.example.com", "198.51.100.7"),
		external("outbound|443||api.shipping.example.net", "198.51.100.23"),
	}, EnvoyState{Listeners: listeners(Listener{"0.0.0.0_443", "0.0.0.0", 443})})
	return Target{Service: "checkout", Source: checkout[0]}
}
