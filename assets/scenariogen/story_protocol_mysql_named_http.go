package main

import (
	"fmt"
	"time"
)

var protocolMySQLNamedHTTP = Scenario{
	Name:    "protocol-mysql-named-http",
	Title:   "MySQL behind a port named http-mysql: orders waits for a greeting that never comes",
	Summary: "the new mysql Service copied the http port template; the sidecars read port 3306 as HTTP and MySQL's handshake never reaches orders",
	Description: `
orders moved from postgres to the new MySQL this morning. The mysql Service was written from the
team's port template, so its port 3306 is named http-mysql: istiod reads the name (3306 is TCP to
it only when nothing names the port), and orders' sidecar puts an HTTP connection manager on
0.0.0.0_3306. MySQL speaks first: the server sends its handshake, the client waits for it. Envoy
waits for an HTTP request that the client never sends, so no byte goes to mysql, and after ten
seconds the driver gives up: "Lost connection to MySQL server at 'reading initial communication
packet'". No access-log line is written (a connection without a request logs nothing), the mysql
pod is Ready and istiod shows everything SYNCED. orders answers web 503 on every call that needs
the database. Triage from orders' pod, port 3306.
`,
	Expect: []string{"protocol.server-first"},
	Now:    at("2026-12-03T09:52:30"),
	Mesh:   MeshOptions{HoldApplicationUntilProxyStarts: true},
	Build:  buildProtocolMySQLNamedHTTP,
}

func buildProtocolMySQLNamedHTTP(s *Shop) Target {
	now := s.now
	s.namespace()
	s.service("web")
	s.service("orders")
	s.serviceOnPort("mysql", "http-mysql", 3306, 3306)
	web := s.webPod(now.Add(-(4*day + 2*time.Hour)), nil)
	db := s.pod("shop", "mysql-0", "mysql", "worker-c", 31, now.Add(-(2*time.Hour + 14*time.Minute)), func(p *PodSpec) {
		p.Hold = true
		p.Controller = "mysql"
		p.Image = "docker.io/library/mysql:8.0.40"
		p.Ports = []ContainerPort{{"mysql", 3306}}
		p.Readiness, p.Version = nil, ""
		p.Probe = Object{{"exec", Object{{"command", []string{"mysqladmin", "ping", "-h", "127.0.0.1"}}}}, {"failureThreshold", 3}, {"periodSeconds", 10},
			{"successThreshold", 1}, {"timeoutSeconds", 2}}
		p.Owner = Object{{"apiVersion", "apps/v1"}, {"blockOwnerDeletion", true}, {"controller", true}, {"kind", "StatefulSet"}, {"name", "mysql"},
			{"uid", s.world.objectUID("StatefulSet", "shop", "mysql")}}
		p.ExtraLabels = Object{{"apps.kubernetes.io/pod-index", "0"}, {"controller-revision-hash", "mysql-7d9c6b8f4"},
			{"statefulset.kubernetes.io/pod-name", "mysql-0"}}
	})
	rolled := now.Add(-(38*time.Minute + 20*time.Second))
	orders := s.ordersPods(rolled, nil, func(_ int, p *PodSpec) {
		p.Hold = true
		p.Image = "registry.shop.example.com/orders:2.15.0"
		p.Env = []Object{{{"name", "DATABASE_URL"}, {"value", "mysql://orders@mysql.shop.svc.cluster.local:3306/orders"}}}
	})
	caller := orders[0]
	s.slice(Slice{Name: "web-fe8db", Service: "web", Endpoints: ready(web)})
	s.slice(Slice{Name: "orders-2b3d9", Service: "orders", Endpoints: ready(orders...)})
	s.slice(Slice{Name: "mysql-5k2wq", Service: "mysql", Endpoints: ready(db), Port: 3306, PortName: "http-mysql"})
	s.proxyLog(web)
	s.proxyLog(db)
	s.appLog(web, webAppStart(web.AppStarted))
	s.appLog(db, appLines(db.AppStarted, []AppLine{
		{1.9, "[System]", "[MY-010931] [Server] /usr/sbin/mysqld: ready for connections. Version: '8.0.40'  socket: '/var/run/mysqld/mysqld.sock'  port: 3306  MySQL Community Server - GPL."},
		{2.0, "[System]", "[MY-011323] [Server] X Plugin ready for connections. Bind-address: '::' port: 33060, socket: /var/run/mysqld/mysqlx.sock"},
	}))

	// Each orders pod opens its pool at start and again on every request
	// that needs the database: the driver waits 10 s for MySQL's handshake
	// and gives up. Its sidecar logs nothing of those connections.
	for _, p := range orders {
		s.proxyLog(p)
		lines := []AppLine{
			{0.21, "INFO", "orders starting version=2.15.0 commit=4b81d0e"},
			{0.30, "INFO", "connecting to mysql host=mysql.shop.svc.cluster.local:3306 db=orders"},
			{0.41, "INFO", "listening on :8080"},
		}
		for t := 10.3; t < now.Sub(p.AppStarted).Seconds()-1; t += 20 + float64(s.rng.IntN(25)) {
			lines = append(lines, AppLine{t, "ERROR", fmt.Sprintf("db: dial mysql.shop.svc.cluster.local:3306: Error 2013: Lost connection to MySQL server at 'reading initial communication packet', system error: 0 (waited 10.0s, attempt %d)", 1+s.rng.IntN(3))})
		}
		s.appLog(p, appLines(p.AppStarted, lines))
	}

	// web still reaches orders, which answers 503 on everything that needs
	// the database.
	s.traffic(rolled.Add(time.Minute), now.Add(-time.Second), 2500, func(t time.Time, i int) {
		s.call(Call{From: web, Service: "orders", At: t, To: orders[i%len(orders)], Code: 503})
	})

	s.recordSidecar(caller, []*Cluster{
		s.outbound(Outbound{Service: "mysql", Port: 3306, Pods: []*Pod{db}}),
		s.outbound(Outbound{Service: "orders", Pods: orders}),
	}, EnvoyState{Listeners: listeners(Listener{"0.0.0.0_3306", "0.0.0.0", 3306})}) // HTTP ports listen on 0.0.0.0_PORT
	return Target{Service: "mysql", Source: caller, Port: 3306}
}
