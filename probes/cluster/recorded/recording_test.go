package recorded

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

func TestFilesIsAFileSystem(t *testing.T) {
	files := Files{
		"scenario.yaml":                    []byte("name: x\n"),
		"manifests/shop.yaml":              []byte("kind: List\n"),
		"envoy/shop/web-1/clusters.json":   []byte("{}"),
		"logs/shop/web-1/istio-proxy.log":  []byte("line\n"),
		"logs/shop/web-1/app.previous.log": []byte(""),
	}
	if err := fstest.TestFS(files, "scenario.yaml", "manifests/shop.yaml", "envoy/shop/web-1/clusters.json", "logs/shop/web-1/app.previous.log"); err != nil {
		t.Fatal(err)
	}
}

func TestTailKeepsTheLastLines(t *testing.T) {
	cases := []struct {
		in   string
		n    int64
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\nc\n", 3, "a\nb\nc\n"},
		{"a\nb\nc\n", 10, "a\nb\nc\n"},
		{"a\nb\nc\n", 1, "c\n"},
		{"", 5, ""},
	}
	for _, c := range cases {
		if got := string(tail([]byte(c.in), c.n)); got != c.want {
			t.Errorf("tail(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// The reads of one log join into the log they are parts of.
func TestMergeLogReads(t *testing.T) {
	full := cluster.LogOptions{LimitBytes: 10}
	window := cluster.LogOptions{Since: time.Minute, TailLines: 2}
	cases := []struct {
		name  string
		reads []logRead
		want  string
	}{
		{"tail inside the full read", []logRead{{window, []byte("c\nd\n")}, {full, []byte("a\nb\nc\nd\n")}}, "a\nb\nc\nd\n"},
		{"tail runs past the full read (lines written between)", []logRead{{full, []byte("a\nb\nc\n")}, {window, []byte("c\nd\ne\n")}}, "a\nb\nc\nd\ne\n"},
		{"tail after a cut full read", []logRead{{full, []byte("a\nb")}, {window, []byte("y\nz\n")}}, "a\nb\ny\nz\n"},
		{"a repeated line is not a false overlap", []logRead{{full, []byte("x\nq\nx\n")}, {window, []byte("x\nr\n")}}, "x\nq\nx\nr\n"},
		{"empty reads", []logRead{{full, nil}, {window, []byte("a\n")}}, "a\n"},
	}
	for _, c := range cases {
		if got := string(mergeLogReads(c.reads)); got != c.want {
			t.Errorf("%s: merged %q, want %q", c.name, got, c.want)
		}
	}
}

// A recording holds what was sampled: a counter path read more often than
// recorded is not answered with the last sample, which would say nothing
// was counted in between.
func TestStrictSamples(t *testing.T) {
	s, c := loadFixture(t)
	pod := cluster.PodRef{Namespace: "shop", Name: "web-1"}
	s.Envoy[pod] = map[string][]byte{"/stats/prometheus": []byte("a 1\n"), "/clusters?format=json": []byte("{}")}
	ctx := context.Background()
	for _, strict := range []bool{false, true} {
		s.StrictSamples = strict
		c.reads = nil
		if _, err := c.EnvoyAdmin(ctx, pod, "/stats/prometheus"); err != nil {
			t.Fatal(err)
		}
		_, err := c.EnvoyAdmin(ctx, pod, "/stats/prometheus")
		if strict && (!errors.Is(err, cluster.ErrNotFound) || !strings.Contains(err.Error(), "holds one sample")) {
			t.Errorf("strict: second sample = %v, want not recorded", err)
		}
		if !strict && err != nil {
			t.Errorf("scenario: second sample = %v, want the last one again", err)
		}
		// Other paths are read again from the one recording.
		for i := 0; i < 2; i++ {
			if _, err := c.EnvoyAdmin(ctx, pod, "/clusters?format=json"); err != nil {
				t.Errorf("strict %v: clusters read %d: %v", strict, i+1, err)
			}
		}
	}
}

// A replica's own syncz answers for it; a replica a recording holds no
// answer of answers nothing, as when it was recorded.
func TestIstiodReplicas(t *testing.T) {
	s, c := loadFixture(t)
	s.Istiod = map[string][]byte{}
	ctx := context.Background()
	pods, err := c.ListPods(ctx, "istio-system", map[string]string{"app": "istiod"})
	if err != nil || len(pods) == 0 {
		t.Fatalf("istiod pods: %v %v", pods, err)
	}
	name := pods[0].Name
	s.IstiodReplicas = map[string]map[string][]byte{name: {IstiodSyncz: []byte(`[]`)}}
	if b, err := c.Istiod(ctx, name, IstiodSyncz); err != nil || string(b) != "[]" {
		t.Errorf("named replica: %q %v", b, err)
	}
	if b, err := c.Istiod(ctx, "", IstiodSyncz); err != nil || string(b) != "[]" {
		t.Errorf("any replica: %q %v", b, err)
	}
	s.IstiodReplicas = map[string]map[string][]byte{"istiod-other": {IstiodSyncz: []byte(`[]`)}}
	if _, err := c.Istiod(ctx, name, IstiodSyncz); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("replica without an answer: %v, want not recorded", err)
	}
}

func TestReadArchiveRefusesEntriesLeavingIt(t *testing.T) {
	for _, name := range []string{"../etc/passwd", "a/../../b"} {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: 1, Mode: 0o600}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte("x"))
		tw.Close()
		gz.Close()
		if _, _, err := ReadArchive(&buf, nil); err == nil || !strings.Contains(err.Error(), "leaves the archive") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := ReadArchive(strings.NewReader("plain text"), nil); err == nil || !strings.Contains(err.Error(), "not a .tar.gz") {
		t.Errorf("not gzip: %v", err)
	}
}

// An input without any EndpointSlice or Endpoints (kubectl get all) says
// so, so that a Service's missing endpoints are unknown, not none.
func TestInputWithoutEndpointSlicesSaysSo(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: "shop"}}
	without, err := NewCluster(FromObjects("get-all", []runtime.Object{svc}))
	if err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "orders-1", Namespace: "shop", Labels: map[string]string{discoveryv1.LabelServiceName: "orders"}}}
	with, err := NewCluster(FromObjects("dump", []runtime.Object{svc, slice}))
	if err != nil {
		t.Fatal(err)
	}
	if !cluster.InputLacksEndpoints(cluster.NewCache(without)) || cluster.InputLacksEndpoints(with) {
		t.Error("InputLacksEndpoints: want true through the cache for an input without slices, false with one")
	}
}

// istiod's answers are recorded one file a path: syncz.json, version.txt
// and edsz/PROXY.json (the edsz read of one proxy, its query in the file
// name), at istiod/ for any replica and under istiod/POD/ for one; they
// load as the paths the probes ask and are written back to the same files.
func TestIstiodLayoutRoundTrips(t *testing.T) {
	fsys := fixtureFS(fixtureManifests)
	fsys["scenarios/tiny/istiod/version.txt"] = &fstest.MapFile{Data: []byte("1.24.2-5f8a1e3c-Clean")}
	fsys["scenarios/tiny/istiod/edsz/web-1.shop.json"] = &fstest.MapFile{Data: []byte(`{"configs":[]}`)}
	fsys["scenarios/tiny/istiod/istiod-1/syncz.json"] = &fstest.MapFile{Data: []byte(`[]`)}
	fsys["scenarios/tiny/istiod/istiod-1/edsz/web-1.shop.json"] = &fstest.MapFile{Data: []byte(`{"configs":[{}]}`)}
	s, err := Load(fsys, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	edsz := IstiodEdszPath("web-1.shop")
	if edsz != "/debug/edsz?proxyID=web-1.shop" {
		t.Errorf("edsz path %q", edsz)
	}
	if string(s.Istiod[IstiodVersion]) != "1.24.2-5f8a1e3c-Clean" || string(s.Istiod[edsz]) != `{"configs":[]}` || len(s.Istiod) != 3 {
		t.Errorf("any replica: %q", s.Istiod)
	}
	if r := s.IstiodReplicas["istiod-1"]; len(s.IstiodReplicas) != 1 || string(r[IstiodSyncz]) != "[]" || string(r[edsz]) != `{"configs":[{}]}` || len(r) != 2 {
		t.Errorf("replicas: %q", s.IstiodReplicas)
	}
	files, err := s.Files(func(v string) string { return v })
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"istiod/syncz.json", "istiod/version.txt", "istiod/edsz/web-1.shop.json", "istiod/istiod-1/syncz.json", "istiod/istiod-1/edsz/web-1.shop.json"} {
		if _, ok := files[name]; !ok {
			t.Errorf("written files lack %s: %v", name, sortedKeys(map[string]bool(filesSet(files))))
		}
	}
	// A path the layout has no file for, or one that would escape it, is
	// not written.
	for _, p := range []string{"/debug/edsz", "/debug/edsz?proxyID=", "/debug/edsz?proxyID=a/../b", "/debug/configz"} {
		if f, ok := istiodFile(p); ok {
			t.Errorf("%s recorded as %s", p, f)
		}
	}
	fsys["scenarios/tiny/istiod/edsz/deeper/x.json"] = &fstest.MapFile{Data: []byte(`{}`)}
	if _, err := Load(fsys, "tiny"); err == nil || !strings.Contains(err.Error(), "not a recorded istiod response") {
		t.Errorf("a folder under edsz/: %v", err)
	}
}

func filesSet(f Files) map[string]bool {
	out := map[string]bool{}
	for k := range f {
		out[k] = true
	}
	return out
}
