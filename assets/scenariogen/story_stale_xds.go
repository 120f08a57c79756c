package main

import "time"

var staleXDS = Scenario{
	Name:    "stale-xds",
	Title:   "Stale proxy: web's Envoy still has the old orders endpoints",
	Summary: "web's throttled sidecar has not ACKed CDS/EDS for 20 min: routes to pods that are gone",
	Description: `
orders was redeployed at 03:31 and has three new, ready pods. web's sidecar runs with a 100m CPU limit
(sidecar.istio.io/proxyCPULimit) and has not acknowledged a CDS or EDS push from istiod since 03:29:
istiod lists it as STALE for clusters and endpoints. Its Envoy still load-balances over the three old
pod addresses, which no longer exist: 503 UF,URX with delayed_connect_error:_113 (no route to host).
The EndpointSlice and Envoy's host list disagree; restarting the pod before saving its state would
destroy the evidence.
`,
	Expect: []string{"xds.stale"},
	Now:    at("2026-12-02T03:52:27"),
	Mesh:   MeshOptions{HoldApplicationUntilProxyStarts: true},
	Build:  buildStaleXDS,
}

func buildStaleXDS(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(2*day + 9*time.Hour)), func(p *PodSpec) {
		p.Hold = true
		p.ProxyResources = Object{{"limits", Object{{"cpu", "100m"}, {"memory", "256Mi"}}}, {"requests", Object{{"cpu", "50m"}, {"memory", "128Mi"}}}}
		p.ExtraAnnotations = Object{{"sidecar.istio.io/proxyCPULimit", "100m"}, {"sidecar.istio.io/proxyCPU", "50m"}, {"sidecar.istio.io/proxyMemoryLimit", "256Mi"}}
	})
	rolled := at("2026-12-02T03:31:06")
	orders := s.ordersPods(rolled, []string{"orders-75c8d9f4b-j6v2n", "orders-75c8d9f4b-r5t8x", "orders-75c8d9f4b-w3q9z"}, func(i int, p *PodSpec) {
		p.Hold = true
		p.Image = "registry.shop.example.com/orders:2.15.1"
		// New pods, new addresses: none of the old ones is reused.
		p.Host = []int{31, 44, 27}[i]
	})
	s.slice(Slice{Name: "web-d4957", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-13118", Service: "orders", Endpoints: ready(orders...), Created: rolled.Add(40 * time.Second)})
	old := []*Pod{ghost("10.244.1.17", "orders-6d8f7c9b5-2kq8v"), ghost("10.244.2.18", "orders-6d8f7c9b5-7xw4n"), ghost("10.244.0.21", "orders-6d8f7c9b5-m9p2d")}
	s.webUpstreamLogs(web, orders, nil)
	s.succeed(web, "orders", old, now.Add(-24*time.Minute), rolled.Add(30*time.Second), 3000)
	toGone := func(t time.Time, i int) {
		s.call(Call{From: web, Service: "orders", At: t, To: old[i%3], Code: 503, Flags: "UF,URX",
			Details:          "upstream_reset_before_response_started{connection_failure,delayed_connect_error:_113}",
			TransportFailure: "delayed_connect_error:_113", DurationMs: exactly(3061), NoUpstreamLog: true})
	}
	// web still sends to the old addresses, up to the last second.
	s.traffic(rolled.Add(52*time.Second), s.windowStart(), 4500, toGone)
	s.inWindow(1, toGone)
	n := s.countResponses(503)
	var hosts []*Host
	for k, nodeName := range []string{"worker-b", "worker-c", "worker-a"} {
		hosts = append(hosts, &Host{IP: old[k].IP, Port: 8080, Node: nodeName, CxTotal: 40 + 3*n, CxConnectFail: n, RqSuccess: 2100 + 40*k, RqError: n / 3})
	}
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Hosts: hosts, Stats: map[string]int{"cx_connect_fail": 3 * n, "rq_retry": 2 * n, "rq_retry_limit_exceeded": n}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	// istiod keeps pushing; web's Envoy stopped acknowledging at 03:29.
	pushed, acked := at("2026-12-02T03:51:58"), at("2026-12-02T03:29:40")
	stale := Object{}
	stale.Set("cluster_sent", s.nonce(pushed))
	stale.Set("cluster_acked", s.nonce(acked))
	stale.Set("endpoint_sent", s.nonce(pushed))
	stale.Set("endpoint_acked", s.nonce(acked))
	s.syncz[web.ProxyID()] = stale
	return Target{Service: "orders", Source: web}
}
