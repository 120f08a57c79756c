package envoy

import (
	"bytes"
	"testing"
)

// The exported generator writes the document the package's own benchmark
// decodes: same size, same cluster names, byte for byte.
func TestGenerateConfigDumpMatchesBenchDump(t *testing.T) {
	got, err := GenerateConfigDump("testdata", 300, 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	want, err := generateDump(300, 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("generated %d bytes, the benchmark's generator %d", len(got), len(want))
	}
	d, err := StreamConfigDump(bytes.NewReader(got), TargetMatcher("svc-123.ns-26.svc.cluster.local", 0))
	if err != nil || d.DynamicClusters != 300 || len(d.Clusters) != 1 {
		t.Fatalf("decode: %d clusters, %d matched, %v", d.DynamicClusters, len(d.Clusters), err)
	}
	if _, err := GenerateConfigDump(t.TempDir(), 10, 1<<10); err == nil {
		t.Error("a directory without fixtures generated a dump")
	}
}
