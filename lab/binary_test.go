package lab

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A cached binary is taken as it is: no build, whatever the tool.
func TestCachedToolBuildTakesTheCachedBinary(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(EnvCacheDir, cache)
	cached := filepath.Join(cache, "krew-"+KrewVersion)
	if err := os.WriteFile(cached, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := KrewBinary(context.Background())
	if err != nil || got != cached {
		t.Fatalf("KrewBinary = %q, %v; want the cached %s", got, err, cached)
	}
}

// A build that fails says which tool, leaves no binary behind to be taken
// for a good one next time, and two callers at once both get the failure
// (the second waits for the first's lock, then tries itself).
func TestCachedToolBuildFailureLeavesNothingCached(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(EnvCacheDir, cache)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = cachedToolBuild(context.Background(), "no-such-tool", "no-such-tool-v1", "-s -w")
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "build no-such-tool-v1 (lab/tools/no-such-tool)") {
			t.Errorf("error %v, want one naming the tool", err)
		}
	}
	if isExecutable(filepath.Join(cache, "no-such-tool-v1")) {
		t.Error("a failed build left a binary in the cache")
	}
}
