package probes_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
)

// TestEveryRunbookTermCanHold flags a runbook term no probe makes true: a
// fact every rule or verification reads must take a value other than its
// zero value (0, false, empty) on some real input, or the term is dead. A
// dead term is worse than none: `log_flag_nr == 0` as a verification passes
// whatever happens, and `log_flag_uc + log_flag_dc > 0` silently means less
// than it says. (Counting flags only on 5xx entries made log_flag_nr and
// log_flag_dc such terms: NR comes with 404, DC with 0.)
//
// The inputs are the realworld samples through the probes that read Envoy
// and Istio output, and every embedded scenario through every probe. The
// facts of those probes must all be live: real output of every shape is
// what they read, and the samples hold it. The facts of the probes that
// read Kubernetes objects depend only on what the scenarios chose to show;
// the ones no scenario makes true are logged, as a hint for the next
// scenario, not failed.
func TestEveryRunbookTermCanHold(t *testing.T) {
	graph, err := runbook.LoadFS(assets.FS, assets.Runbook503, runbook.CatalogueOf(probes.All(), assets.Causes))
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	observe := func(f probes.Facts) {
		for k, v := range f {
			if !isZero(v) {
				live[k] = true
			}
		}
	}
	for _, f := range probes.RealworldFacts(t) {
		observe(f)
	}
	for _, f := range scenarioFacts(t) {
		observe(f)
	}

	// Where each fact is read.
	readBy := map[string][]string{}
	for _, s := range graph.Steps {
		for i, b := range s.Branches {
			for _, f := range b.Facts() {
				readBy[f] = append(readBy[f], fmt.Sprintf("step %s rule %d (%s)", s.ID, i+1, b.When))
			}
		}
	}
	for _, c := range graph.Causes {
		for i, v := range c.Verify {
			for _, f := range v.Facts() {
				readBy[f] = append(readBy[f], fmt.Sprintf("cause %s verify %d (%s)", c.ID, i+1, v.Expect))
			}
		}
	}
	if len(readBy) < 20 {
		t.Fatalf("only %d facts read by the runbook: the rules were not found", len(readBy))
	}
	var dead, unexercised []string
	for f, where := range readBy {
		if live[f] {
			continue
		}
		line := fmt.Sprintf("%s (%s), read by:\n    %s", f, graph.ProbeOf(f), strings.Join(where, "\n    "))
		if envoyOutputProbes[graph.ProbeOf(f)] {
			dead = append(dead, line)
		} else {
			unexercised = append(unexercised, line)
		}
	}
	sort.Strings(dead)
	sort.Strings(unexercised)
	for _, d := range dead {
		t.Errorf("no real Envoy or Istio output makes this fact anything but its zero value: %s", d)
	}
	for _, u := range unexercised {
		t.Logf("no embedded scenario makes this fact true: %s", u)
	}
}

// envoyOutputProbes read what the realworld samples hold: access logs,
// Envoy admin output, istiod's syncz, Prometheus text.
var envoyOutputProbes = map[string]bool{
	"access-log": true, "envoy-clusters": true, "envoy-config": true, "envoy-listeners": true, "proxy-status": true, "metrics": true,
}

// scenarioFacts runs every probe on every embedded scenario.
func scenarioFacts(t *testing.T) []probes.Facts {
	t.Helper()
	names, err := recorded.Names(assets.FS)
	if err != nil {
		t.Fatal(err)
	}
	var out []probes.Facts
	for _, name := range names {
		s, err := recorded.Load(assets.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := recorded.NewCluster(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range probes.All() {
			if _, ok := p.(probes.MetricsProbe); ok {
				// The recording answers the second read with the later
				// sample; no need to wait between them.
				p = probes.MetricsProbe{Interval: time.Millisecond}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			r := probes.Run(ctx, p, c, s.Target)
			cancel()
			out = append(out, r.Facts)
		}
	}
	return out
}

func isZero(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice || rv.Kind() == reflect.Map {
		return rv.Len() == 0
	}
	return rv.IsZero()
}
