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
