package ztunnel

import (
	"reflect"
	"strings"
	"testing"
)

// A rollout in ambient, as the callers' and the ending pod's ztunnels log
// it. The refused line is in the shape istio/istio#53696 posted (ztunnel
// 1.24, outbound, "io error: Connection refused (os error 111)" to the
// pod's 15008 three milliseconds in), with our names and addresses; the
// second copy has the spaces for tabs a paste from a log viewer leaves.
// The drain texts are ztunnel's Error (src/proxy.rs: ClosedFromDrain,
// DrainTimeOut).
var rolloutLines = []string{
	"2026-12-05T01:02:03.101010Z\terror\taccess\tconnection complete\tsrc.addr=10.244.0.21:41006 src.workload=\"istio-ingressgateway-6c9d8f7b5-abcde\" src.namespace=\"istio-system\" src.identity=\"spiffe://cluster.local/ns/istio-system/sa/istio-ingressgateway\" dst.addr=10.244.1.7:15008 dst.hbone_addr=10.244.1.7:8080 dst.service=\"orders.shop.svc.cluster.local\" dst.workload=\"orders-5f8d7b9c4-k2m4q\" dst.namespace=\"shop\" dst.identity=\"spiffe://cluster.local/ns/shop/sa/orders\" direction=\"outbound\" bytes_sent=0 bytes_recv=0 duration=\"3ms\" error=\"io error: Connection refused (os error 111)\"",
	"2026-12-05T01:02:03.204512Z error access connection complete src.addr=10.244.0.21:41010 src.workload=\"istio-ingressgateway-6c9d8f7b5-abcde\" src.namespace=\"istio-system\" src.identity=\"spiffe://cluster.local/ns/istio-system/sa/istio-ingressgateway\" dst.addr=10.244.1.7:15008 dst.hbone_addr=10.244.1.7:8080 dst.service=\"orders.shop.svc.cluster.local\" dst.workload=\"orders-5f8d7b9c4-k2m4q\" dst.namespace=\"shop\" dst.identity=\"spiffe://cluster.local/ns/shop/sa/orders\" direction=\"outbound\" bytes_sent=0 bytes_recv=0 duration=\"2ms\" error=\"io error: Connection refused (os error 111)\"",
	// The destination's ztunnel refused by the app's own port: a plaintext
	// connect to the app, not a tunnel to an ended pod.
	"2026-12-05T01:02:04.000001Z\terror\taccess\tconnection complete\tsrc.addr=10.244.0.21:41020 src.identity=\"spiffe://cluster.local/ns/istio-system/sa/istio-ingressgateway\" dst.addr=10.244.2.9:8080 dst.hbone_addr=10.244.2.9:8080 dst.service=\"orders.shop.svc.cluster.local\" dst.workload=\"orders-5f8d7b9c4-z9z9z\" dst.namespace=\"shop\" direction=\"inbound\" bytes_sent=0 bytes_recv=0 duration=\"1ms\" error=\"io error: Connection refused (os error 111)\"",
	"2026-12-05T01:02:02.900000Z\twarn\taccess\tconnection complete\tsrc.addr=10.244.0.21:40990 src.identity=\"spiffe://cluster.local/ns/istio-system/sa/istio-ingressgateway\" dst.addr=10.244.1.7:8080 dst.hbone_addr=10.244.1.7:8080 dst.service=\"orders.shop.svc.cluster.local\" dst.workload=\"orders-5f8d7b9c4-k2m4q\" dst.namespace=\"shop\" direction=\"inbound\" bytes_sent=112 bytes_recv=0 duration=\"4012ms\" error=\"connection closed due to connection drain\"",
	"2026-12-05T01:02:02.950000Z\twarn\taccess\tconnection complete\tsrc.addr=10.244.0.21:40992 src.identity=\"spiffe://cluster.local/ns/istio-system/sa/istio-ingressgateway\" dst.addr=10.244.1.7:8080 dst.hbone_addr=10.244.1.7:8080 dst.service=\"orders.shop.svc.cluster.local\" dst.workload=\"orders-5f8d7b9c4-k2m4q\" dst.namespace=\"shop\" direction=\"inbound\" bytes_sent=0 bytes_recv=0 duration=\"5001ms\" error=\"connection failed to drain within the timeout\"",
}

func TestTallyRolloutRefusedTunnels(t *testing.T) {
	s, err := Tally(strings.NewReader(strings.Join(rolloutLines, "\n")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Entries != 5 || s.Completed != 0 {
		t.Fatalf("entries %d completed %d, want 5 0", s.Entries, s.Completed)
	}
	if got := Keys(s.RefusedTunnels); !reflect.DeepEqual(got, []string{"10.244.1.7=2"}) {
		t.Errorf("refused tunnels %v, want the two outbound refusals on 10.244.1.7:15008 (not the inbound one to the app's port)", got)
	}
	if s.Drained != 2 {
		t.Errorf("drained %d, want ClosedFromDrain and DrainTimeOut", s.Drained)
	}
	if got := s.Errors["source\tIo\thbone\tio error: Connection refused (os error 111)"]; got != 2 {
		t.Errorf("errors %q: the refusals are Io on the source side, to HBONE", Keys(s.Errors))
	}
	var all Summary
	all.Merge(s)
	all.Merge(s)
	if all.RefusedTunnels["10.244.1.7"] != 4 || all.Drained != 4 {
		t.Errorf("merged twice: refused %v drained %d", all.RefusedTunnels, all.Drained)
	}
}
