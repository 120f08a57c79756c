package worldgen

import (
	"bytes"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// sampleSeed and sampleWorlds are the run make test's differential takes
// (TestDifferentialWorlds' defaults), in its batches of 50.
const (
	sampleSeed   = 24
	sampleWorlds = 300
	sampleBatch  = 50
)

func sample(t *testing.T) []*Batch {
	t.Helper()
	var out []*Batch
	for first, b := 0, 0; first < sampleWorlds; first, b = first+sampleBatch, b+1 {
		out = append(out, NewBatch(sampleSeed, b, first, min(sampleBatch, sampleWorlds-first)))
	}
	return out
}

// A world is a function of its seed and index: the differential's failures
// can be made again, one world at a time, and a world that differed kept
// as a model case.
func TestGenerateIsReproducible(t *testing.T) {
	for _, i := range []int{0, 7, 123, 4999} {
		a, err := Generate(sampleSeed, i).YAML()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Generate(sampleSeed, i).YAML()
		if !bytes.Equal(a, b) {
			t.Errorf("world %d of seed %d differs between two generations", i, sampleSeed)
		}
		c, _ := Generate(sampleSeed+1, i).YAML()
		if bytes.Equal(a, c) {
			t.Errorf("world %d is the same under seeds %d and %d", i, sampleSeed, sampleSeed+1)
		}
	}
}

// Worlds share one API server and one istiod: no two worlds of a run may
// share a namespace, a node, a pod address or a host, and every name is
// the world's own.
func TestWorldsOfARunAreDisjoint(t *testing.T) {
	owner := map[string]string{}
	claim := func(what, world string) {
		if w, ok := owner[what]; ok && w != world {
			t.Errorf("%s is both %s's and %s's", what, w, world)
		}
		owner[what] = world
	}
	for _, b := range sample(t) {
		for _, w := range b.Worlds {
			for _, o := range w.Objects {
				m, err := meta.Accessor(o)
				if err != nil {
					t.Fatal(err)
				}
				switch o := o.(type) {
				case *corev1.Namespace:
					claim("namespace "+o.Name, w.Prefix)
				case *corev1.Node:
					claim("node "+o.Name, w.Prefix)
				case *corev1.Pod:
					claim("pod IP "+o.Status.PodIP, w.Prefix)
				}
				if ns := m.GetNamespace(); ns != "" && owner["namespace "+ns] != w.Prefix {
					t.Errorf("%T %s/%s of world %s is in a namespace the world does not own", o, ns, m.GetName(), w.Prefix)
				}
			}
		}
	}
}

// Every generated world is valid input as a model case file: it decodes
// strictly (the form of probes/mesh/testdata/model), and the config model
// gives a view for every caller and Service port of it.
func TestWorldsAreModelInput(t *testing.T) {
	for _, b := range sample(t)[:2] {
		mc := mesh.MeshConfig{}
		if b.Mesh != "" {
			raw, err := mesh.ParseMeshConfig(b.Mesh)
			if err != nil {
				t.Fatal(err)
			}
			mc = mesh.MeshConfig{Raw: raw, Found: true}
		}
		for _, w := range b.Worlds {
			data, err := YAML(append(append([]runtime.Object(nil), b.Root...), w.Objects...))
			if err != nil {
				t.Fatal(err)
			}
			objs, err := manifests.Decode(w.Prefix+".yaml", data, true)
			if err != nil {
				t.Fatalf("world %s does not decode: %v", w.Prefix, err)
			}
			if len(objs) != len(b.Root)+len(w.Objects) {
				t.Fatalf("world %s: %d objects decoded of %d", w.Prefix, len(objs), len(b.Root)+len(w.Objects))
			}
			c := mesh.ConfigFromObjects(objs, mc, RootNamespace)
			for _, p := range w.Pods() {
				for _, tg := range w.Targets() {
					if _, err := c.ViewFor(mesh.CallerFromPod(p), tg.Host, tg.Port); err != nil {
						t.Errorf("world %s: caller %s/%s → %s:%d: %v", w.Prefix, p.Namespace, p.Name, tg.Host, tg.Port, err)
					}
				}
			}
		}
	}
}

// The sample make test runs holds every shape the generator knows, so the
// differential in CI covers them all.
func TestSampleCoversEveryShape(t *testing.T) {
	seen := map[string]int{}
	for _, b := range sample(t) {
		for s, n := range b.Shapes {
			seen[s] += n
		}
	}
	for _, s := range Shapes {
		if seen[s] == 0 {
			t.Errorf("no world or batch of the sample (seed %d, %d worlds) holds %q", sampleSeed, sampleWorlds, s)
		}
	}
	if len(seen) != len(Shapes) {
		t.Errorf("shapes counted %d, known %d: a shape is not listed in Shapes", len(seen), len(Shapes))
	}
	t.Log(fmt.Sprint(seen))
}
