package triage

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster/patched"
	"github.com/meshtriage/meshtriage/probes/patch"
	"github.com/meshtriage/meshtriage/probes/remedies"
	"github.com/meshtriage/meshtriage/runbook"
)

// The prover on its own: a remedy's output (patches, a reason, a crash)
// against the world of subset-no-pods, whose VirtualService shop/orders
// sends 10% to the empty subset v2.

// fakeRemedy answers Compute with out, or panics.
type fakeRemedy struct {
	out   remedies.Output
	panic bool
}

func (fakeRemedy) Meta() remedies.Meta { return remedies.Meta{ID: "fake"} }
func (r fakeRemedy) Compute(context.Context, *remedies.Input) remedies.Output {
	if r.panic {
		panic("boom")
	}
	return r.out
}

func proverOn(t *testing.T) (*prover, runbook.ProofRequest, *remedies.Input) {
	t.Helper()
	src, err := Scenario("subset-no-pods")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Runbook()
	if err != nil {
		t.Fatal(err)
	}
	c, _ := g.Cause("dr.subset-no-pods")
	req := runbook.ProofRequest{Target: *src.Target, Cause: c.ID, Fixes: c.Fixes, Verify: c.Verify, Facts: probes.Facts{}}
	p := newProver(g, src.Cluster, 5*time.Second)
	return p, req, &remedies.Input{Cluster: src.Cluster, Target: req.Target, Cause: req.Cause}
}

// vsPatch is a JSON patch of VirtualService shop/orders.
func vsPatch(t *testing.T, ops ...patch.Op) patch.Patch {
	t.Helper()
	body, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	return patch.Patch{APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Namespace: "shop", Name: "orders", Type: patch.JSON, Patch: body}
}

func TestProverSimulatesAPatchAndSaysWhatItClears(t *testing.T) {
	p, req, in := proverOn(t)
	fix := vsPatch(t, patch.Test("/spec/http/0/route/1/destination/subset", "v2"), patch.Add("/spec/http/0/route/0/weight", 100), patch.Remove("/spec/http/0/route/1"))
	pf := p.prove(context.Background(), req, fakeRemedy{out: remedies.Output{Patches: []patch.Patch{fix}, Note: "moves it"}}, in)
	if pf.Simulation == nil || !pf.Simulation.Simulated || pf.Simulation.Summary != "simulated: clears dr.subset-no-pods, no new finding" || len(pf.Patches) != 1 || pf.Note != "moves it" {
		t.Fatalf("proved %+v (simulation %+v)", pf, pf.Simulation)
	}
}

func TestProverFindsWhatAPatchBreaks(t *testing.T) {
	p, req, in := proverOn(t)
	// Route everything to a subset no DestinationRule defines: 503 NC.
	fix := vsPatch(t, patch.Replace("/spec/http/0/route/0/destination/subset", "v3"))
	pf := p.prove(context.Background(), req, fakeRemedy{out: remedies.Output{Patches: []patch.Patch{fix}}}, in)
	if !pf.Simulation.Worse() || !strings.Contains(pf.Simulation.Summary, "new finding vs.subset-undefined") {
		t.Errorf("a patch to an undefined subset: %+v", pf.Simulation)
	}
}

func TestProverWithholdsAPatchThatDoesNotApply(t *testing.T) {
	p, req, in := proverOn(t)
	// The object read does not hold what the patch tests for.
	fix := vsPatch(t, patch.Test("/spec/http/0/route/1/destination/subset", "canary"), patch.Remove("/spec/http/0/route/1"))
	pf := p.prove(context.Background(), req, fakeRemedy{out: remedies.Output{Patches: []patch.Patch{fix}}}, in)
	if len(pf.Patches) != 0 || pf.Simulation != nil || !strings.HasPrefix(pf.Unpatchable, "the change computed does not apply to the objects read, so it is not offered: ") {
		t.Errorf("a patch that does not apply: %+v", pf)
	}
}

func TestProverLabelsWhatItCannotSimulate(t *testing.T) {
	p, req, in := proverOn(t)
	deploy := patch.Patch{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "orders", Type: patch.Merge, Patch: []byte(`{"spec":{"replicas":3}}`)}
	unread := patch.Patch{APIVersion: "networking.istio.io/v1", Kind: "Sidecar", Namespace: "billing", Name: "default", Type: patch.Merge, Patch: []byte(`{"spec":{}}`)}
	for _, c := range []struct {
		name string
		out  remedies.Output
		why  string
	}{
		{"a kind not read", remedies.Output{Patches: []patch.Patch{deploy}}, "it patches Deployment shop/orders, a kind the triage does not read"},
		{"the remedy says so", remedies.Output{Patches: []patch.Patch{vsPatch(t, patch.Add("/spec/http/0/timeout", "5s"))}, NotSimulated: "it takes effect when the pods restart"}, "it takes effect when the pods restart"},
		{"an object no probe reads", remedies.Output{Patches: []patch.Patch{unread}}, "Sidecar billing/default was not read by the configuration probes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pf := p.prove(context.Background(), req, fakeRemedy{out: c.out}, in)
			s := pf.Simulation
			if len(pf.Patches) == 0 || s == nil || s.Simulated || !strings.Contains(s.Why, c.why) || s.Summary != "cannot be simulated: "+s.Why {
				t.Errorf("%+v (simulation %+v)", pf, s)
			}
		})
	}
}

func TestProverSaysWhyARemedyGaveNoPatch(t *testing.T) {
	p, req, in := proverOn(t)
	if pf := p.prove(context.Background(), req, fakeRemedy{panic: true}, in); pf.Unpatchable != "remedy fake crashed: boom" || pf.Patches != nil {
		t.Errorf("a crashing remedy: %+v", pf)
	}
	if pf := p.prove(context.Background(), req, fakeRemedy{out: remedies.Output{Unpatchable: "nothing to change"}}, in); pf.Unpatchable != "nothing to change" || pf.Simulation != nil {
		t.Errorf("an unpatchable remedy: %+v", pf)
	}
	req.Fixes = []runbook.Fix{{ID: "x", Remedy: "no-such-remedy"}, {ID: "y"}}
	proof := p.Prove(context.Background(), req)
	if len(proof.Fixes) != 2 || proof.Fixes[0].Unpatchable != "no remedy no-such-remedy in this build" || proof.Fixes[1].Unpatchable != "" || proof.Fixes[1].Patches != nil {
		t.Errorf("directions without a remedy in this build or at all: %+v", proof.Fixes)
	}
	if proof.Vars["SELECTOR"].Value != "app=orders" {
		t.Errorf("the proof's values: SELECTOR = %+v", proof.Vars["SELECTOR"])
	}
}

// The configuration as read is triaged once per target and facts, however
// many directions are proven on it.
func TestProverTriagesTheWorldAsReadOnce(t *testing.T) {
	p, req, in := proverOn(t)
	fix := vsPatch(t, patch.Add("/spec/http/0/timeout", "5s"))
	for i := 0; i < 3; i++ {
		p.prove(context.Background(), req, fakeRemedy{out: remedies.Output{Patches: []patch.Patch{fix}}}, in)
	}
	if len(p.baselines) != 1 {
		t.Errorf("%d baselines for one target and facts", len(p.baselines))
	}
	req.Facts = probes.Facts{"x": 1}
	p.prove(context.Background(), req, fakeRemedy{out: remedies.Output{Patches: []patch.Patch{fix}}}, in)
	if len(p.baselines) != 2 {
		t.Errorf("%d baselines after the facts changed", len(p.baselines))
	}
}

// Make before break: where a fix changes two objects, the one the other
// relies on comes first, and applying the patches one by one in that
// order never breaks anything on the way. In gateway-host-mismatch with a
// Gateway that serves only www.example.com, the host clients send
// (shop.example.com) must be admitted by the Gateway before a
// VirtualService claims it.
func TestAlignGatewayHostsIsMakeBeforeBreak(t *testing.T) {
	src, err := Scenario("gateway-host-mismatch")
	if err != nil {
		t.Fatal(err)
	}
	narrow := patch.Patch{APIVersion: "networking.istio.io/v1", Kind: "Gateway", Namespace: "istio-system", Name: "public-gateway", Type: patch.JSON,
		Patch: []byte(`[{"op":"replace","path":"/spec/servers/0/hosts","value":["shop/www.example.com"]}]`)}
	world, err := patched.New(src.Cluster, []patch.Patch{narrow}, false)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Runbook()
	if err != nil {
		t.Fatal(err)
	}
	c, _ := g.Cause("gateway.host-mismatch")
	facts := probes.Facts{"gateway_nr_hosts_unrouted": []string{"shop.example.com"}}
	req := runbook.ProofRequest{Target: *src.Target, Cause: c.ID, Fixes: c.Fixes, Verify: c.Verify, Facts: facts}
	in := &remedies.Input{Cluster: world, Target: req.Target, Cause: req.Cause, Facts: facts}
	out := remedies.ByID()["align-gateway-hosts"].Compute(context.Background(), in)
	if len(out.Patches) != 2 || out.Patches[0].Kind != "Gateway" || out.Patches[1].Kind != "VirtualService" {
		t.Fatalf("patches %+v (%s): want the Gateway's, then the VirtualService's", out.Patches, out.Unpatchable)
	}
	if !strings.Contains(string(out.Patches[0].Patch), `"shop/shop.example.com"`) || !strings.Contains(string(out.Patches[1].Patch), `"shop.example.com"`) {
		t.Errorf("patches %s, %s", out.Patches[0].Patch, out.Patches[1].Patch)
	}
	p := newProver(g, world, 5*time.Second)
	for n := 1; n <= len(out.Patches); n++ {
		pf := p.prove(context.Background(), req, fakeRemedy{out: remedies.Output{Patches: out.Patches[:n]}}, in)
		if pf.Simulation == nil || !pf.Simulation.Simulated || pf.Simulation.Worse() {
			t.Fatalf("the first %d patches: %+v (%s)", n, pf.Simulation, pf.Unpatchable)
		}
		if n == len(out.Patches) && (pf.Simulation.KeepsCause() || !strings.Contains(pf.Simulation.Summary, "clears gateway.host-mismatch")) {
			t.Errorf("all the patches: %s", pf.Simulation.Summary)
		}
	}
}
