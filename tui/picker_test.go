package tui

import (
	"context"
	"errors"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/tui/engine"
	"github.com/meshtriage/meshtriage/tui/enginetest"
	"github.com/meshtriage/meshtriage/tui/picker"
)

type catalog struct {
	namespaces    []picker.NamespaceSummary
	services      map[string][]picker.ServiceSummary
	pods          map[string][]picker.PodSummary
	namespacesErr error
}

func (c catalog) Namespaces(context.Context) ([]picker.NamespaceSummary, error) {
	return c.namespaces, c.namespacesErr
}

func (c catalog) Services(_ context.Context, ns string) ([]picker.ServiceSummary, error) {
	return c.services[ns], nil
}

func (c catalog) Pods(_ context.Context, ns string) ([]picker.PodSummary, error) {
	return c.pods[ns], nil
}

func fakeCatalog() catalog {
	return catalog{
		namespaces: []picker.NamespaceSummary{
			{Name: "istio-system", Injection: "none"},
			{Name: "payments", Injection: "revision=canary"},
			{Name: "shop", Injection: "enabled"},
		},
		services: map[string][]picker.ServiceSummary{
			"shop": {
				{Name: "productpage", Ports: []string{"9080/TCP"}, Pods: 2, WithSidecar: 2},
				{Name: "ratings", Ports: []string{"9080/TCP"}, Pods: 1, WithSidecar: 0},
				{Name: "reviews", Ports: []string{"9080/TCP"}, Pods: 3, WithSidecar: 3},
				{Name: "legacy-db", Ports: []string{"5432/TCP"}, NoSelector: true},
			},
		},
		pods: map[string][]picker.PodSummary{
			"shop": {
				{Name: "productpage-7d4f9-abcde", Ready: true, Sidecar: mesh.SidecarNative, App: "productpage"},
				{Name: "reviews-v1-5c8d7-xk2lp", Ready: true, Sidecar: mesh.SidecarClassic, App: "reviews"},
			},
		},
	}
}

// builder records the target the picker hands over.
type builder struct {
	mu      sync.Mutex
	targets []cluster.Target
	eng     *enginetest.Engine
}

func (b *builder) build(_ context.Context, t cluster.Target) (engine.Engine, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.targets = append(b.targets, t)
	s := outlierScript()
	s.Target = t
	b.eng = enginetest.New(s)
	return b.eng, nil
}

func (b *builder) built() []cluster.Target {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]cluster.Target(nil), b.targets...)
}

func startPicker(t *testing.T, c picker.Catalog, w, h int, opts Options) *harness {
	t.Helper()
	b := &builder{}
	opts.Catalog = c
	opts.NewEngine = b.build
	hs := start(t, nil, w, h, opts)
	hs.builder = b
	return hs
}

func TestPickerChoosesTarget(t *testing.T) {
	h := startPicker(t, fakeCatalog(), 80, 24, Options{})
	h.waitFor("Choose a namespace", "shop", "injection: enabled")
	// Filter to the namespace, as an on-call with 200 namespaces would.
	h.key("/")
	h.key("sho")
	// The list filters in a command of its own: the choice must wait for
	// its matches, or a loaded machine chooses from the unfiltered list.
	h.waitGone("payments")
	h.key("enter")
	h.key("enter")
	h.waitFor("Choose a service in shop", "3 pods · 3/3 with sidecar · 9080/TCP", "no selector (endpoints managed by hand)", "1 pod · 0/1 with sidecar")
	h.key("/")
	h.key("revi")
	h.waitGone("ratings")
	h.key("enter")
	h.key("enter")
	h.waitFor("Choose a source pod in shop", "(no source pod)", "sidecar native · app=productpage")
	h.key("down")
	h.key("enter")
	h.waitFor("What are the callers seeing?")
	got := h.builder.built()
	want := cluster.Target{Namespace: "shop", Service: "reviews", Source: &cluster.PodRef{Namespace: "shop", Name: "productpage-7d4f9-abcde"}}
	if len(got) != 1 || got[0].String() != want.String() {
		t.Fatalf("picker built %v, want %v", got, want)
	}
	h.waitFor("reviews.shop ← productpage-7d4f9-abcde")
}

func TestPickerWithoutSourcePod(t *testing.T) {
	h := startPicker(t, fakeCatalog(), 80, 24, Options{Namespace: "shop"})
	h.waitFor("Choose a service in shop")
	h.key("G") // last: legacy-db? the list is in catalog order
	h.key("g")
	h.key("enter")
	h.waitFor("Choose a source pod in shop")
	h.key("enter")
	h.waitFor("What are the callers seeing?")
	got := h.builder.built()
	if len(got) != 1 || got[0].Service != "productpage" || got[0].Source != nil {
		t.Fatalf("picker built %+v, want svc/productpage with no source", got)
	}
}

// An on-call without cluster-wide list on namespaces types the name.
func TestPickerNamespaceForbidden(t *testing.T) {
	c := fakeCatalog()
	c.namespacesErr = apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "",
		errors.New(`User "oncall" cannot list resource "namespaces" in API group "" at the cluster scope`))
	h := startPicker(t, c, 80, 24, Options{})
	h.waitFor("forbidden: cannot list namespaces", `User "oncall" cannot list resource`, "Type the namespace name instead")
	h.key("q") // text, not quit
	h.waitFor("namespace: q")
	h.tm.Send(backspace())
	h.key("shop")
	h.key("enter")
	h.waitFor("Choose a service in shop", "reviews")
	h.key("esc")
	h.waitFor("Type the namespace name instead")
}
