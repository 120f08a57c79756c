package envoy

import (
	"bytes"
	"testing"
)

// The generated document decodes, with one cluster per generated name.
func TestGenerateConfigDumpMatchesBenchDump(t *testing.T) {
	got, err := GenerateConfigDump("testdata", 300, 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	d, err := StreamConfigDump(bytes.NewReader(got), TargetMatcher("svc-123.ns-26.svc.cluster.local", 0))
	if err != nil || d.DynamicClusters != 300 || len(d.Clusters) != 1 {
		t.Fatalf("decode: %d clusters, %d matched, %v", d.DynamicClusters, len(d.Clusters), err)
	}
	if _, err := GenerateConfigDump(t.TempDir(), 10, 1<<10); err == nil {
		t.Error("a directory without fixtures generated a dump")
	}
}
