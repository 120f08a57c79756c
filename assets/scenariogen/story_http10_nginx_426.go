package main

import (
	"fmt"
	"time"
)

var http10Nginx426 = Scenario{
	Name:    "http10-nginx-426",
	Title:   "nginx proxies to orders in HTTP/1.0: 426 Upgrade Required",
	Summary: "the new nginx frontend's proxy_pass speaks HTTP/1.0; its sidecar answers 426 low_version to every /api call",
	Description: `
The storefront moved its static files and API proxy to an nginx frontend this morning. nginx's
proxy_pass speaks HTTP/1.0 unless told proxy_http_version 1.1, and the config has no such line.
orders' port is named http, so frontend's sidecar holds an HTTP listener for it, and Envoy's HTTP/1
codec refuses HTTP/1.0 with its own 426 Upgrade Required (details low_version) unless istiod set
accept_http_10, which it did not: every /api call dies in frontend's own sidecar, with no response
flag and no 5xx. nginx logs the 426 as orders' answer; orders' pods never see a request. Triage from
frontend's pod.
`,
	Expect: []string{"http.1.0-rejected"},
	Now:    at("2026-12-03T11:06:40"),
	Mesh:   MeshOptions{HoldApplicationUntilProxyStarts: true},
	Build:  buildHTTP10Nginx426,
}

func buildHTTP10Nginx426(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("frontend")
	s.service("orders")
	deployed := now.Add(-(41*time.Minute + 9*time.Second))
	frontend := s.pod("shop", "frontend-7f6c9d8b4-t5qzx", "frontend", "worker-a", 14, deployed, func(p *PodSpec) {
		p.Hold = true
		p.Image = "docker.io/library/nginx:1.27.3"
		p.Readiness = &HTTPCheck{"/", 8080}
	})
	orders := s.ordersPods(now.Add(-(6*day + 2*time.Hour)), nil, func(_ int, p *PodSpec) { p.Hold = true })
	s.slice(Slice{Name: "frontend-p8r4m", Service: "frontend", Endpoints: ready(frontend)})
	s.slice(Slice{Name: "orders-2b3d9", Service: "orders", Endpoints: ready(orders...)})
	for _, p := range orders {
		s.proxyLog(p)
		s.appLog(p, ordersAppStart(p.AppStarted))
	}
	s.proxyLog(frontend)

	// Browsers' calls reach nginx through the ingress gateway; each /api
	// call nginx proxies to orders in HTTP/1.0, and frontend's sidecar
	// answers 426 before any route: no cluster, no upstream.
	// nginx's access log, as it writes it: the 426 is "orders' answer".
	var nginx []string
	const gatewayIP = "10.244.1.6"
	for t := frontend.AppStarted.Add(50 * time.Second); t.Before(now.Add(-time.Second)); t = t.Add(millis(float64(2500 + s.rng.IntN(4000)))) {
		path := fmt.Sprintf("/api/orders?customer=%d", between(s.rng, 10000, 99999))
		port := 42000 + s.rng.IntN(20000)
		s.world.log("shop", frontend.Name, "istio-proxy", false, s.accessLine(AccessEntry{
			Start: t, Method: "GET", Path: path, Protocol: "HTTP/1.0", Code: 426, Flags: "-", Details: "low_version",
			UpstreamHost: "-", Cluster: "-", DownstreamLocal: serviceIPs["orders"] + ":8080",
			DownstreamRemote: fmt.Sprintf("%s:%d", frontend.IP, port), Authority: "orders:8080", ForwardedFor: "203.0.113.57",
			UserAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", UpstreamTime: "-", TxBytes: 0, DurationMs: 0, Route: "-",
		}))
		nginx = append(nginx, fmt.Sprintf(`%s - - [%s] "GET %s HTTP/1.1" 426 0 "https://shop.example.com/account" "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0" "203.0.113.57"`,
			gatewayIP, t.UTC().Format("02/Jan/2006:15:04:05 +0000"), path))
	}
	s.appLog(frontend, nginx)

	// istiod pushes frontend's proxy the orders cluster; no request of
	// nginx's ever gets that far.
	var hosts []*Host
	for _, p := range orders {
		hosts = append(hosts, &Host{IP: p.IP, Port: 8080, Node: p.Node})
	}
	s.recordSidecar(frontend, []*Cluster{
		s.outbound(Outbound{Service: "orders", Hosts: hosts}),
		s.outbound(Outbound{Service: "frontend", Pods: []*Pod{frontend}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: frontend}
}
