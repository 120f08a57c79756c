//go:build integration

package lab

import (
	"context"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"
)

// The generative differential (issue 24): generated worlds, batch by batch
// in a lab of their own with a real istiod, every pod with a sidecar
// compared as a caller of its world's Services and as a server with what
// the config model says istiod gives it. make test runs a fixed-seed
// sample; make differential N=10000 SEED=... a larger run
// (MESHLAB_DIFFERENTIAL_N, _SEED, _BATCH, _PARALLEL; _OUT names a directory
// that receives each world that differed, as a manifest).
func TestDifferentialWorlds(t *testing.T) {
	n := envInt(t, "MESHLAB_DIFFERENTIAL_N", 300)
	seed := envInt(t, "MESHLAB_DIFFERENTIAL_SEED", 24)
	l := StartT(t, Options{})
	i := StartIstiodT(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), 24*time.Hour)
	defer cancel()
	rep, err := RunDifferential(ctx, l, i, DifferentialOptions{
		Seed:      uint64(seed),
		Worlds:    n,
		BatchSize: envInt(t, "MESHLAB_DIFFERENTIAL_BATCH", 50),
		Parallel:  envInt(t, "MESHLAB_DIFFERENTIAL_PARALLEL", 16),
		OutDir:    os.Getenv("MESHLAB_DIFFERENTIAL_OUT"),
		Logf:      t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d: %d worlds in %d batches, %d callers: %d clusters, %d endpoints, %d routes, %d inbound ports compared; %d worlds differ, %d differences; %s (mesh %s, apply %s, settle %s, compare %s, delete %s)",
		rep.Seed, rep.Worlds, rep.Batches, rep.Callers, rep.Clusters, rep.Endpoints, rep.Routes, rep.Inbound, len(rep.Differing), rep.Diffs(),
		rep.Total.Round(time.Second), rep.Mesh.Round(time.Second), rep.Apply.Round(time.Second), rep.Settle.Round(time.Second), rep.Compare.Round(time.Second), rep.Delete.Round(time.Second))
	shapes := make([]string, 0, len(rep.Shapes))
	for s := range rep.Shapes {
		shapes = append(shapes, s)
	}
	sort.Strings(shapes)
	for _, s := range shapes {
		t.Logf("shape %-55s %d", s, rep.Shapes[s])
	}
	if rep.Worlds != n || rep.Callers == 0 || rep.Clusters == 0 || rep.Endpoints == 0 || rep.Routes == 0 || rep.Inbound == 0 {
		t.Errorf("the run compared too little: %+v", rep)
	}
	for _, w := range rep.Differing {
		for _, d := range w.Diffs {
			t.Errorf("world %s (seed %d, batch %d): %s", w.World.Prefix, w.World.Seed, w.Batch.Index, d)
		}
	}
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a number", name, v)
	}
	return n
}
