package main

import (
	"fmt"
	"time"
)

var probeRewriteOffStrict = Scenario{
	Name:    "probe-rewrite-off-strict",
	Title:   "Probe rewrite off, then shop went STRICT: orders never ready",
	Summary: "orders' template still says rewriteAppHTTPProbers \"false\"; shop went STRICT at 02:10: readiness resets, 503 UH",
	Description: `
Three days ago someone debugging orders' readiness added sidecar.istio.io/rewriteAppHTTPProbers:
"false" to its pod template and never took it out: the injector left the httpGet readiness probe on
port 8080 as it was, so the kubelet has probed the app through the sidecar's inbound listener in
plaintext ever since, which PERMISSIVE accepted. At 02:10 the security team applied a namespace-wide
PeerAuthentication STRICT in shop. The orders sidecars now hold no plaintext filter chain: every
kubelet probe is reset (NR filter_chain_not_found from each node's address in their inbound log, every
five seconds), all three pods went unready within fifteen seconds, the EndpointSlice has no ready
endpoint and web gets 503 UH no_healthy_upstream. The app itself is fine. Triage from web's pod.
`,
	Expect: []string{"probe.blocked-by-strict", "endpoints.none-ready"},
	Now:    at("2026-12-03T02:24:30"),
	Mesh:   MeshOptions{HoldApplicationUntilProxyStarts: true},
	Build:  buildProbeRewriteOffStrict,
}

func buildProbeRewriteOffStrict(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	strict := at("2026-12-03T02:10:04")
	s.istio("security.istio.io/v1", "PeerAuthentication", "default", strict, Object{{"mtls", Object{{"mode", "STRICT"}}}})
	web := s.webPod(now.Add(-(4*day + 3*time.Hour)), func(p *PodSpec) { p.Hold = true })
	created := now.Add(-(3*day + 5*time.Hour + 12*time.Minute))
	// Three failed probes, five seconds apart, after STRICT took effect.
	unready := strict.Add(17 * time.Second)
	orders := s.ordersPods(created, nil, func(_ int, p *PodSpec) {
		p.Hold = true
		p.NoProbeRewrite = true
		p.Readiness = &HTTPCheck{"/healthz/ready", 8080}
		p.AppReady = false
		p.ReadyAt = unready
		p.ReadyMessage = "containers with unready status: [orders]"
	})
	s.slice(Slice{Name: "web-h7w2d", Service: "web", Endpoints: ready(web)})
	var notReady []Endpoint
	for _, p := range orders {
		notReady = append(notReady, Endpoint{Pod: p.Name})
	}
	s.slice(Slice{Name: "orders-2b3d9", Service: "orders", Endpoints: notReady, Created: unready})
	s.webUpstreamLogs(web, orders, nil)

	// The kubelet probes each pod every five seconds from its node's
	// address, in plaintext, through the sidecar's inbound listener: served
	// while shop was PERMISSIVE, reset since it went STRICT.
	for i, p := range orders {
		hostIP := nodeOf(p.Node).ip
		offset := time.Duration(1300+700*i) * time.Millisecond
		for t := strict.Add(-2 * time.Minute).Add(offset); t.Before(now); t = t.Add(5 * time.Second) {
			port := 50000 + s.rng.IntN(15000)
			if t.Before(strict) {
				s.world.log("shop", p.Name, "istio-proxy", false, s.accessLine(AccessEntry{
					Start: t, Method: "GET", Path: "/healthz/ready", Code: 200, Flags: "-", Details: "via_upstream",
					UpstreamHost: p.IP + ":8080", Cluster: "inbound|8080||", DownstreamLocal: p.IP + ":8080",
					DownstreamRemote: fmt.Sprintf("%s:%d", hostIP, port), Authority: p.IP + ":8080", UserAgent: "kube-probe/1.30",
					UpstreamLocal: fmt.Sprintf("127.0.0.6:%d", 30000+s.rng.IntN(30000)), TxBytes: 2, DurationMs: 1, Route: "default",
				}))
				continue
			}
			s.world.log("shop", p.Name, "istio-proxy", false, noFilterChainLine(t, p.IP, hostIP, port))
		}
	}

	s.succeed(web, "orders", orders, now.Add(-25*time.Minute), unready, 3000)
	noHost := func(t time.Time, _ int) {
		s.call(noHealthyUpstream(Call{From: web, Service: "orders", At: t}))
	}
	s.traffic(unready.Add(time.Second), s.windowStart(), 3000, noHost)
	s.inWindow(2, noHost)
	n := s.countResponses(503)
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Stats: map[string]int{"cx_none_healthy": n, "membership_change": 4, "update_empty": 1}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: web}
}
