package probes

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/parse/envoy"
)

func evConfigInput(t *testing.T, file string, target cluster.Target) envoyConfigInput {
	t.Helper()
	b := evTestdata(t, "envoy-config", file)
	d, err := envoy.StreamConfigDump(bytes.NewReader(b), envoy.TargetMatcher(target.Host(), target.Port))
	if err != nil {
		t.Fatal(err)
	}
	return envoyConfigInput{Dump: d, Size: len(b)}
}

func TestEnvoyConfigEvaluate(t *testing.T) {
	p := EnvoyConfigProbe{}
	cases := []struct {
		name   string
		target cluster.Target
		file   string
		status Status
		facts  Facts
		inSum  []string
	}{
		{
			"auto mTLS with aggressive settings", evTarget, "config_dump_sidecar.json", StatusWarn,
			Facts{"config_cluster_found": true, "config_tls": "auto", "config_tls_modes": []string{"auto", "istio-mtls", "tls"},
				"config_outlier_consecutive_5xx": 1, "config_outlier_max_ejection_percent": 100,
				"config_max_connections": 10, "config_max_pending_requests": 1, "config_idle_timeout_s": 5},
			[]string{"outbound|8080||orders.shop.svc.cluster.local: TLS auto", "ejects a host after one 5xx", "v3|orders.shop.svc.cluster.local originates its own TLS", "1 cluster(s) still warming"},
		},
		{
			"plaintext port", cluster.Target{Namespace: "shop", Service: "orders", Port: 9090, Source: &evSource}, "config_dump_sidecar.json", StatusPass,
			Facts{"config_cluster_found": true, "config_tls": "none", "config_tls_modes": []string{"none"},
				"config_outlier_consecutive_5xx": 0, "config_max_connections": envoy.Unlimited, "config_max_pending_requests": envoy.Unlimited, "config_idle_timeout_s": 0},
			[]string{"TLS none", "outlier off", "max_connections unlimited", "idle_timeout unset"},
		},
		{
			// Port 0: the main cluster is the subset-less one of the lowest port.
			"every port", cluster.Target{Namespace: "shop", Service: "orders", Source: &evSource}, "config_dump_sidecar.json", StatusWarn,
			Facts{"config_tls": "auto", "config_tls_modes": []string{"auto", "istio-mtls", "none", "tls"}},
			[]string{"outbound|8080||orders.shop.svc.cluster.local: TLS auto"},
		},
		{
			"no cluster", cluster.Target{Namespace: "shop", Service: "payments", Port: 8080, Source: &evSource}, "config_dump_sidecar.json", StatusFail,
			Facts{"config_cluster_found": false, "config_tls": "unknown", "config_tls_modes": []string{}, "config_max_pending_requests": 0},
			[]string{"no active cluster for payments.shop.svc.cluster.local port 8080"},
		},
		{
			// The waypoint fixture: only an inbound-vip cluster, nothing outbound.
			"waypoint dump", cluster.Target{Namespace: "default", Service: "httpbin", Port: 8000, Source: &evSource}, "config_dump.json", StatusFail,
			Facts{"config_cluster_found": false},
			[]string{"no active cluster"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := evaluateEnvoyConfig(c.target, evConfigInput(t, c.file, c.target))
			evCheck(t, p, r)
			if r.Status != c.status {
				t.Errorf("status %s: %s", r.Status, r.Summary)
			}
			for k, want := range c.facts {
				if !reflect.DeepEqual(r.Facts[k], want) {
					t.Errorf("%s = %#v, want %#v", k, r.Facts[k], want)
				}
			}
			for _, s := range c.inSum {
				if !strings.Contains(r.Summary, s) {
					t.Errorf("summary %q lacks %q", r.Summary, s)
				}
			}
		})
	}
}

func TestEnvoyConfigEvidence(t *testing.T) {
	r := evaluateEnvoyConfig(evTarget, evConfigInput(t, "config_dump_sidecar.json", evTarget))
	if len(r.Evidence.Rows) != 4 || r.Evidence.Rows[3][1] != "warming" || r.Evidence.Rows[0][2] != "auto" {
		t.Errorf("rows %v", r.Evidence.Rows)
	}
	for _, want := range []string{"tlsMode=istio", "envoy.tcp.metadataexchange.config.MetadataExchange", "8 dynamic clusters"} {
		if !strings.Contains(r.Evidence.Raw, want) {
			t.Errorf("raw lacks %q:\n%s", want, r.Evidence.Raw)
		}
	}
	if r.Commands[0] != "istioctl proxy-config cluster web-7d9.shop --fqdn orders.shop.svc.cluster.local -o json" {
		t.Errorf("commands %q", r.Commands)
	}
}

func TestEnvoyConfigThroughClusterReads(t *testing.T) {
	p := EnvoyConfigProbe{}
	ctx := context.Background()
	setup := func() *fakeCluster {
		f := newFakeCluster(t, evPod("web-7d9", "web", true))
		f.envoy[envoyKey(evSource, "/config_dump")] = evTestdata(t, "envoy-config", "config_dump_sidecar.json")
		return f
	}
	cases := []struct {
		name   string
		mutate func(*fakeCluster)
		status Status
		inSum  string
	}{
		{"dump read", nil, StatusWarn, "TLS auto"},
		{"unreachable", func(f *fakeCluster) {
			f.errs["envoy:"+envoyKey(evSource, "/config_dump")] = &cluster.UnreachableError{What: "Envoy admin of shop/web-7d9", Err: errors.New("i/o timeout")}
		}, StatusError, "cannot read Envoy /config_dump of shop/web-7d9: Envoy admin of shop/web-7d9 unreachable: i/o timeout"},
		{"truncated dump", func(f *fakeCluster) {
			b := evTestdata(t, "envoy-config", "config_dump_sidecar.json")
			f.envoy[envoyKey(evSource, "/config_dump")] = b[:len(b)/2]
		}, StatusError, "cannot parse Envoy /config_dump"},
		{"not recorded", func(f *fakeCluster) { delete(f.envoy, envoyKey(evSource, "/config_dump")) }, StatusError, "no data recorded"},
		{"source without sidecar", func(f *fakeCluster) {
			*f = *newFakeCluster(t, evPod("web-7d9", "web", false))
		}, StatusSkipped, "no istio-proxy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := setup()
			if c.mutate != nil {
				c.mutate(f)
			}
			r := Run(ctx, p, f, evTarget)
			evCheck(t, p, r)
			if r.Status != c.status || !strings.Contains(r.Summary, c.inSum) {
				t.Errorf("%s %q, want %s with %q", r.Status, r.Summary, c.status, c.inSum)
			}
		})
	}
}

// cancelAfterAdmin ends the probe's context once the dump has been fetched,
// as a deadline passing mid-decode would.
type cancelAfterAdmin struct {
	*fakeCluster
	cancel context.CancelFunc
}

func (c cancelAfterAdmin) EnvoyAdmin(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error) {
	defer c.cancel()
	return c.fakeCluster.EnvoyAdmin(ctx, pod, path)
}

func TestEnvoyConfigStopsAtTheDeadline(t *testing.T) {
	f := newFakeCluster(t, evPod("web-7d9", "web", true))
	f.envoy[envoyKey(evSource, "/config_dump")] = evTestdata(t, "envoy-config", "config_dump_sidecar.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := Run(ctx, EnvoyConfigProbe{}, cancelAfterAdmin{f, cancel}, evTarget)
	evCheck(t, EnvoyConfigProbe{}, r)
	if r.Status != StatusError || !strings.Contains(r.Summary, "context canceled") {
		t.Errorf("%s %q", r.Status, r.Summary)
	}
}
