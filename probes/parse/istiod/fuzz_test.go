package istiod

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseDebug: istiod's answer is whatever the monitoring port sent (a
// newer istiod's shape, a proxy's error page): every parser returns a
// result or an error, never panics. Seeded with the lab's samples.
func FuzzParseDebug(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"h":{"n":{"Shards":{"k":[{"Address":"x","Locality":null}]},"ServiceAccounts":null}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParseClusterz(data)
		_, _ = ParseNetworkz(data)
		_, _ = ParseEndpointShardz(data, nil)
	})
}
