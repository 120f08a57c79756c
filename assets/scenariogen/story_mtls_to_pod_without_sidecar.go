package main

import "time"

var mtlsToPodWithoutSidecar = Scenario{
	Name:    "mtls-to-pod-without-sidecar",
	Title:   "mTLS sent to pods that have no sidecar",
	Summary: "DR says ISTIO_MUTUAL, orders redeployed with inject false: 503 UF WRONG_VERSION_NUMBER",
	Description: `
A DestinationRule for orders, copied from a "secure defaults" template months ago, sets tls mode
ISTIO_MUTUAL. This morning the orders team redeployed with sidecar.istio.io/inject: "false" to rule
the proxy out of a latency investigation. web's sidecar still originates Istio mTLS to the new pods,
whose app answers the TLS ClientHello with plain HTTP: every call is 503 UF,URX with transport failure
WRONG_VERSION_NUMBER, although Kubernetes shows both endpoints ready and Envoy's EDS calls them
HEALTHY.
`,
	Expect: []string{"sidecar.missing-upstream"},
	Now:    at("2026-12-02T11:05:30"),
	Build:  buildMTLSToPodWithoutSidecar,
}

func buildMTLSToPodWithoutSidecar(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(now.Add(-(1*day + 4*time.Hour)), nil)
	created := now.Add(-(24*time.Minute + 7*time.Second))
	orders := s.ordersPods(created, []string{"orders-5f7b8c9d6-hq2zx", "orders-5f7b8c9d6-vb7kp"}, func(_ int, p *PodSpec) {
		p.Sidecar = NoSidecar
		p.InjectLabel = "false"
		p.ExtraAnnotations = Object{{"sidecar.istio.io/inject", "false"}}
	})
	s.slice(Slice{Name: "web-4863e", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-97b86", Service: "orders", Endpoints: ready(orders...)})
	s.destinationRule("orders", now.Add(-120*day), Object{{"host", "orders.shop.svc.cluster.local"},
		{"trafficPolicy", Object{{"tls", Object{{"mode", "ISTIO_MUTUAL"}}}}}})

	// Each call fails its connection three times: the first try and two
	// retries.
	failedConnections := map[string]int{}
	s.webUpstreamLogs(web, orders, nil)
	s.succeed(web, "orders", orders, now.Add(-29*time.Minute), created.Add(5*time.Second), 5000)
	wrongVersion := func(t time.Time, i int) {
		up := orders[i%2]
		failedConnections[up.IP] += 3
		s.call(Call{From: web, Service: "orders", At: t, To: up, Code: 503, Flags: "UF,URX",
			Details:          "upstream_reset_before_response_started{connection_failure,TLS_error:|268435703:SSL_routines:OPENSSL_internal:WRONG_VERSION_NUMBER:TLS_error_end}",
			TransportFailure: "TLS_error:|268435703:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER:TLS_error_end",
			DurationMs:       exactly(3)})
	}
	// Since the redeploy every call fails, up to the last second.
	s.traffic(created.Add(30*time.Second), s.windowStart(), 4000, wrongVersion)
	s.inWindow(1, wrongVersion)
	var hosts []*Host
	n := 0
	for _, p := range orders {
		fails := failedConnections[p.IP]
		n += fails
		hosts = append(hosts, &Host{IP: p.IP, Port: 8080, Node: p.Node, CxTotal: fails, CxConnectFail: fails, RqError: fails / 3})
	}
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders", Hosts: hosts, TLS: IstioMutual, Stats: map[string]int{
			"cx_connect_fail": n, "ssl_connection_error": n, "ssl_handshake": 0, "rq_retry": n * 2 / 3,
			"rq_retry_limit_exceeded": n / 3, "cx_total": n, "cx_destroy": n, "cx_destroy_remote": 0, "cx_destroy_local": n}}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{})
	return Target{Service: "orders", Source: web}
}
