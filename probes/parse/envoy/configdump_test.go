package envoy

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func all(string) bool { return true }

// The pitfall in ARCHITECTURE.md, reproduced: plain protojson, even with
// DiscardUnknown, cannot decode a real dump.
func TestPlainProtojsonFailsOnRealDumps(t *testing.T) {
	for file, unresolved := range map[string]string{
		"config_dump.json":         "envoy.extensions.transport_sockets.internal_upstream.v3.InternalUpstreamTransport",
		"config_dump_sidecar.json": "envoy.tcp.metadataexchange.config.MetadataExchange",
	} {
		var cd adminv3.ConfigDump
		err := protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(readTestdata(t, file), &cd)
		if err == nil || !strings.Contains(err.Error(), "unable to resolve") || !strings.Contains(err.Error(), unresolved) {
			t.Errorf("%s: plain protojson error = %v, want unable to resolve %s", file, err, unresolved)
		}
	}
}

// Both decoders must read the same facts from the same document.
func TestDecodersAgree(t *testing.T) {
	matchers := map[string]func(string) bool{
		"all":               all,
		"orders:8080":       TargetMatcher("orders.shop.svc.cluster.local", 8080),
		"orders:any":        TargetMatcher("orders.shop.svc.cluster.local", 0),
		"reviews.default:0": TargetMatcher("reviews.default.svc.cluster.local", 0),
		"none":              func(string) bool { return false },
	}
	for _, file := range []string{"config_dump.json", "config_dump_endpoints.json", "config_dump_sidecar.json"} {
		data := readTestdata(t, file)
		for mname, match := range matchers {
			full, err := DecodeConfigDump(data, match)
			if err != nil {
				t.Fatalf("%s/%s: DecodeConfigDump: %v", file, mname, err)
			}
			stream, err := StreamConfigDump(bytes.NewReader(data), match)
			if err != nil {
				t.Fatalf("%s/%s: StreamConfigDump: %v", file, mname, err)
			}
			if !reflect.DeepEqual(full, stream) {
				t.Errorf("%s/%s: decoders disagree\nfull   %+v\nstream %+v", file, mname, full, stream)
			}
		}
	}
}

func TestWaypointFixture(t *testing.T) {
	d, err := StreamConfigDump(bytes.NewReader(readTestdata(t, "config_dump.json")), all)
	if err != nil {
		t.Fatal(err)
	}
	if d.DynamicClusters != 1 || len(d.Clusters) != 1 || d.ClustersVersion != "2023-12-26T05:56:10Z/3" {
		t.Fatalf("%+v", d)
	}
	c := d.Clusters[0]
	if c.Name != "inbound-vip|8000|http|httpbin.default.svc.cluster.local" || c.Type != "EDS" {
		t.Errorf("%+v", c)
	}
	// The inner socket of internal_upstream cannot be read: unknown, not none.
	if c.TLS != TLSUnknown || !strings.Contains(c.TLSDetail, "InternalUpstreamTransport") {
		t.Errorf("TLS %q (%s)", c.TLS, c.TLSDetail)
	}
	if d.Fallbacks["envoy.extensions.transport_sockets.internal_upstream.v3.InternalUpstreamTransport"] != 1 {
		t.Errorf("fallbacks %v", d.Fallbacks)
	}
}

func TestEndpointsFixture(t *testing.T) {
	d, err := StreamConfigDump(bytes.NewReader(readTestdata(t, "config_dump_endpoints.json")), TargetMatcher("reviews.default.svc.cluster.local", 9080))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Clusters) != 0 || len(d.Endpoints) != 1 {
		t.Fatalf("%+v", d)
	}
	e := d.Endpoints[0]
	if e.Cluster != "outbound|9080||reviews.default.svc.cluster.local" || e.Total != 3 || e.Healthy != 3 || e.TLSModeIstio != 3 {
		t.Errorf("%+v", e)
	}
}

func TestSidecarClusterConfig(t *testing.T) {
	d, err := StreamConfigDump(bytes.NewReader(readTestdata(t, "config_dump_sidecar.json")), TargetMatcher("orders.shop.svc.cluster.local", 8080))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range d.Clusters {
		names = append(names, fmt.Sprintf("%s warming=%v", c.Name, c.Warming))
	}
	want := []string{
		"outbound|8080||orders.shop.svc.cluster.local warming=false",
		"outbound|8080|v2|orders.shop.svc.cluster.local warming=false",
		"outbound|8080|v3|orders.shop.svc.cluster.local warming=false",
		"outbound|8080|canary|orders.shop.svc.cluster.local warming=true",
	}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("clusters %q", names)
	}
	if d.DynamicClusters != 8 {
		t.Errorf("dynamic clusters %d", d.DynamicClusters)
	}
	auto := d.Clusters[0]
	if auto.TLS != TLSAuto || auto.SNI != "outbound_.8080_._.orders.shop.svc.cluster.local" ||
		!auto.OutlierDetection || auto.Consecutive5xx != 1 || auto.MaxEjectionPercent != 100 || auto.BaseEjectionTime != 180*time.Second ||
		auto.MaxConnections != 10 || auto.MaxPendingRequests != 1 || auto.MaxRequests != Unlimited ||
		auto.IdleTimeout != 5*time.Second || auto.ConnectTimeout != 10*time.Second || auto.Type != "EDS" {
		t.Errorf("auto mTLS cluster %+v", auto)
	}
	if c := d.Clusters[1]; c.TLS != TLSIstioMutual || c.OutlierDetection || c.Consecutive5xx != 0 || c.MaxConnections != Unlimited || c.IdleTimeout != time.Hour {
		t.Errorf("ISTIO_MUTUAL cluster %+v", c)
	}
	if c := d.Clusters[2]; c.TLS != TLSOrigination || !strings.Contains(c.TLSDetail, "file-cert:") || c.IdleTimeout != 0 {
		t.Errorf("MUTUAL cluster %+v", c)
	}
	if got := d.FallbackTypes(); !reflect.DeepEqual(got, []string{"envoy.tcp.metadataexchange.config.MetadataExchange"}) || d.Fallbacks[got[0]] != 4 {
		t.Errorf("fallbacks %v", d.Fallbacks)
	}

	other, err := StreamConfigDump(bytes.NewReader(readTestdata(t, "config_dump_sidecar.json")), func(n string) bool {
		return IsTargetCluster(n, "orders.shop.svc.cluster.local", 9090) || IsTargetCluster(n, "api.stripe.com", 443)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(other.Clusters) != 2 {
		t.Fatalf("%+v", other.Clusters)
	}
	if c := other.Clusters[0]; c.Name != "outbound|9090||orders.shop.svc.cluster.local" || c.TLS != TLSNone {
		t.Errorf("plaintext cluster %+v", c)
	}
	if c := other.Clusters[1]; c.TLS != TLSOrigination || c.SNI != "api.stripe.com" || c.Type != "STRICT_DNS" || !strings.Contains(c.TLSDetail, "without client certificate") {
		t.Errorf("SIMPLE cluster %+v", c)
	}
}

func TestStreamConfigDumpBadInput(t *testing.T) {
	for name, doc := range map[string]string{
		"not json":          "<html>503 Service Unavailable</html>",
		"truncated":         `{"configs":[{"@type":"type.googleapis.com/envoy.admin.v3.ClustersConfigDump","dynamic_active_clusters":[{"cluster":{"name":"outbound|8080||orders.shop.svc.cluster.local",`,
		"configs not array": `{"configs":{"a":1}}`,
		"array root":        `[1,2]`,
		"bad cluster":       `{"configs":[{"@type":"type.googleapis.com/envoy.admin.v3.ClustersConfigDump","dynamic_active_clusters":[{"cluster":{"@type":"type.googleapis.com/envoy.config.cluster.v3.Cluster","name":"outbound|8080||orders.shop.svc.cluster.local","connect_timeout":"soon"}}]}]}`,
	} {
		if _, err := StreamConfigDump(strings.NewReader(doc), all); err == nil {
			t.Errorf("%s: no error", name)
		}
		if _, err := DecodeConfigDump([]byte(doc), all); err == nil {
			t.Errorf("%s: DecodeConfigDump: no error", name)
		}
	}
	d, err := StreamConfigDump(strings.NewReader(`{"configs":[], "future": {"x": [1, {"y": 2}]}}`), all)
	if err != nil || len(d.Clusters) != 0 {
		t.Errorf("empty dump: %+v %v", d, err)
	}
}

// A cluster whose name is not its first field, and key spellings that need
// escaping, survive the field-by-field re-assembly.
func TestStreamReassemblesFields(t *testing.T) {
	doc := `{"configs":[{"dynamic_active_clusters":[{"cluster":{
		"@type":"type.googleapis.com/envoy.config.cluster.v3.Cluster",
		"outlier_detection":{"consecutive_5xx":3,"max_ejection_percent":50},
		"we\"ird":1,
		"name":"outbound|80||a.b.svc.cluster.local",
		"circuit_breakers":{"thresholds":[{"priority":"HIGH","max_connections":7},{"max_connections":99,"max_pending_requests":5}]}
	}}]}]}`
	d, err := StreamConfigDump(strings.NewReader(doc), all)
	if err != nil {
		t.Fatal(err)
	}
	c := d.Clusters[0]
	if c.Name != "outbound|80||a.b.svc.cluster.local" || c.Consecutive5xx != 3 || c.MaxEjectionPercent != 50 || c.MaxConnections != 99 || c.MaxPendingRequests != 5 || c.TLS != TLSNone {
		t.Errorf("%+v", c)
	}
}

func TestTopLevelString(t *testing.T) {
	obj := []byte(`{"transport_socket_matches":[{"name":"tlsMode-istio","match":{"name":"x"}}],
		"metadata":{"s":"}{\\\"name\\\": \\\"fake\\\"","name":"nested"},
		"name" : "outbound|80||a.b.svc.cluster.local", "type":"EDS"}`)
	if got := topLevelString(obj, "name"); got != "outbound|80||a.b.svc.cluster.local" {
		t.Errorf("name = %q", got)
	}
	if got := topLevelString(obj, "type"); got != "EDS" {
		t.Errorf("type = %q", got)
	}
	for _, o := range []string{`{"name":5}`, `{"other":"name"}`, `{}`, `{"a":{"name":"deep"}}`} {
		if got := topLevelString([]byte(o), "name"); got != "" {
			t.Errorf("%s: %q", o, got)
		}
	}
	if got := topLevelString([]byte(`{"name":"a\u007cb"}`), "name"); got != "a|b" {
		t.Errorf("escaped: %q", got)
	}
}

// benchDump is a generated config_dump of about 100 MB: the cluster shapes of
// the fixtures repeated under 20,000 distinct names, plus listeners and
// routes so that most of the document is what a decoder must skip over.
var benchDump = sync.OnceValues(func() ([]byte, error) { return generateDump(20_000, 100<<20) })

func generateDump(clusters, size int) ([]byte, error) {
	return GenerateConfigDump("testdata", clusters, size)
}

func TestGeneratedDumpDecodes(t *testing.T) {
	data, err := generateDump(200, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	match := func(n string) bool { return strings.Contains(n, "|svc-3.") || strings.Contains(n, "|svc-199.") }
	full, err := DecodeConfigDump(data, match)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := StreamConfigDump(bytes.NewReader(data), match)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(full, stream) || stream.DynamicClusters != 200 || len(stream.Clusters) != 2 {
		t.Errorf("full %+v\nstream %+v", full, stream)
	}
}

// peakHeap runs f once and samples the heap while it runs.
func peakHeap(f func()) (peak uint64) {
	runtime.GC()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var ms runtime.MemStats
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	runtime.ReadMemStats(&ms)
	close(done)
	wg.Wait()
	return max(peak, ms.HeapAlloc)
}

func benchmarkDecoder(b *testing.B, decode func(data []byte, match func(string) bool) (ConfigDump, error)) {
	data, err := benchDump()
	if err != nil {
		b.Fatal(err)
	}
	match := TargetMatcher("svc-12345.ns-26.svc.cluster.local", 0)
	check := func() {
		d, err := decode(data, match)
		if err != nil || d.DynamicClusters != 20_000 || len(d.Clusters) != 1 {
			b.Fatalf("decode: %d clusters, %d matched, %v", d.DynamicClusters, len(d.Clusters), err)
		}
	}
	peak := peakHeap(check)
	// The machine is shared: CPU time says more than wall time.
	cpu := cpuTime()
	check()
	cpu = cpuTime() - cpu
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		check()
	}
	b.ReportMetric(float64(len(data))/(1<<20), "file-MB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(peak)/float64(len(data)), "peak/file")
	b.ReportMetric(float64(cpu.Milliseconds()), "cpu-ms/decode")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// go test -run XXX -bench ConfigDump -benchtime 3x ./probes/parse/envoy
func BenchmarkConfigDumpStream(b *testing.B) {
	benchmarkDecoder(b, func(data []byte, match func(string) bool) (ConfigDump, error) {
		return StreamConfigDump(bytes.NewReader(data), match)
	})
}

func BenchmarkConfigDumpTolerantProtojson(b *testing.B) {
	benchmarkDecoder(b, DecodeConfigDump)
}
