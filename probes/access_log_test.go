package probes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/proxylog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func evAccessLogCluster(t *testing.T, extra ...runtime.Object) *fakeCluster {
	objs := append([]runtime.Object{
		evPod("web-7d9", "web", true), evService(8080),
		evPod("orders-1", "orders", true), evPod("orders-2", "orders", true), evPod("orders-3", "orders", false),
	}, extra...)
	f := newFakeCluster(t, objs...)
	f.logs[logKey(evSource, mesh.ProxyContainer)] = evTestdata(t, "access-log", "web-7d9.log")
	f.logs[logKey(cluster.PodRef{Namespace: "shop", Name: "orders-1"}, mesh.ProxyContainer)] = evTestdata(t, "access-log", "orders-1.log")
	f.logs[logKey(cluster.PodRef{Namespace: "shop", Name: "orders-2"}, mesh.ProxyContainer)] = evTestdata(t, "access-log", "orders-2.log")
	return f
}

func TestAccessLogSourceAndUpstream(t *testing.T) {
	p := AccessLogProbe{}
	f := evAccessLogCluster(t)
	r := Run(context.Background(), p, f, evTarget)
	evCheck(t, p, r)
	if f.lastLogOptions.Container != mesh.ProxyContainer || f.lastLogOptions.Since != proxylog.Window ||
		f.lastLogOptions.TailLines != proxylog.AccessLogTailLines || f.lastLogOptions.LimitBytes != proxylog.AccessLogTailLines*proxylog.LineAllowance {
		t.Errorf("log options %+v", f.lastLogOptions)
	}
	want := Facts{
		// web: 11 lines, orders-1: 4, orders-2: 2.
		"log_lines": 17, "log_unparsed": 3,
		// web's 503s to orders (UF+URX, UH, UC, NC), orders-1's startup
		// refusal and orders-2's UC; web's UO to payments and orders-1's own
		// call to inventory are someone else's 503s.
		"log_503": 6, "log_5xx": 6, "log_2xx": 3,
		"log_flag_uf": 2, "log_flag_urx": 1, "log_flag_uh": 1, "log_flag_uc": 2, "log_flag_nc": 1,
		"log_flag_uo": 0, "log_flag_nr": 0, "log_flag_ut": 0, "log_flag_dc": 0, "log_flag_lr": 0, "log_flag_ur": 0,
		"log_blackhole": 1, "log_blackhole_hosts": []string{"api.stripe.com"},
		"log_connection_refused": 2, "log_upstream_pods": 2,
		"log_transport_failures": []string{"delayed_connect_error:_111", "delayed_connect_error:_Connection_refused"},
	}
	for k, v := range want {
		if !reflect.DeepEqual(r.Facts[k], v) {
			t.Errorf("%s = %#v, want %#v", k, r.Facts[k], v)
		}
	}
	details := r.Facts["log_details"].([]string)
	if len(details) != 5 || details[0] != "upstream_reset_before_response_started{connection_termination}" {
		t.Errorf("details %q", details)
	}
	if r.Status != StatusFail {
		t.Errorf("status %s", r.Status)
	}
	for _, s := range []string{"source web-7d9: 4 503", "upstream 2 pods: 2 503", "1 to BlackHoleCluster (api.stripe.com)", "1 of 3 upstream pods not read"} {
		if !strings.Contains(r.Summary, s) {
			t.Errorf("summary %q lacks %q", r.Summary, s)
		}
	}
	if len(r.Evidence.Rows) != 3 || r.Evidence.Rows[0][0] != "source (outbound)" || r.Evidence.Rows[1][0] != "upstream (inbound)" {
		t.Errorf("rows %v", r.Evidence.Rows)
	}
	if !strings.Contains(r.Evidence.Raw, "# upstream (inbound) shop/orders-1") || strings.Contains(r.Evidence.Raw, "payments.shop") {
		t.Errorf("raw:\n%s", r.Evidence.Raw)
	}
	wantCmds := []string{
		"kubectl logs -n shop web-7d9 -c istio-proxy --since=30m | grep -E ' 503 | NC '",
		"kubectl logs -n shop -l app=orders -c istio-proxy --since=30m --prefix | grep 'inbound|' | grep -E ' 503 | NC '",
	}
	if !reflect.DeepEqual(r.Commands, wantCmds) {
		t.Errorf("commands %q", r.Commands)
	}
}

func TestAccessLogWithoutSourceReadsUpstreamOnly(t *testing.T) {
	p := AccessLogProbe{}
	r := Run(context.Background(), p, evAccessLogCluster(t), cluster.Target{Namespace: "shop", Service: "orders", Port: 8080})
	evCheck(t, p, r)
	if r.Facts["log_503"] != 2 || r.Facts["log_blackhole"] != 0 || r.Facts["log_upstream_pods"] != 2 || r.Facts["log_lines"] != 6 || strings.Contains(r.Summary, "source") {
		t.Errorf("%s %v", r.Summary, r.Facts)
	}
}

func TestAccessLogCapsUpstreamPods(t *testing.T) {
	p := AccessLogProbe{}
	var extra []runtime.Object
	for i := 4; i <= 9; i++ {
		extra = append(extra, evPod(fmt.Sprintf("orders-%d", i), "orders", true))
	}
	f := evAccessLogCluster(t, extra...)
	for i := 4; i <= 9; i++ {
		f.logs[logKey(cluster.PodRef{Namespace: "shop", Name: fmt.Sprintf("orders-%d", i)}, mesh.ProxyContainer)] = evTestdata(t, "access-log", "orders-2.log")
	}
	r := Run(context.Background(), p, f, evTarget)
	evCheck(t, p, r)
	if r.Facts["log_upstream_pods"] != proxylog.MaxUpstreamLogs || !strings.Contains(r.Summary, "4 of 9 upstream pods not read") {
		t.Errorf("%s %v", r.Summary, r.Facts["log_upstream_pods"])
	}
}

func TestAccessLogBadInput(t *testing.T) {
	p := AccessLogProbe{}
	ctx := context.Background()
	orders1 := cluster.PodRef{Namespace: "shop", Name: "orders-1"}
	cases := []struct {
		name   string
		mutate func(*fakeCluster)
		target cluster.Target
		status Status
		inSum  string
		facts  Facts
	}{
		{"one log missing", func(f *fakeCluster) { delete(f.logs, logKey(orders1, mesh.ProxyContainer)) }, evTarget, StatusFail,
			"cannot read the istio-proxy log of shop/orders-1: no data recorded", Facts{"log_upstream_pods": 1}},
		{"every log forbidden", func(f *fakeCluster) {
			for k := range f.logs {
				f.errs["logs:"+k] = errors.New(`pods "x" is forbidden: User "oncall" cannot get resource "pods/log"`)
			}
		}, evTarget, StatusError, "cannot read the istio-proxy log of shop/web-7d9", nil},
		{"garbage only", func(f *fakeCluster) {
			for k := range f.logs {
				f.logs[k] = []byte("\x00\x01 not a log\n{\"level\":\"info\"}\n[2026-12-02 03:00:00.000][1][info][main] starting\n")
			}
		}, evTarget, StatusWarn, "no access-log entry for the target", Facts{"log_lines": 9, "log_unparsed": 9, "log_503": 0}},
		{"source without sidecar", func(f *fakeCluster) {
			_ = f.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), evPod("web-7d9", "web", false), "shop")
		}, evTarget, StatusFail, "source pod shop/web-7d9 has no istio-proxy", Facts{"log_blackhole": 0, "log_503": 2}},
		{"service gone, source read", func(f *fakeCluster) {
			_ = f.kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("services"), "shop", "orders")
		}, evTarget, StatusFail, "cannot get service shop/orders: not found", Facts{"log_upstream_pods": 0, "log_503": 4}},
		{"nothing to read", func(f *fakeCluster) {
			_ = f.kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("services"), "shop", "orders")
			_ = f.kube.Tracker().Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"}})
		}, cluster.Target{Namespace: "shop", Service: "orders"}, StatusSkipped, "the Service has no selector", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := evAccessLogCluster(t)
			c.mutate(f)
			r := Run(ctx, p, f, c.target)
			evCheck(t, p, r)
			if r.Status != c.status || !strings.Contains(r.Summary, c.inSum) {
				t.Errorf("%s %q, want %s with %q", r.Status, r.Summary, c.status, c.inSum)
			}
			for k, v := range c.facts {
				if !reflect.DeepEqual(r.Facts[k], v) {
					t.Errorf("%s = %#v, want %#v", k, r.Facts[k], v)
				}
			}
		})
	}
}

// The incident is the newest entries. A busy caller writes long lines (long
// paths, user agents): 10,000 of them pass 4 MB, and the API server applies
// the byte limit from the oldest line of the tail, so a read bounded at
// 4 MB lost the newest entries, the 503s. Padded with 12,000 older 200s of
// ~700 bytes, the caller's log must still give the 503 evidence it gives
// alone.
func TestAccessLogReadKeepsTheNewestEntries(t *testing.T) {
	s, err := recorded.Load(assets.FS, "port-mismatch")
	if err != nil {
		t.Fatal(err)
	}
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	want := Run(context.Background(), AccessLogProbe{}, c, s.Target)

	key := recorded.LogKey{Pod: *s.Target.Source, Container: mesh.ProxyContainer}
	orig := string(s.Logs[key])
	cut := strings.Index(orig, "\n[") + 1
	if cut == 0 {
		t.Fatal("no access entry in the caller's log")
	}
	pad := `[2026-12-02T13:52:04.000Z] "GET /api/orders?` + strings.Repeat("q=1&", 100) + ` HTTP/1.1" 200 - via_upstream - "-" 0 488 7 6 "-" "Go-http-client/1.1" "71d1fa9c-d9ce-48f4-bf55-fdc55fcdbabb" "orders:8080" "10.244.1.27:8080" outbound|8080||orders.shop.svc.cluster.local 10.244.0.9:36895 10.96.14.20:8080 10.244.0.9:35100 - default` + "\n"
	s.Logs[key] = []byte(orig[:cut] + strings.Repeat(pad, 12000) + orig[cut:])
	var padded cluster.Cluster
	padded, err = recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	got := Run(context.Background(), AccessLogProbe{}, padded, s.Target)

	compared := 0
	for k, v := range want.Facts {
		if !strings.Contains(k, "flag") && !strings.Contains(k, "5xx") && !strings.Contains(k, "503") {
			continue
		}
		if n, ok := v.(int); ok && n > 0 {
			compared++
		}
		if fmt.Sprint(got.Facts[k]) != fmt.Sprint(v) {
			t.Errorf("%s: %v with older entries before them, %v alone", k, got.Facts[k], v)
		}
	}
	if compared == 0 {
		t.Fatalf("the scenario's caller log shows no 503 evidence to keep: %v", want.Facts)
	}
}

// meshConfigMap is the istio ConfigMap with the mesh config of testdata.
func meshConfigMap(t *testing.T, file string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.DefaultControlPlane, Name: mesh.MeshConfigMap},
		Data: map[string]string{"mesh": string(evTestdata(t, "access-log", file))}}
}

// A mesh that logs under its own JSON keys, or in a TEXT layout of its
// own, is read by the format its mesh config declares: before, every line
// was rejected and the 503s went unseen.
func TestAccessLogByTheMeshFormat(t *testing.T) {
	for _, c := range []struct {
		meshConfig, log string
		want            Facts
	}{
		{"meshconfig_json_keys.yaml", "json_mesh_keys.log", Facts{"log_503": 2, "log_flag_uf": 1, "log_flag_uh": 1, "log_connection_refused": 1,
			"log_tcp": 0, "log_2xx": 1, "log_custom_format": true}},
		{"meshconfig_text_custom.yaml", "text_custom.log", Facts{"log_503": 3, "log_flag_uf": 2, "log_flag_uo": 1, "log_flag_urx": 1,
			"log_connection_refused": 1, "log_2xx": 1, "log_custom_format": true}},
	} {
		t.Run(c.log, func(t *testing.T) {
			f := newFakeCluster(t, evPod("web-7d9", "web", true), evService(8080), meshConfigMap(t, c.meshConfig))
			log, err := os.ReadFile(filepath.Join("parse", "accesslog", "testdata", c.log))
			if err != nil {
				t.Fatal(err)
			}
			f.logs[logKey(evSource, mesh.ProxyContainer)] = log
			r := Run(context.Background(), AccessLogProbe{}, f, evTarget)
			evCheck(t, AccessLogProbe{}, r)
			for k, v := range c.want {
				if !reflect.DeepEqual(r.Facts[k], v) {
					t.Errorf("%s = %#v, want %#v (%s)", k, r.Facts[k], v, r.Summary)
				}
			}
		})
	}
}

// A flag no cause of the catalogue produces (504 UT, 431 DPE at the
// destination) fails the probe with a summary naming it and its hop, so a
// triage that finds nothing else ends in an unexplained finding about it.
func TestAccessLogUnexplainedFlag(t *testing.T) {
	f := newFakeCluster(t, evPod("web-7d9", "web", true), evService(8080), evPod("orders-1", "orders", true))
	f.logs[logKey(evSource, mesh.ProxyContainer)] = []byte(accessLogUT504)
	f.logs[logKey(cluster.PodRef{Namespace: "shop", Name: "orders-1"}, mesh.ProxyContainer)] = []byte(
		`[2026-12-02T03:04:06.000Z] "GET /api/orders HTTP/1.1" 431 DPE http1.headers_size_error - "-" 0 31 0 - "-" "-" "-" "-" "-" inbound|8080|| - 10.244.1.7:8080 10.244.0.21:51702 - default` + "\n")
	r := Run(context.Background(), AccessLogProbe{}, f, evTarget)
	evCheck(t, AccessLogProbe{}, r)
	u, _ := r.Facts["log_unexplained"].([]string)
	if r.Status != StatusFail || len(u) != 2 || !strings.Contains(r.Summary, "UT 504 (response_timeout) at the caller's sidecar (outbound)") ||
		!strings.Contains(r.Summary, "DPE 431 (http1.headers_size_error) at the destination's sidecar (inbound)") {
		t.Errorf("%s %q\nunexplained %q", r.Status, r.Summary, u)
	}
}

// accessLogUT504 is web-7d9's outbound 504 UT to orders, in Istio's
// default format.
const accessLogUT504 = `[2026-12-02T03:04:05.123Z] "GET /api/orders HTTP/1.1" 504 UT response_timeout - "-" 0 24 15001 - "-" "curl/8.5.0" "1f0c" "orders.shop:8080" "10.244.1.7:8080" outbound|8080||orders.shop.svc.cluster.local 10.244.0.21:40112 10.96.12.4:8080 10.244.0.21:51702 - default` + "\n"

// The one NC line of the real access logs (text.log: an ingress gateway's
// 503 NC cluster_not_found, read in place) and the shape the same gateway
// writes under Gateway API semantics, where istiod sets the route's
// cluster_not_found_response_code to 500: only the 500 is a Gateway API
// backend's, a gateway's counts whatever its host (it names no cluster), a
// sidecar's when it is about the target; NC fails the step whatever its
// code.
func TestAccessLogCountsNC500OnGatewayAndSidecar(t *testing.T) {
	real := realworldLogGroup(t, "text.log", "503 NC cluster_not_found and 503 UC on ingress gateway")
	var ncLine string
	for _, l := range strings.Split(string(real), "\n") {
		if strings.Contains(l, " 503 NC cluster_not_found ") {
			ncLine = l
		}
	}
	if ncLine == "" {
		t.Fatal("text.log's ingress gateway group holds no 503 NC line")
	}
	as500 := strings.Replace(ncLine, " 503 NC ", " 500 NC ", 1)
	const gwHost = `"istio-ingressgateway.istio-system.svc.cluster.local"`
	aboutTarget := strings.Replace(as500, gwHost, `"service-ext.default.svc.cluster.local"`, 1)
	target := rwTarget("default", "service-ext", 8080, "caller")
	for _, c := range []struct {
		name       string
		line       string
		gateway    bool
		nc500, nc  int
		wantStatus Status
	}{
		{"real 503 NC on the gateway", ncLine, true, 0, 0, StatusWarn},
		{"500 NC on the gateway, another host", as500, true, 1, 0, StatusFail},
		{"500 NC on a sidecar, another host", as500, false, 0, 0, StatusWarn},
		{"500 NC on a sidecar, about the target", aboutTarget, false, 1, 1, StatusFail},
		{"500 NC on the gateway, about the target", aboutTarget, true, 1, 1, StatusFail},
	} {
		pl := splitCallerLog(nil, *target.Source, []byte(c.line+"\n"), target, c.gateway)
		r := evaluateAccessLog(target, accessLogInput{Logs: []podLog{pl}})
		if r.Facts["log_nc500"] != c.nc500 || r.Facts["log_flag_nc"] != c.nc || r.Status != c.wantStatus {
			t.Errorf("%s: log_nc500 %v, log_flag_nc %v, status %s; want %d, %d, %s (%s)", c.name, r.Facts["log_nc500"], r.Facts["log_flag_nc"], r.Status, c.nc500, c.nc, c.wantStatus, r.Summary)
		}
		if c.nc500 > 0 && !reflect.DeepEqual(r.Facts["log_nc500_routes"], []string{"-"}) {
			t.Errorf("%s: log_nc500_routes %v, want [-] (the real line names no route)", c.name, r.Facts["log_nc500_routes"])
		}
	}
}
