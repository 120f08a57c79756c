package istioconfig

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/readgroup"
)

// Rules are the Istio rules the config model reads, as istiod reads
// them: every namespace's. Each kind is one list across all namespaces,
// the five at once (one round trip; the read cache makes it once per
// triage however many probes ask). Where a role refuses a kind's
// all-namespaces list (the namespaced Role), that kind is read namespace
// by namespace in the namespaces the triage needs, and the set is partial:
// the model then concludes nothing from a rule's absence.
type Rules struct {
	DestinationRules    []*networkingv1.DestinationRule
	VirtualServices     []*networkingv1.VirtualService
	PeerAuthentications []*securityv1.PeerAuthentication
	Sidecars            []*networkingv1.Sidecar
	ServiceEntries      []*networkingv1.ServiceEntry
	// refused are the kinds whose all-namespaces list was refused, with
	// the refusal; read are then the namespaces read for them.
	refused map[string]error
	read    map[string]bool
	// Unknown: namespaces whose rules could not be read at all (optional
	// ones: the root namespace outside the on-call's role).
	Unknown  []string
	reported int // Unknown[:reported] are in the model already
}

// ruleKind is one kind of rule: how to list it and where to put it.
type ruleKind struct {
	name string // the resource, as RBAC and the API name it
	kind string // as errors name it
	list func(ctx context.Context, c cluster.Cluster, ns string, r *Rules) error
}

var ruleKinds = []ruleKind{
	{"destinationrules", "DestinationRules", func(ctx context.Context, c cluster.Cluster, ns string, r *Rules) error {
		l, err := c.DestinationRules(ctx, ns)
		r.DestinationRules = append(r.DestinationRules, l...)
		return err
	}},
	{"virtualservices", "VirtualServices", func(ctx context.Context, c cluster.Cluster, ns string, r *Rules) error {
		l, err := c.VirtualServices(ctx, ns)
		r.VirtualServices = append(r.VirtualServices, l...)
		return err
	}},
	{"peerauthentications", "PeerAuthentications", func(ctx context.Context, c cluster.Cluster, ns string, r *Rules) error {
		l, err := c.PeerAuthentications(ctx, ns)
		r.PeerAuthentications = append(r.PeerAuthentications, l...)
		return err
	}},
	{"sidecars", "Sidecars", func(ctx context.Context, c cluster.Cluster, ns string, r *Rules) error {
		l, err := c.Sidecars(ctx, ns)
		r.Sidecars = append(r.Sidecars, l...)
		return err
	}},
	{"serviceentries", "ServiceEntries", func(ctx context.Context, c cluster.Cluster, ns string, r *Rules) error {
		l, err := c.ServiceEntries(ctx, ns)
		r.ServiceEntries = append(r.ServiceEntries, l...)
		return err
	}},
}

// ReadRules lists every kind across all namespaces at once; a kind
// whose list is refused is read in namespaces instead (see More).
// optional names the namespaces whose rules may stay unknown; what and err
// are the first read that fails the probe.
func ReadRules(ctx context.Context, c cluster.Cluster, namespaces []string, optional func(ns string) bool) (r *Rules, what string, err error) {
	r = &Rules{refused: map[string]error{}, read: map[string]bool{}}
	parts := make([]Rules, len(ruleKinds))
	errs := make([]error, len(ruleKinds))
	var g readgroup.Group
	for i, k := range ruleKinds {
		g.Go(func() { errs[i] = k.list(ctx, c, metav1.NamespaceAll, &parts[i]) })
	}
	g.Wait()
	for i, k := range ruleKinds {
		switch err := errs[i]; {
		case err == nil:
			r.merge(&parts[i])
		case apierrors.IsForbidden(err):
			r.refused[k.name] = err
		default:
			return r, "list " + k.kind + " in all namespaces", err
		}
	}
	if what, err := r.More(ctx, c, namespaces, optional); err != nil {
		return r, what, err
	}
	return r, "", nil
}

func (r *Rules) merge(o *Rules) {
	r.DestinationRules, r.VirtualServices, r.PeerAuthentications = append(r.DestinationRules, o.DestinationRules...), append(r.VirtualServices, o.VirtualServices...), append(r.PeerAuthentications, o.PeerAuthentications...)
	r.Sidecars, r.ServiceEntries = append(r.Sidecars, o.Sidecars...), append(r.ServiceEntries, o.ServiceEntries...)
}

// More reads the refused kinds in namespaces not read yet, all at once.
func (r *Rules) More(ctx context.Context, c cluster.Cluster, namespaces []string, optional func(ns string) bool) (string, error) {
	if len(r.refused) == 0 {
		return "", nil
	}
	var todo []string
	for _, ns := range namespaces {
		if ns != "" && !r.read[ns] && !slices.Contains(todo, ns) {
			todo = append(todo, ns)
		}
	}
	sort.Strings(todo)
	kinds := r.refusedKinds()
	parts := make([][]Rules, len(todo))
	errs := make([][]error, len(todo))
	var g readgroup.Group
	for i, ns := range todo {
		parts[i], errs[i] = make([]Rules, len(kinds)), make([]error, len(kinds))
		for j, k := range kinds {
			g.Go(func() { errs[i][j] = k.list(ctx, c, ns, &parts[i][j]) })
		}
	}
	g.Wait()
	for i, ns := range todo {
		failed := ""
		var failErr error
		for j, k := range kinds {
			if errs[i][j] != nil && failErr == nil {
				failed, failErr = "list "+k.kind+" in "+ns, errs[i][j]
			}
		}
		if failErr != nil {
			// A kind that does not exist fails the probe wherever it is
			// read; the other namespaces' refusals only if they matter.
			if !optional(ns) || apierrors.IsNotFound(failErr) && cluster.IsMissingKind(failErr) {
				return failed, failErr
			}
			r.Unknown = append(r.Unknown, cluster.AccessProblem(failed, failErr)+": its rules are not judged")
			continue
		}
		r.read[ns] = true
		for j := range kinds {
			r.merge(&parts[i][j])
		}
	}
	return "", nil
}

func (r *Rules) refusedKinds() []ruleKind {
	var out []ruleKind
	for _, k := range ruleKinds {
		if r.refused[k.name] != nil {
			out = append(out, k)
		}
	}
	return out
}

// Partial says why the set is not istiod's whole set, "" when it is.
func (r *Rules) Partial() string {
	if len(r.refused) == 0 {
		return ""
	}
	what := "the Istio rules"
	if kinds := r.refusedKinds(); len(kinds) < len(ruleKinds) {
		var names []string
		for _, k := range kinds {
			names = append(names, k.kind)
		}
		what = "the " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s of namespaces other than %s were not read (listing them across all namespaces is refused: a namespaced role)",
		what, strings.Join(slices.Sorted(maps.Keys(r.read)), ", "))
}

// Into puts the rules in cfg, the partial set's bounds with them.
func (r *Rules) Into(cfg *mesh.Config) {
	cfg.DestinationRules, cfg.VirtualServices, cfg.PeerAuthentications = r.DestinationRules, r.VirtualServices, r.PeerAuthentications
	cfg.Sidecars, cfg.ServiceEntries = r.Sidecars, r.ServiceEntries
	cfg.Unknown = append(cfg.Unknown, r.Unknown[r.reported:]...)
	r.reported = len(r.Unknown)
	cfg.RulesRead, cfg.RulesPartial = nil, r.Partial()
	if cfg.RulesPartial != "" {
		cfg.RulesRead = map[string]bool{}
		for ns := range r.read {
			cfg.RulesRead[ns] = true
		}
	}
}

// RuleResources are the rule kinds' resources, as RBAC names them: each
// is listed across all namespaces, else in the namespaces a triage needs.
func RuleResources() []string {
	var out []string
	for _, k := range ruleKinds {
		out = append(out, k.name)
	}
	return out
}
