package main

import (
	"fmt"
	"time"
)

var appRunsAsProxyUID = Scenario{
	Name:    "app-runs-as-proxy-uid",
	Title:   "web runs as UID 1337 and goes around its own sidecar",
	Summary: "web 1.9 took runAsUser 1337 from a hardened template: its calls to orders leave in plaintext and STRICT resets them",
	Description: `
web 1.9.0 rolled out nine minutes ago with a securityContext copied from the platform team's
hardened template, which runs the container as UID 1337: the UID istio-proxy runs as, and the one
istio-iptables lets out without redirecting it to Envoy. Every call web makes to orders now leaves
the pod as the app wrote it, in plaintext, around web's own sidecar; shop has been STRICT for
months, so the orders sidecars find no filter chain for it (NR filter_chain_not_found in their
inbound log, from web's pod IP) and reset the connection. web logs "connection reset by peer";
its istio-proxy logs nothing of those calls, and istiod still shows web's proxy SYNCED with a
healthy orders cluster it never uses. Triage from web's pod.
`,
	Expect: []string{"sidecar.app-runs-as-proxy-uid", "mtls.plaintext-to-strict"},
	Now:    at("2026-12-03T10:41:20"),
	Mesh:   MeshOptions{HoldApplicationUntilProxyStarts: true},
	Build:  buildAppRunsAsProxyUID,
}

func buildAppRunsAsProxyUID(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	s.istio("security.istio.io/v1", "PeerAuthentication", "default", now.Add(-(83*day + 4*time.Hour)),
		Object{{"mtls", Object{{"mode", "STRICT"}}}})
	orders := s.ordersPods(now.Add(-(2*day + 5*time.Hour)), nil, func(_ int, p *PodSpec) { p.Hold = true })
	rolled := now.Add(-(9*time.Minute + 12*time.Second))
	web := s.pod("shop", "web-6c8f9d7b5-h2xkp", "web", "worker-a", 9, rolled, func(p *PodSpec) {
		p.Hold = true
		p.Image = "registry.shop.example.com/web:1.9.0"
		p.Readiness = &HTTPCheck{"/healthz", 8080}
		// The hardened template's: non-root, read-only, no capabilities,
		// and the UID the platform team's base image happened to use.
		p.SecurityContext = Object{{"allowPrivilegeEscalation", false}, {"capabilities", Object{{"drop", []string{"ALL"}}}},
			{"readOnlyRootFilesystem", true}, {"runAsGroup", 1337}, {"runAsNonRoot", true}, {"runAsUser", 1337}}
	})
	s.slice(Slice{Name: "web-k2d8s", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-2b3d9", Service: "orders", Endpoints: ready(orders...)})
	for _, p := range orders {
		s.proxyLog(p)
		s.appLog(p, ordersAppStart(p.AppStarted))
	}
	s.proxyLog(web)

	// Before the rollout the old web pod called orders through its sidecar,
	// in mTLS; its pod is gone, its 200s are in the orders inbound logs.
	old := &Pod{Namespace: "shop", Name: "web-5b7d9c6f4-q8w2e", App: "web", IP: "10.244.0.31", Sidecar: ClassicSidecar}
	s.traffic(now.Add(-25*time.Minute), rolled.Add(-2*time.Second), 3000, func(t time.Time, i int) {
		s.call(Call{Service: "orders", At: t, To: orders[i%3], Remote: old.IP})
	})

	// web 1.9's calls: plaintext from web's pod IP, straight to an orders
	// pod (kube-proxy picked it), refused by its STRICT inbound listener.
	lines := []AppLine{
		{0.2, "INFO", "web starting version=1.9.0"},
		{0.3, "INFO", "listening on :8080"},
	}
	start := web.AppStarted
	n := 0
	for t := start.Add(4 * time.Second); t.Before(now.Add(-time.Second)); t = t.Add(millis(float64(2200 + s.rng.IntN(1600)))) {
		up := orders[n%3]
		port := 41000 + s.rng.IntN(20000)
		s.world.log("shop", up.Name, "istio-proxy", false, noFilterChainLine(t.Add(time.Millisecond), up.IP, web.IP, port))
		lines = append(lines, AppLine{t.Sub(start).Seconds() + 0.003, "ERROR", fmt.Sprintf(
			"GET http://orders:8080/api/orders?customer=%d failed: read tcp %s:%d->%s:8080: read: connection reset by peer",
			between(s.rng, 10000, 99999), web.IP, port, serviceIPs["orders"])})
		n++
	}
	s.appLog(web, appLines(start, lines))

	// istiod pushes web's proxy the orders cluster as to any meshed pod;
	// the app's connections never reach it.
	var hosts []*Host
	for _, p := range orders {
		hosts = append(hosts, &Host{IP: p.IP, Port: 8080, Node: p.Node})
	}
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Hosts: hosts}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: web}
}
