package runbook_test

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/runbook"
)

// realCatalogue is what check and the TUI validate against.
func realCatalogue() runbook.Catalogue {
	return runbook.CatalogueOf(probes.All(), assets.Causes)
}

func load503(t *testing.T) *runbook.Graph {
	t.Helper()
	g, err := runbook.LoadFS(assets.FS, assets.Runbook503, realCatalogue())
	if err != nil {
		t.Fatalf("load %s:\n%v", assets.Runbook503, err)
	}
	return g
}

// Every embedded runbook must load and validate against the real probes and
// the cause catalogue: a renamed fact or probe fails here, not at 3 a.m.
func TestEmbeddedRunbooksValidate(t *testing.T) {
	files, err := fs.Glob(assets.FS, assets.RunbooksDir+"/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no embedded runbooks (%v)", err)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			if _, err := runbook.LoadFS(assets.FS, f, realCatalogue()); err != nil {
				t.Fatalf("%v", err)
			}
		})
	}
}

func TestRunbook503CoversTheCatalogue(t *testing.T) {
	g := load503(t)
	for _, id := range assets.Causes {
		c, ok := g.Cause(id)
		if !ok {
			t.Fatalf("cause %s missing", id)
		}
		if len(c.Fixes) == 0 || len(c.Verify) == 0 {
			t.Errorf("cause %s needs fixes and verification", id)
		}
	}
	var opts []string
	for _, o := range g.Start.Options {
		opts = append(opts, o.ID)
	}
	if want := []string{"callers-see-503", "startup-connection-refused", "rollout-503", "gateway-404"}; strings.Join(opts, " ") != strings.Join(want, " ") {
		t.Errorf("start options = %v, want the four symptoms %v (a gateway's 404 NR is one)", opts, want)
	}
	// The first ten minutes: these probes are all on the callers-see-503 path.
	for _, p := range []string{"envoy-clusters", "access-log", "envoy-listeners", "endpoints", "envoy-config"} {
		if !strings.Contains(strings.Join(g.Probes(), " "), p) {
			t.Errorf("runbook does not run %s", p)
		}
	}
}
