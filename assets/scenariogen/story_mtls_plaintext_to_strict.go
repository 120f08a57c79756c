package main

import (
	"fmt"
	"time"
)

var mtlsPlaintextToStrict = Scenario{
	Name:    "mtls-plaintext-to-strict",
	Title:   "Plaintext client after a namespace went STRICT",
	Summary: "a cron job without sidecar calls orders after shop went STRICT: connection reset",
	Description: `
Twenty minutes ago someone applied a namespace-wide PeerAuthentication STRICT in shop. The nightly
report-cron job runs in namespace batch, which has injection disabled: it has no sidecar and calls
orders in plaintext. The orders sidecars now accept only mTLS; each plaintext connection matches no
filter chain (NR filter_chain_not_found in their inbound log) and is closed, so the job sees
"connection reset by peer". Meshed callers such as web are unaffected: their 200s are in the same
logs. Triage from the job's pod (it has no Envoy to read, which is itself the clue).
`,
	Expect: []string{"mtls.plaintext-to-strict"},
	Now:    at("2026-12-02T03:24:40"),
	Mesh:   MeshOptions{HoldApplicationUntilProxyStarts: true},
	Build:  buildMTLSPlaintextToStrict,
}

func buildMTLSPlaintextToStrict(s *Shop) Target {
	now := s.now
	s.namespace()
	s.world.Namespace("batch", s.shopCreated.Add(2*day), "disabled")
	s.service("web")
	s.service("orders")
	created := now.Add(-(2*day + 7*time.Hour))
	hold := func(p *PodSpec) { p.Hold = true }
	web := s.webPod(created.Add(-3*time.Hour), hold)
	orders := s.ordersPods(created, nil, func(_ int, p *PodSpec) { p.Hold = true })
	s.slice(Slice{Name: "web-xdbe9", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-2b3d9", Service: "orders", Endpoints: ready(orders...)})
	s.istio("security.istio.io/v1", "PeerAuthentication", "default", now.Add(-(21*time.Minute + 12*time.Second)),
		Object{{"mtls", Object{{"mode", "STRICT"}}}})
	const job = "report-cron-29459000"
	jobUID := s.world.objectUID("Job", "batch", job)
	cron := s.pod("batch", job+"-7kq2x", "report-cron", "worker-c", 41, now.Add(-(4*time.Minute + 40*time.Second)), func(p *PodSpec) {
		p.Sidecar = NoSidecar
		p.Image = "registry.shop.example.com/report-cron:0.9.2"
		p.Ports, p.Readiness, p.Version = nil, nil, ""
		p.RestartPolicy = "OnFailure"
		p.Controller = job
		p.Owner = Object{{"apiVersion", "batch/v1"}, {"blockOwnerDeletion", true}, {"controller", true}, {"kind", "Job"}, {"name", job}, {"uid", jobUID}}
		p.ExtraLabels = Object{{"batch.kubernetes.io/controller-uid", jobUID}, {"batch.kubernetes.io/job-name", job},
			{"controller-uid", jobUID}, {"job-name", job}}
	})
	s.webUpstreamLogs(web, orders, nil)
	s.succeed(web, "orders", orders, now.Add(-14*time.Minute), now.Add(-2*time.Second), 4000)

	// The job's app speaks plaintext HTTP; the orders sidecars now accept only
	// mTLS, find no filter chain for it and close the connection.
	lines := []AppLine{{0.8, "INFO", "report-cron 0.9.2: exporting orders since 2026-12-02T03:15:00Z to s3://shop-reports/daily/"}}
	t := 1.1
	for attempt := 1; attempt <= 5; attempt++ {
		up := orders[attempt%3]
		port := 38712 + attempt*17
		jitter := float64(s.rng.IntN(900)) / 1000
		s.world.log("shop", up.Name, "istio-proxy", false, noFilterChainLine(cron.AppStarted.Add(seconds(t+jitter)), up.IP, cron.IP, port))
		lines = append(lines, AppLine{t + jitter + 0.002, "WARN", fmt.Sprintf(
			"GET http://orders.shop:8080/api/orders?since=2026-12-02T03:15:00Z failed: read tcp %s:%d->%s:8080: read: connection reset by peer (attempt %d/5)",
			cron.IP, port, serviceIPs["orders"], attempt)})
		t += float64(int(1) << attempt)
	}
	lines = append(lines,
		AppLine{t, "ERROR", "export failed after 5 attempts: orders API unreachable; exiting 1"},
		AppLine{t + 0.01, "INFO", "restarting in-process loop (restartPolicy OnFailure keeps this pod); next attempt in 30s"})
	for k := 0; k < 4; k++ {
		jitter := float64(s.rng.IntN(900)) / 1000
		after := t + 30 + float64(k*40) + jitter
		up := orders[k%3]
		s.world.log("shop", up.Name, "istio-proxy", false, noFilterChainLine(cron.AppStarted.Add(seconds(after)), up.IP, cron.IP, 40100+k))
		lines = append(lines, AppLine{after + 0.002, "WARN", fmt.Sprintf(
			"GET http://orders.shop:8080/api/orders?since=2026-12-02T03:15:00Z failed: read tcp %s:%d->%s:8080: read: connection reset by peer",
			cron.IP, 40100+k, serviceIPs["orders"])})
	}
	s.appLog(cron, appLines(cron.AppStarted, lines))
	return Target{Service: "orders", Source: cron}
}
