package main

import "time"

var startupRace = Scenario{
	Name:    "startup-race",
	Title:   "orders-api restarts at startup: app before Envoy",
	Summary: "orders-api dials postgres before Envoy is up: connection refused, one restart per pod",
	Description: `
The orders-api rollout at 03:00 left two of its three new pods with one restart each. orders-api
connects to postgres in its first 300 ms; with a classic sidecar and no holdApplicationUntilProxyStarts
the app container starts in the same second as istio-proxy, iptables already redirects its outbound
traffic to port 15001, and Envoy is not listening yet: "dial tcp 10.96.0.20:5432: connect: connection
refused", exit 1, restart 10 s later, fine since. The third pod won the race. Requests from web are
200s now; the cause is in the pods' start order, not in the traffic.
`,
	Expect: []string{"startup.app-before-proxy"},
	Now:    at("2026-12-02T03:14:20"),
	Build:  buildStartupRace,
}

func buildStartupRace(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders-api")
	s.serviceOnPort("postgres", "tcp-postgres", 5432, 5432)
	web := s.webPod(now.Add(-(4*day + 2*time.Hour)), nil)
	pg := s.pod("shop", "postgres-0", "postgres", "worker-c", 30, now.Add(-12*day), func(p *PodSpec) {
		p.Controller = "postgres"
		p.Image = "docker.io/library/postgres:16.4"
		p.Ports = []ContainerPort{{"tcp-postgres", 5432}}
		p.Readiness, p.Version = nil, ""
		p.Probe = Object{{"exec", Object{{"command", []string{"pg_isready", "-U", "orders"}}}}, {"failureThreshold", 3}, {"periodSeconds", 10},
			{"successThreshold", 1}, {"timeoutSeconds", 1}}
		p.Owner = Object{{"apiVersion", "apps/v1"}, {"blockOwnerDeletion", true}, {"controller", true}, {"kind", "StatefulSet"}, {"name", "postgres"},
			{"uid", s.world.objectUID("StatefulSet", "shop", "postgres")}}
		p.ExtraLabels = Object{{"apps.kubernetes.io/pod-index", "0"}, {"controller-revision-hash", "postgres-6b8d9f7c5"},
			{"statefulset.kubernetes.io/pod-name", "postgres-0"}}
	})
	const rs = "orders-api-7f9c8d6b5"
	type replica struct {
		pod          *Pod
		crashed      bool
		proxyStarted time.Time
	}
	var replicas []replica
	for _, plan := range []struct {
		suffix, node string
		host, offset int
		crashed      bool
	}{{"x7k2p", "worker-b", 23, 0, true}, {"q4w9m", "worker-c", 24, 19, true}, {"t8n3v", "worker-a", 25, 37, false}} {
		created := at("2026-12-02T03:00:00").Add(time.Duration(plan.offset) * time.Second)
		first := created.Add(2 * time.Second)
		p := s.pod("shop", rs+"-"+plan.suffix, "orders-api", plan.node, plan.host, created, func(p *PodSpec) {
			p.Controller = rs
			p.ProxyStarted = first
			p.Readiness = &HTTPCheck{"/readyz", 8080}
			p.Env = []Object{{{"name", "DATABASE_URL"}, {"value", "postgres://orders@postgres.shop.svc.cluster.local:5432/orders?sslmode=disable"}}}
			// The third pod's image pull took 2 s longer: its app started
			// after Envoy was ready and connected at once.
			p.AppStarted = first.Add(2 * time.Second)
			if plan.crashed {
				p.Restarts = 1
				p.AppStarted = created.Add(14 * time.Second)
				p.LastTerminated = &Termination{ContainerID: "containerd://" + hashHex(s.world.name, plan.suffix, "crash"), ExitCode: 1,
					Reason: "Error", StartedAt: first, FinishedAt: first.Add(time.Second)}
			}
		})
		replicas = append(replicas, replica{p, plan.crashed, first})
	}
	var pods []*Pod
	for _, r := range replicas {
		pods = append(pods, r.pod)
	}
	s.slice(Slice{Name: "web-fe8db", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-api-bx875", Service: "orders-api", Endpoints: ready(pods...)})
	s.slice(Slice{Name: "postgres-91bxb", Service: "postgres", Endpoints: ready(pg), Port: 5432, PortName: "tcp-postgres"})
	s.proxyLog(web)
	s.proxyLog(pg)
	s.appLog(web, webAppStart(web.AppStarted))
	s.appLog(pg, appLines(pg.AppStarted, []AppLine{{1.2, "LOG", "database system is ready to accept connections"}}))
	for _, r := range replicas {
		// Envoy takes about 1.4 s to get its first config from istiod; the
		// app, started in the same second, dials postgres after 0.3 s.
		s.proxyLogReadyAfter(r.pod, 1.4)
		if r.crashed {
			s.previousAppLog(r.pod, appLines(r.proxyStarted, []AppLine{
				{0.215, "INFO", "orders-api starting version=3.2.1"},
				{0.301, "INFO", "connecting to postgres host=postgres.shop.svc.cluster.local:5432 db=orders"},
				{0.304, "ERROR", "failed to connect to database: dial tcp 10.96.0.20:5432: connect: connection refused"},
				{0.305, "FATAL", "orders-api exiting: database unavailable at startup"},
			}))
		}
		s.appLog(r.pod, appLines(r.pod.AppStarted, []AppLine{
			{0.212, "INFO", "orders-api starting version=3.2.1"},
			{0.298, "INFO", "connecting to postgres host=postgres.shop.svc.cluster.local:5432 db=orders"},
			{0.341, "INFO", "database connected pool=10"},
			{0.352, "INFO", "listening on :8080"},
		}))
	}
	// Since the rollout every call is a 200, up to the last second.
	s.succeed(web, "orders-api", pods, at("2026-12-02T03:01:05"), s.windowStart(), 5000)
	s.inWindow(1, s.served(web, "orders-api", pods))
	s.recordSidecar(web, []*Cluster{
		s.outbound(Outbound{Service: "orders-api", Pods: pods}),
		s.outbound(Outbound{Service: "postgres", Pods: []*Pod{pg}, Port: 5432}),
		s.outbound(Outbound{Service: "web", Pods: []*Pod{web}}),
	}, EnvoyState{Listeners: listeners(Listener{"10.96.0.20_5432", "10.96.0.20", 5432})})
	return Target{Service: "orders-api", Source: web}
}
