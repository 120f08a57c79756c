package ztunnel

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// istioctlDumpFile is a real ztunnel /config_dump: istioctl's test data in
// istio.io/istio, read where the Go module cache holds it (the lab's tools
// modules depend on istio.io/istio; the product does not). "" when absent.
func istioctlDumpFile() string {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return ""
	}
	matches, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "istio.io", "istio@*", "istioctl", "pkg", "writer", "ztunnel", "configdump", "testdata", "dump.json"))
	if len(matches) == 0 {
		return ""
	}
	sort.Strings(matches)
	return matches[len(matches)-1]
}

func istioctlDump(t *testing.T) []byte {
	t.Helper()
	path := istioctlDumpFile()
	if path == "" {
		t.Skip("istio.io/istio is not in the module cache (go -C lab/tools/istioctl mod download)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// What an engineer reads off istioctl's dump with `istioctl zc workloads`
// and `istioctl zc services`: 27 workloads keyed by address, the bookinfo
// ones HBONE behind namespace-istio-waypoint (10.96.65.117), httpbin and
// the gateway admission server TCP (not in the mesh).
func TestParseIstioctlDump(t *testing.T) {
	d, err := ParseConfigDump(istioctlDump(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Workloads) != 27 || len(d.Services) != 19 || len(d.Policies) != 2 {
		t.Fatalf("%d workloads, %d services, %d policies; want 27, 19, 2", len(d.Workloads), len(d.Services), len(d.Policies))
	}
	ratings, ok := d.WorkloadByIP("10.244.2.54")
	if !ok || ratings.Name != "ratings-v1-6484c4d9bb-mdxm5" || ratings.Protocol != "HBONE" || ratings.Waypoint != "10.96.65.117" || ratings.Node != "ambient-worker2" {
		t.Errorf("ratings: %+v", ratings)
	}
	httpbin, ok := d.WorkloadByIP("10.244.1.10")
	if !ok || httpbin.Protocol != "TCP" || httpbin.Waypoint != "" {
		t.Errorf("httpbin (not in the mesh): %+v", httpbin)
	}
	wp, ok := d.ServiceByHost("namespace-istio-waypoint.bookinfo.svc.cluster.local")
	if !ok || !reflect.DeepEqual(wp.VIPs, []string{"10.96.65.117"}) || wp.Ports[15008] != 15008 || len(wp.Endpoints) != 1 || wp.Endpoints[0].Address != "10.244.2.52" {
		t.Errorf("the waypoint's service: %+v", wp)
	}
	admission, _ := d.ServiceByHost("gateway-api-admission-server.gateway-system.svc.cluster.local")
	if admission.Ports[443] != 8443 {
		t.Errorf("service port 443 targets %d, want 8443", admission.Ports[443])
	}
	var names []string
	for _, p := range d.Policies {
		names = append(names, p.Namespace+"/"+p.Name+" "+p.Action+" "+p.Scope)
	}
	sort.Strings(names)
	if !reflect.DeepEqual(names, []string{"default/allow-nothing Allow Namespace", "default/allow-waypoint Allow WorkloadSelector"}) {
		t.Errorf("policies %v", names)
	}
}

// The list layout of newer ztunnels, with a waypoint named by hostname.
func TestParseListDump(t *testing.T) {
	data, err := os.ReadFile("testdata/dump_list.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseConfigDump(data)
	if err != nil {
		t.Fatal(err)
	}
	svc, ok := d.ServiceByHost("orders.shop.svc.cluster.local")
	if !ok || svc.Waypoint != "shop/orders-waypoint.shop.svc.cluster.local" || !reflect.DeepEqual(svc.VIPs, []string{"10.96.14.20"}) || len(svc.Endpoints) != 2 || svc.Ports[8080] != 8080 {
		t.Errorf("orders: %+v", svc)
	}
	w, ok := d.WorkloadByIP("10.244.2.9")
	if !ok || w.Protocol != "TCP" || w.Node != "worker-c" {
		t.Errorf("orders-p7x2n: %+v", w)
	}
	if w, _ := d.WorkloadByIP("10.244.1.7"); !reflect.DeepEqual(w.AuthorizationPolicies, []string{"shop/orders-via-waypoint"}) {
		t.Errorf("policies of orders-k2m4q: %v", w.AuthorizationPolicies)
	}
	for _, bad := range []string{"", "[]", `{"workloads": 7}`, `{"services": {"x": 1}}`} {
		if _, err := ParseConfigDump([]byte(bad)); err == nil {
			t.Errorf("ParseConfigDump(%q): no error", bad)
		}
	}
	if d, err := ParseConfigDump([]byte(`{"workloads": null, "certificates": []}`)); err != nil || len(d.Workloads) != 0 {
		t.Errorf("an empty dump: %+v, %v", d, err)
	}
}
