package manifests_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
)

// FuzzDecode feeds `kubectl get -o yaml|json` documents to the manifests
// reader, strict and lenient: whatever the bytes, it returns objects or an
// error, never panics, and never a nil object. Seeded from testdata and the
// embedded scenarios' manifests.
func FuzzDecode(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.yaml")
	scenarios, _ := filepath.Glob("../../../assets/scenarios/*/manifests/*.yaml")
	for _, name := range append(seeds, scenarios...) {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"b"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, strict := range []bool{false, true} {
			objs, _ := manifests.Decode("fuzz.yaml", data, strict)
			for i, o := range objs {
				if o == nil {
					t.Fatalf("object %d of %d is nil (strict %v)", i, len(objs), strict)
				}
			}
		}
	})
}
