package clustername

import "testing"

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"outbound|80||echo-server.default.svc.cluster.local;": "outbound|80||echo-server.default.svc.cluster.local",
		"outbound|80||echo-server.default.svc.cluster.local":  "outbound|80||echo-server.default.svc.cluster.local",
		"BlackHoleCluster;":   "BlackHoleCluster",
		"PassthroughCluster;": "PassthroughCluster",
		"inbound|8080||;":     "inbound|8080||",
		"":                    "",
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStatName(t *testing.T) {
	for in, want := range map[string]string{
		// Istio 1.25's /stats, as pilot-agent request GET stats prints it.
		"cluster.outbound|80||echo-server.default.svc.cluster.local;.upstream_rq_pending_overflow":             "cluster.outbound|80||echo-server.default.svc.cluster.local.upstream_rq_pending_overflow",
		"cluster.outbound|80||echo-server.default.svc.cluster.local;.circuit_breakers.default.rq_pending_open": "cluster.outbound|80||echo-server.default.svc.cluster.local.circuit_breakers.default.rq_pending_open",
		// Before 1.23, and stats of clusters istiod does not name.
		"cluster.outbound|80||httpbin.springistio.svc.cluster.local.upstream_rq_pending_overflow": "cluster.outbound|80||httpbin.springistio.svc.cluster.local.upstream_rq_pending_overflow",
		"cluster.xds-grpc.upstream_cx_active":                                                     "cluster.xds-grpc.upstream_cx_active",
		// A name that holds ";." itself keeps it; the delimiter is the last.
		"cluster.odd;.name;.upstream_rq_total": "cluster.odd;.name.upstream_rq_total",
		"server.live":                          "server.live",
	} {
		if got := StatName(in); got != want {
			t.Errorf("StatName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Parts
		ok   bool
	}{
		{"outbound|8080|v2|orders.shop.svc.cluster.local", Parts{Direction: "outbound", Port: 8080, Subset: "v2", Host: "orders.shop.svc.cluster.local"}, true},
		{"outbound|8080||orders.shop.svc.cluster.local;", Parts{Direction: "outbound", Port: 8080, Host: "orders.shop.svc.cluster.local"}, true},
		{"inbound-vip|8080|http|orders.shop.svc.cluster.local", Parts{Direction: "inbound-vip", Port: 8080, Protocol: "http", Host: "orders.shop.svc.cluster.local"}, true},
		{"inbound-vip|8080|http/v2|orders.shop.svc.cluster.local;", Parts{Direction: "inbound-vip", Port: 8080, Protocol: "http", Subset: "v2", Host: "orders.shop.svc.cluster.local"}, true},
		{"inbound-vip|5432|tcp|postgres.shop.svc.cluster.local", Parts{Direction: "inbound-vip", Port: 5432, Protocol: "tcp", Host: "postgres.shop.svc.cluster.local"}, true},
		{"inbound|8080||", Parts{Direction: "inbound", Port: 8080}, true},
		{"main_internal", Parts{}, false},
		{"connect_originate", Parts{}, false},
		{"outbound|99999999999|x|h", Parts{}, false},
		{"outbound|-1|x|h", Parts{}, false},
	} {
		got, ok := Split(tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Split(%q) = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTunnelTarget(t *testing.T) {
	for _, tc := range []struct {
		addr, want string
		ok         bool
	}{
		{"envoy://connect_originate/10.244.1.7:8080", "10.244.1.7:8080", true},
		{"envoy://connect_originate/[fd00::7]:8080", "[fd00::7]:8080", true},
		{"envoy://main_internal/10.96.14.20:8080", "envoy://main_internal/10.96.14.20:8080", false},
		{"envoy://connect_originate", "envoy://connect_originate", false},
		{"10.244.1.7:8080", "10.244.1.7:8080", false},
	} {
		if got, ok := TunnelTarget(tc.addr); got != tc.want || ok != tc.ok {
			t.Errorf("TunnelTarget(%q) = %q, %v; want %q, %v", tc.addr, got, ok, tc.want, tc.ok)
		}
	}
}
