package triage

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/patched"
	"github.com/meshtriage/meshtriage/probes/remedies"
	"github.com/meshtriage/meshtriage/runbook"
)

// prover is the session's fix prover (runbook.FixProver): each fix
// direction's remedy computes its patches from the evidence, read through
// the session's cache; the patches are applied in memory to the world the
// triage read (probes/cluster/patched over the same cache) and the
// configuration part of the triage runs again on it, as it does on the
// world unpatched: runtime reads (Envoy admin, logs, istiod) answer "not
// simulated" in both runs, so the comparison is configuration against
// configuration. Nothing is written to the cluster.
type prover struct {
	graph   *runbook.Graph
	base    cluster.Cluster
	timeout time.Duration

	mu        sync.Mutex
	baselines map[string]*baseline
}

type baseline struct {
	once sync.Once
	run  runbook.SimulatedRun
	err  error
}

func newProver(graph *runbook.Graph, base cluster.Cluster, timeout time.Duration) *prover {
	return &prover{graph: graph, base: base, timeout: timeout, baselines: map[string]*baseline{}}
}

// Prove computes the cause's directions: the remedies' patches, their
// simulation, and the values the texts and commands name.
func (p *prover) Prove(ctx context.Context, req runbook.ProofRequest) runbook.Proof {
	in := &remedies.Input{Cluster: p.base, Target: req.Target, Cause: req.Cause, Facts: req.Facts}
	proof := runbook.Proof{Vars: map[string]runbook.Var{}}
	for name, v := range remedies.Vars(ctx, in) {
		proof.Vars[name] = runbook.Var{Value: v.Value, Words: v.Words, Why: v.Why}
	}
	registry := remedies.ByID()
	for _, fix := range req.Fixes {
		var pf runbook.ProvedFix
		if fix.Remedy != "" {
			r, ok := registry[fix.Remedy]
			if !ok {
				pf.Unpatchable = "no remedy " + fix.Remedy + " in this build"
			} else {
				pf = p.prove(ctx, req, r, in)
			}
		}
		proof.Fixes = append(proof.Fixes, pf)
	}
	return proof
}

func (p *prover) prove(ctx context.Context, req runbook.ProofRequest, r remedies.Remedy, in *remedies.Input) (pf runbook.ProvedFix) {
	defer func() {
		if v := recover(); v != nil {
			pf = runbook.ProvedFix{Unpatchable: fmt.Sprintf("remedy %s crashed: %v", r.Meta().ID, v)}
		}
	}()
	out := r.Compute(ctx, in)
	pf = runbook.ProvedFix{Patches: out.Patches, Unpatchable: out.Unpatchable, Note: out.Note}
	if len(out.Patches) == 0 {
		pf.Patches = nil
		return pf
	}
	sim, applyErr := p.simulate(ctx, req, out)
	if applyErr != "" {
		return runbook.ProvedFix{Unpatchable: "the change computed does not apply to the objects read, so it is not offered: " + applyErr}
	}
	pf.Simulation = sim
	return pf
}

// simulate applies out's patches to the triaged world in memory and
// compares the configuration-only runs; applyErr is set when a patch does
// not apply to the object it was computed from.
func (p *prover) simulate(ctx context.Context, req runbook.ProofRequest, out remedies.Output) (*runbook.Simulation, string) {
	if out.NotSimulated != "" {
		return runbook.NotSimulated(out.NotSimulated), ""
	}
	for _, pt := range out.Patches {
		if !patched.Served(pt) {
			return runbook.NotSimulated("it patches " + pt.Object() + ", a kind the triage does not read"), ""
		}
	}
	before, err := p.baseline(ctx, req)
	if err != nil {
		return runbook.NotSimulated("the configuration as read could not be triaged again: " + err.Error()), ""
	}
	world, err := patched.New(p.base, out.Patches, true)
	if err != nil {
		return runbook.NotSimulated(err.Error()), ""
	}
	after, runErr := p.run(ctx, world, req.Target)
	var notRead []string
	for _, problem := range world.Problems() {
		if !strings.Contains(problem, " was not read by ") {
			return nil, problem
		}
		notRead = append(notRead, problem)
	}
	if len(notRead) > 0 {
		return runbook.NotSimulated(strings.Join(notRead, "; ")), ""
	}
	if runErr != nil {
		sim := &runbook.Simulation{Simulated: true, New: []runbook.SimulatedFinding{{Cause: "no triage", Reason: runErr.Error()}}}
		sim.Summary = "simulated: the patched configuration cannot be triaged at all (" + runErr.Error() + ")"
		return sim, ""
	}
	return runbook.Simulate(req.Cause, req.Verify, before, after, out.Expect), ""
}

// baseline is the configuration-only run of the world as read, once per
// target and facts (the facts change when the on-call re-runs a step).
func (p *prover) baseline(ctx context.Context, req runbook.ProofRequest) (runbook.SimulatedRun, error) {
	facts, _ := json.Marshal(req.Facts)
	key := req.Target.String() + "\x00" + string(facts)
	p.mu.Lock()
	b := p.baselines[key]
	if b == nil {
		b = &baseline{}
		p.baselines[key] = b
	}
	p.mu.Unlock()
	b.once.Do(func() {
		world, err := patched.New(p.base, nil, true)
		if err != nil {
			b.err = err
			return
		}
		b.run, b.err = p.run(ctx, world, req.Target)
	})
	return b.run, b.err
}

// run is the triage's unattended walk on c, without a log, a prover or
// Prometheus: what the configuration there says.
func (p *prover) run(ctx context.Context, c cluster.Cluster, t cluster.Target) (runbook.SimulatedRun, error) {
	s, err := runbook.NewSession(runbook.Config{
		Graph: p.graph, Cluster: c, Target: t, Probes: probes.ByID(), Mode: runbook.ModeAuto,
		SessionID: "simulation", ProbeTimeout: p.timeout, User: "meshtriage",
	})
	if err != nil {
		return runbook.SimulatedRun{}, err
	}
	findings, err := s.Auto(ctx)
	if err != nil {
		return runbook.SimulatedRun{}, err
	}
	return runbook.SimulatedRun{Findings: findings, Facts: s.Facts()}, nil
}
