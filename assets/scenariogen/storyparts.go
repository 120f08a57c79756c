package main

import (
	"fmt"
	"time"
)

// Pieces several scenarios share: the shop's usual pods, their start-up
// logs and steady traffic between them.

// webPod is the shop's front end, the usual source of triage.
func (s *Shop) webPod(created time.Time, tweak func(*PodSpec)) *Pod {
	return s.pod("shop", "web-5b7d9c6f4-q8w2e", "web", "worker-a", 9, created, func(p *PodSpec) {
		p.Readiness = &HTTPCheck{"/healthz", 8080}
		if tweak != nil {
			tweak(p)
		}
	})
}

var defaultOrdersPods = []string{"orders-6d8f7c9b5-2kq8v", "orders-6d8f7c9b5-7xw4n", "orders-6d8f7c9b5-m9p2d"}

// ordersPods adds orders replicas spread over the three workers, 14 s
// apart; names default to defaultOrdersPods, tweak (may be nil) adjusts
// the i-th pod.
func (s *Shop) ordersPods(created time.Time, names []string, tweak func(i int, p *PodSpec)) []*Pod {
	if names == nil {
		names = defaultOrdersPods
	}
	placement := []struct {
		node string
		host int
	}{{"worker-b", 17}, {"worker-c", 18}, {"worker-a", 21}}
	var out []*Pod
	for i, name := range names {
		where := placement[i%3]
		out = append(out, s.pod("shop", name, "orders", where.node, where.host+10*(i/3), created.Add(time.Duration(i)*14*time.Second), func(p *PodSpec) {
			if tweak != nil {
				tweak(i, p)
			}
		}))
	}
	return out
}

func ordersAppStart(start time.Time) []string {
	return appLines(start, []AppLine{
		{0.21, "INFO", "orders starting version=2.14.0 commit=9f3c2e1"},
		{0.30, "INFO", "connecting to postgres host=postgres.shop.svc.cluster.local:5432 db=orders"},
		{0.36, "INFO", "database connected pool=10"},
		{0.41, "INFO", "listening on :8080"},
	})
}

func webAppStart(start time.Time) []string {
	return appLines(start, []AppLine{{0.2, "INFO", "web starting version=1.8.3"}, {0.3, "INFO", "listening on :8080"}})
}

// webUpstreamLogs writes the start-up of every sidecar and app: web's, and
// the upstream pods' with appStart (nil: orders' usual start).
func (s *Shop) webUpstreamLogs(web *Pod, pods []*Pod, appStart func(time.Time) []string) {
	if appStart == nil {
		appStart = ordersAppStart
	}
	for _, p := range append([]*Pod{web}, pods...) {
		if p.Sidecar != NoSidecar {
			s.proxyLog(p)
		}
	}
	s.appLog(web, webAppStart(web.AppStarted))
	for _, p := range pods {
		s.appLog(p, appStart(p.AppStarted))
	}
}

// succeed sends successful calls from web to service, round-robin over
// pods, from start to end.
func (s *Shop) succeed(web *Pod, service string, pods []*Pod, start, end time.Time, everyMs int) {
	s.traffic(start, end, everyMs, s.served(web, service, pods))
}

// served sends the i-th call from web to service, answered by pods[i%len]:
// steady traffic (succeed) or the calls of the metrics window (inWindow).
func (s *Shop) served(web *Pod, service string, pods []*Pod) func(t time.Time, i int) {
	return func(t time.Time, i int) {
		s.call(Call{From: web, Service: service, At: t, To: pods[i%len(pods)]})
	}
}

// noHealthyUpstream is a call Envoy answered itself: no host to send to.
func noHealthyUpstream(c Call) Call {
	c.Code, c.Flags, c.Details, c.NoUpstreamLog, c.TxBytes = 503, "UH", "no_healthy_upstream", true, exactly(19)
	return c
}

// noFilterChainLine is the inbound listener's line for a connection no
// filter chain takes (plaintext to a STRICT port).
func noFilterChainLine(at time.Time, podIP, remoteIP string, remotePort int) string {
	return AccessEntry{Start: at, Method: "-", Path: "-", Code: 0, Flags: "NR", Details: "filter_chain_not_found",
		UpstreamHost: "-", Cluster: "-", DownstreamLocal: podIP + ":8080", DownstreamRemote: fmt.Sprintf("%s:%d", remoteIP, remotePort),
		Authority: "-", DurationMs: 0, UpstreamTime: "-", Route: "-"}.Line()
}

// subsetWorld is shop, web, and orders pods of the given versions; the
// story adds their EndpointSlices.
func (s *Shop) subsetWorld(names, versions []string) (*Pod, []*Pod) {
	s.namespace()
	s.service("web")
	s.service("orders")
	web := s.webPod(s.now.Add(-5*day), nil)
	created := s.now.Add(-(3*day + 2*time.Hour))
	placement := []struct {
		node string
		host int
	}{{"worker-b", 17}, {"worker-c", 18}, {"worker-a", 21}, {"worker-b", 42}}
	var pods []*Pod
	for i, name := range names {
		image := "registry.shop.example.com/orders:2.16.0-rc.2"
		if versions[i] == "v1" {
			image = "registry.shop.example.com/orders:2.14.0"
		}
		pods = append(pods, s.pod("shop", name, "orders", placement[i].node, placement[i].host, created.Add(time.Duration(9*i)*time.Second), func(p *PodSpec) {
			p.Version, p.Image = versions[i], image
		}))
	}
	return web, pods
}

// WeightedCluster is one destination of a weighted route.
type WeightedCluster struct {
	Cluster string
	Weight  int
}

// weightedRoute is web's route config for port 8080 when a VirtualService
// splits orders traffic between subsets.
func weightedRoute(clusters []WeightedCluster, routeName string) Object {
	var weighted []Object
	for _, c := range clusters {
		weighted = append(weighted, Object{{"name", c.Cluster}, {"weight", c.Weight}})
	}
	return routeConfig("8080", []Object{
		virtualHost("shop", "orders", serviceIPs["orders"], 8080, Object{
			{"match", Object{{"prefix", "/"}}},
			{"route", Object{{"weighted_clusters", Object{{"clusters", weighted}}}, {"timeout", "0s"},
				{"retry_policy", defaultRetry()}, {"max_grpc_timeout", "0s"}}},
			{"metadata", Object{{"filter_metadata", Object{{"istio", Object{{"config", "/apis/networking.istio.io/v1/namespaces/shop/virtual-service/orders"}}}}}}},
			{"decorator", Object{{"operation", "orders:8080/*"}}}, {"name", routeName}}),
		virtualHost("shop", "web", serviceIPs["web"], 8080, Object{
			{"match", Object{{"prefix", "/"}}}, {"route", Object{{"cluster", "outbound|8080||web.shop.svc.cluster.local"}, {"timeout", "0s"},
				{"retry_policy", defaultRetry()}, {"max_grpc_timeout", "0s"}}},
			{"decorator", Object{{"operation", "web.shop.svc.cluster.local:8080/*"}}}, {"name", "default"}}),
		{{"name", "allow_any"}, {"domains", []string{"*"}}, {"routes", []Object{{{"match", Object{{"prefix", "/"}}},
			{"route", Object{{"cluster", "PassthroughCluster"}, {"timeout", "0s"}, {"max_grpc_timeout", "0s"}}}, {"name", "allow_any"}}}},
			{"include_request_attempt_count", true}},
	})
}
