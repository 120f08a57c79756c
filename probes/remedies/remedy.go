// Package remedies computes a found cause's fix from the evidence: the
// patches of the objects the triage read that fix it, and the values a fix
// direction's commands name (the real Gateway, waypoint, Deployment and
// container). One remedy a file, as istioctl's analyzers are: each
// declares what it fixes and reads what it needs through the session's
// read cache, through the config model (callerview.Read) and the
// objects the probes read, so it sees what the triage saw. A remedy makes
// the smallest change that fixes the cause and leaves the rest of the
// object as it is; it never guesses a value it cannot read: it says, in
// Unpatchable, what it would need.
//
// Remedies compute; they do not prove. runbook/triage applies their
// patches to the triaged world in memory (probes/cluster/patched) and
// re-runs the configuration probes before a patch is shown.
package remedies

import (
	"context"
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/callerview"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// Remedy computes one fix direction's change.
type Remedy interface {
	Meta() Meta
	Compute(ctx context.Context, in *Input) Output
}

// Meta describes a remedy: the runbook names it by ID in a fix's
// `remedy:`.
type Meta struct {
	ID string
	// Causes are the causes whose fix directions use it.
	Causes []string
	// Does says what it changes, in one line.
	Does string
	// Reads lists the objects it reads beyond the config model's.
	Reads []string
}

// Input is what a remedy computes from: the session's read cache, the
// target, the cause found and the facts the triage established.
type Input struct {
	Cluster cluster.Cluster
	Target  cluster.Target
	Cause   string
	Facts   probes.Facts

	once  sync.Once
	model model
}

// model is the config model's answer for the target, read once per input.
type model struct {
	cfg    *mesh.Config
	caller mesh.Caller
	views  []*mesh.View
	err    error
}

// Model is the config model's view of the target for its caller, read
// through the session's cache (so it is what the probes judged).
func (in *Input) Model(ctx context.Context) (*mesh.Config, mesh.Caller, []*mesh.View, error) {
	in.once.Do(func() {
		in.model.cfg, in.model.caller, in.model.views, in.model.err = callerview.Read(ctx, in.Cluster, in.Target)
	})
	return in.model.cfg, in.model.caller, in.model.views, in.model.err
}

// ServiceData is the target Service with its endpoints and pods, as the
// model read them.
func (in *Input) ServiceData(ctx context.Context) (*mesh.Config, *mesh.ServiceData, error) {
	cfg, _, _, err := in.Model(ctx)
	if err != nil {
		return nil, nil, err
	}
	sd := cfg.Services[in.Target.Host()]
	if sd == nil || sd.Service == nil {
		return cfg, nil, fmt.Errorf("the model holds no Service %s", in.Target.Host())
	}
	return cfg, sd, nil
}

// Pods are the target Service's pods the model read, by name order.
func (in *Input) Pods(ctx context.Context) ([]*corev1.Pod, error) {
	_, sd, err := in.ServiceData(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(sd.Pods))
	for n := range sd.Pods {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*corev1.Pod, 0, len(names))
	for _, n := range names {
		out = append(out, sd.Pods[n])
	}
	return out, nil
}

// Output is what a remedy computed.
type Output struct {
	// Patches change the objects the triage read, in the order to apply
	// them (make-before-break: what a change relies on first).
	Patches []patch.Patch
	// Unpatchable says why there is no patch: the remedy is no change to
	// an object the triage read, or a value it would need is not in the
	// cluster.
	Unpatchable string
	// Note says what the patches do in the evidence's terms.
	Note string
	// NotSimulated says why the patches cannot be proven on the configuration
	// even though they change objects the triage read: they take effect only
	// when pods are recreated.
	NotSimulated string
	// Expect are causes the patches lead to by design until a controller
	// acts, by cause, with what they wait for.
	Expect map[string]string
}

func unpatchable(format string, args ...any) Output {
	return Output{Unpatchable: fmt.Sprintf(format, args...)}
}

// All are the remedies, sorted by ID.
func All() []Remedy {
	out := []Remedy{
		AdmitCaller{},
		AdmitHBONE{},
		AddServiceEntry{},
		AlignGatewayHosts{},
		AlignSelector{},
		AlignSubsetLabels{},
		AlignTargetPort{},
		BindToGateway{},
		// Gateway API (issue 28).
		AttachRoute{},
		DropMissingBackend{},
		ExposeGatewayPort{},
		FixBackendPort{},
		GrantReference{},
		DefineSubset{},
		DeployWaypoint{},
		DrainSettings{},
		DropClientTLS{},
		EnableInjection{},
		ExportService{},
		ExportServiceEntry{},
		FixGatewaySelector{},
		HoldApplication{},
		IngressUseWaypoint{},
		MoveCallerToAmbient{},
		NameAWaypoint{},
		PermissiveWorkload{},
		RemoveExclusion{},
		RetryOnReset{},
		ShiftWeight{},
		SidecarEgress{},
		SizePool{},
		TuneOutlier{},
		WaypointForService{},
		// Issue 29, the sidecar and the app's side.
		RewriteProbes{},
		AcceptHTTP10{},
		DeclareTCP{},
		// Issue 30, multi-cluster meshes.
		LabelRemoteNetwork{},
		ExposeEastWestPassthrough{},
		AlignNetworkLabels{},
		AlignRemoteWaypoint{},
		AddGatewayPort{},
		BindAllAddresses{},
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Meta().ID < out[j].Meta().ID })
	return out
}

// ByID indexes All.
func ByID() map[string]Remedy {
	m := map[string]Remedy{}
	for _, r := range All() {
		m[r.Meta().ID] = r
	}
	return m
}

// IDs are the remedy IDs, sorted: what a runbook's `remedy:` may name.
func IDs() []string {
	var out []string
	for _, r := range All() {
		out = append(out, r.Meta().ID)
	}
	return out
}
