package probes

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/envoyadmin"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
)

func evListeners(t *testing.T) []envoy.Listener {
	t.Helper()
	ls, err := envoy.ParseListeners(evTestdata(t, "envoy-listeners", "listeners.json"))
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func TestEnvoyListenersEvaluate(t *testing.T) {
	p := EnvoyListenersProbe{}
	ls := evListeners(t)
	cases := []struct {
		name    string
		in      envoyListenersInput
		status  Status
		found   bool
		names   []string
		missing []string
		inSum   string
	}{
		{"HTTP port", envoyListenersInput{Listeners: ls, Ports: []int32{8080}, VIPs: []string{"10.96.12.4"}}, StatusPass, true, []string{"0.0.0.0_8080"}, []string{}, "0.0.0.0_8080 captures port 8080"},
		{"TCP port on the VIP", envoyListenersInput{Listeners: ls, Ports: []int32{5432}, VIPs: []string{"10.96.40.2"}}, StatusPass, true, []string{"10.96.40.2_5432"}, []string{}, ""},
		{"another service's VIP", envoyListenersInput{Listeners: ls, Ports: []int32{9090}, VIPs: []string{"10.96.12.4"}}, StatusFail, false, []string{}, []string{"9090"}, "falls through virtualOutbound"},
		{"one of two ports missing", envoyListenersInput{Listeners: ls, Ports: []int32{8080, 7070}, VIPs: []string{"10.96.12.4"}}, StatusFail, false, []string{"0.0.0.0_8080"}, []string{"7070"}, "no listener for port 7070"},
		{"service unreadable", envoyListenersInput{Listeners: ls, Ports: []int32{9090}, ServiceProblem: "forbidden: cannot get service shop/orders"}, StatusPass, true, []string{"10.96.77.7_9090"}, []string{}, "any listener on the port counted"},
		{"no listeners at all", envoyListenersInput{Ports: []int32{8080}, VIPs: []string{"10.96.12.4"}}, StatusFail, false, []string{}, []string{"8080"}, "no listener for port 8080"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := evaluateEnvoyListeners(evTarget, c.in)
			evCheck(t, p, r)
			if r.Status != c.status || r.Facts["listener_found"] != c.found ||
				!reflect.DeepEqual(r.Facts["listener_names"], c.names) || !reflect.DeepEqual(r.Facts["listener_missing_ports"], c.missing) {
				t.Errorf("%s %q %v", r.Status, r.Summary, r.Facts)
			}
			if !strings.Contains(r.Summary, c.inSum) {
				t.Errorf("summary %q lacks %q", r.Summary, c.inSum)
			}
			if r.Facts["listener_virtual_outbound"] != (len(c.in.Listeners) > 0) {
				t.Errorf("virtualOutbound %v", r.Facts["listener_virtual_outbound"])
			}
		})
	}
}

func TestEnvoyListenersThroughClusterReads(t *testing.T) {
	p := EnvoyListenersProbe{}
	ctx := context.Background()
	setup := func() *fakeCluster {
		f := newFakeCluster(t, evPod("web-7d9", "web", true), evService(8080, 9090))
		f.envoy[envoyKey(evSource, "/listeners?format=json")] = evTestdata(t, "envoy-listeners", "listeners.json")
		return f
	}
	all := cluster.Target{Namespace: "shop", Service: "orders", Source: &evSource}
	cases := []struct {
		name    string
		mutate  func(*fakeCluster)
		target  cluster.Target
		status  Status
		missing []string
		inSum   string
	}{
		{"port given", nil, evTarget, StatusPass, []string{}, "port 8080"},
		// The service's 9090 has no listener: 10.96.77.7_9090 is another VIP's.
		{"every service port", nil, all, StatusFail, []string{"9090"}, "no listener for port 9090"},
		{"service forbidden with a port", func(f *fakeCluster) { f.forbid("get", "services") }, evTarget, StatusPass, []string{}, "forbidden"},
		{"service forbidden without a port", func(f *fakeCluster) { f.forbid("get", "services") }, all, StatusError, nil, "forbidden: cannot get service shop/orders"},
		{"envoy unreachable", func(f *fakeCluster) {
			f.errs["envoy:"+envoyKey(evSource, "/listeners?format=json")] = &cluster.UnreachableError{What: "Envoy admin of shop/web-7d9", Err: errors.New("dial tcp 127.0.0.1:15000: connect: connection refused")}
		}, evTarget, StatusError, nil, "unreachable"},
		{"not JSON", func(f *fakeCluster) {
			f.envoy[envoyKey(evSource, "/listeners?format=json")] = []byte("upstream connect error or disconnect/reset before headers")
		}, evTarget, StatusError, nil, "cannot parse Envoy /listeners?format=json"},
		{"no source", nil, cluster.Target{Namespace: "shop", Service: "orders"}, StatusSkipped, nil, envoyadmin.NoSourceSummary},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := setup()
			if c.mutate != nil {
				c.mutate(f)
			}
			r := Run(ctx, p, f, c.target)
			evCheck(t, p, r)
			if r.Status != c.status || !strings.Contains(r.Summary, c.inSum) {
				t.Errorf("%s %q, want %s with %q", r.Status, r.Summary, c.status, c.inSum)
			}
			if c.missing != nil && !reflect.DeepEqual(r.Facts["listener_missing_ports"], c.missing) {
				t.Errorf("missing %v", r.Facts["listener_missing_ports"])
			}
		})
	}
}
