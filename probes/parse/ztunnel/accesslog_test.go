package ztunnel

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// reading is what an engineer reads off one line of testdata/access.log.
type reading struct {
	message, direction, failure string
	src, target, service        string
	deniedBy, rejection         string
	dstPort                     int
	bytesSent                   int64
}

func TestParseAccessLog(t *testing.T) {
	data, err := os.ReadFile("testdata/access.log")
	if err != nil {
		t.Fatal(err)
	}
	want := []*reading{
		nil, // ztunnel's version line
		nil, // xds
		{message: "connection complete", direction: "outbound", src: "web-7d9c4b-x2x", target: "10.244.1.7", service: "orders.shop.svc.cluster.local", dstPort: 15008, bytesSent: 421},
		{message: "connection complete", direction: "outbound", failure: FailureHBONETimeout, src: "web-7d9c4b-x2x", target: "10.244.1.7", service: "orders.shop.svc.cluster.local", dstPort: 15008},
		{message: "connection complete", direction: "outbound", failure: FailureUnauthorized, src: "web-7d9c4b-x2x", target: "10.244.2.9", service: "orders.shop.svc.cluster.local", dstPort: 15008},
		{message: "connection complete", direction: "inbound", failure: FailurePolicyRejected, src: "web-7d9c4b-x2x", target: "10.244.2.9", service: "orders.shop.svc.cluster.local", dstPort: 15008, rejection: "allow policies exist, but none allowed"},
		{message: "connection complete", direction: "inbound", failure: FailurePolicyRejected, src: "batch-28901145-zq8vd", target: "10.244.2.9", service: "orders.shop.svc.cluster.local", dstPort: 15008, deniedBy: "shop/deny-jobs", rejection: "explicitly denied by: shop/deny-jobs"},
		{message: "connection complete", direction: "inbound", failure: FailurePolicyRejected, target: "10.244.2.9", service: "orders.shop.svc.cluster.local", dstPort: 8080, deniedBy: "istio-system/istio_converted_static_strict", rejection: "explicitly denied by: istio-system/istio_converted_static_strict"},
		{message: "connection failed", direction: "inbound", failure: FailureTLS, target: "10.244.1.7", dstPort: 15008},
		{message: "connection complete", direction: "inbound", failure: FailureRefused, src: "web-7d9c4b-x2x", target: "10.244.1.7", dstPort: 15008},
		{message: "connection complete", direction: "outbound", failure: FailureHBONETimeout, src: "web-7d9c4b-x2x", target: "10.244.1.7", service: "orders.shop.svc.cluster.local", dstPort: 15008},
		nil, // ztunnel::state, not access
		{message: "connection complete", direction: "outbound", src: "web-7d9c4b-x2x", target: "10.244.1.7", service: "orders.shop.svc.cluster.local", dstPort: 15008, bytesSent: 302},
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, %d readings", len(lines), len(want))
	}
	for i, line := range lines {
		e, ok := ParseLine(line)
		if (want[i] == nil) == ok {
			t.Errorf("line %d: ok %v, want %v: %s", i+1, ok, want[i] != nil, line)
			continue
		}
		if !ok {
			continue
		}
		got := &reading{message: e.Message, direction: e.Direction, failure: e.Failure(), src: e.SrcWorkload, target: e.TargetIP(),
			service: e.DstService, deniedBy: e.DeniedBy(), rejection: e.Rejection(), dstPort: e.DstPort(), bytesSent: e.BytesSent}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("line %d:\n got %+v\nwant %+v", i+1, *got, *want[i])
		}
	}
}

func TestTally(t *testing.T) {
	f, err := os.Open("testdata/access.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Tally(f, func(e *Entry) bool { return e.TargetIP() == "10.244.2.9" })
	if err != nil {
		t.Fatal(err)
	}
	if s.Lines != 13 || s.Unparsed != 3 || s.Entries != 4 || s.Completed != 0 {
		t.Errorf("lines %d unparsed %d entries %d completed %d, want 13 3 4 0", s.Lines, s.Unparsed, s.Entries, s.Completed)
	}
	if got := Keys(s.Failures); !reflect.DeepEqual(got, []string{"policy-rejection=3", "http-401=1"}) {
		t.Errorf("failures %v", got)
	}
	if got := Keys(s.DeniedBy); !reflect.DeepEqual(got, []string{"istio-system/istio_converted_static_strict=1", "shop/deny-jobs=1"}) {
		t.Errorf("denied by %v", got)
	}
	if got := Keys(s.FailedSources); !reflect.DeepEqual(got, []string{"web-7d9c4b-x2x=2", "10.244.0.40=1", "batch-28901145-zq8vd=1"}) {
		t.Errorf("failed sources %v", got)
	}
	if got := Keys(s.RejectedPods); !reflect.DeepEqual(got, []string{"jobs/batch-28901145-zq8vd=1", "shop/web-7d9c4b-x2x=1"}) {
		t.Errorf("rejected pods %v (the STRICT refusal names no source workload)", got)
	}
	if len(s.Samples) != 4 {
		t.Errorf("%d samples, want the 4 failed lines", len(s.Samples))
	}
	var all Summary
	all.Merge(s)
	all.Merge(s)
	if all.Entries != 8 || all.Failures[FailurePolicyRejected] != 6 || len(all.Samples) != MaxSamples {
		t.Errorf("merged twice: %+v", all)
	}
}

// TestTallyZtunnel122 reads ztunnel 1.22's lines (testdata/SOURCES.md):
// its debug "connection opened" lines are no outcome, and its bare "io
// error: deadline has elapsed" to a pod's 15008 is the HBONE connect
// timeout, while the same error to a plaintext port is a plain one.
func TestTallyZtunnel122(t *testing.T) {
	f, err := os.Open("testdata/access_1_22.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Tally(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Lines != 10 || s.Unparsed != 1 || s.Opened != 5 || s.Entries != 4 || s.Completed != 1 {
		t.Errorf("lines %d unparsed %d opened %d entries %d completed %d, want 10 1 5 4 1", s.Lines, s.Unparsed, s.Opened, s.Entries, s.Completed)
	}
	if got := Keys(s.Failures); !reflect.DeepEqual(got, []string{"hbone-timeout=2", "timeout=1"}) {
		t.Errorf("failures %v, want the two 15008 timeouts read as HBONE ones", got)
	}
	if got := Keys(s.Errors); !reflect.DeepEqual(got, []string{
		"source\tIo\thbone\tio error: deadline has elapsed=2", "source\tIo\t\tio error: deadline has elapsed=1"}) {
		t.Errorf("errors %q", got)
	}
}

// TestClassifyError reads each of ztunnel's error texts as its variant.
func TestClassifyError(t *testing.T) {
	for _, c := range []struct{ text, kind, detail string }{
		{"connection timed out, maybe a NetworkPolicy is blocking HBONE port 15008: deadline has elapsed", "MaybeHBONENetworkPolicyError", "deadline has elapsed"},
		{"io error: deadline has elapsed", "Io", "deadline has elapsed"},
		{"io error: Connection refused (os error 111)", "Io", "Connection refused (os error 111)"},
		{"connection closed due to policy rejection: allow policies exist, but none allowed", "AuthorizationPolicyRejection", "allow policies exist, but none allowed"},
		{"connection closed due to policy change", "AuthorizationPolicyLateRejection", ""},
		{"http status: 401 Unauthorized", "HttpStatus", "401 Unauthorized"},
		{"send: io error: Broken pipe (os error 32)", "Io", "Broken pipe (os error 32)"},
		{"while closing connection: destination disconnected before all data was written", "BackendDisconnected", ""},
		{"connection failed to drain within the timeout", "DrainTimeOut", ""},
		{"connection failed: Connection refused (os error 111)", "ConnectionFailed", "Connection refused (os error 111)"},
		{"unknown waypoint: Waypoint does not exist", "UnknownWaypoint", "Waypoint does not exist"},
		{"requested service orders.shop.svc.cluster.local:8080 found, but cannot resolve port", "NoPortForServices", "orders.shop.svc.cluster.local"},
		{"no healthy upstream: 10.96.12.4:8080", "NoHealthyUpstream", "10.96.12.4:8080"},
		{"dns response had no valid IP addresses", "DnsEmpty", ""},
		{"something ztunnel never says", "Generic", "something ztunnel never says"},
	} {
		got := ClassifyError(c.text)
		if got.Kind != c.kind || got.Detail != c.detail {
			t.Errorf("%q: %+v, want %s %q", c.text, got, c.kind, c.detail)
		}
	}
	if n := len(ErrorKinds); n != 47 {
		t.Errorf("%d error kinds, want ztunnel's 47", n)
	}
}
