// Package patched serves a cluster as it would be with patches applied: the
// objects another cluster serves, each patched in memory as it is read, and
// the objects the patches create. It is how a fix is proven before it is
// shown: the probes that judge configuration run on it unchanged, as
// `kubectl apply --dry-run` shows a result before anything changes.
//
// Reads go to the base cluster (a live one through the session's read
// cache, or a recorded one), so a simulation reads what the triage read
// and, where the patched world makes a probe look further, the same cluster
// again. Nothing is written anywhere. With ConfigOnly, the runtime reads
// (Envoy admin, container logs, istiod) answer "not simulated": they would
// show the old state, so a simulation compares configuration with
// configuration.
package patched

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingk8s "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// Cluster is a base cluster with patches applied to what it serves.
type Cluster struct {
	base       cluster.Cluster
	configOnly bool
	patches    map[objectKey][]patch.Patch
	created    map[objectKey]patch.Patch
	order      []objectKey

	mu      sync.Mutex
	applied map[objectKey]bool
	errs    map[objectKey]error
}

type objectKey struct {
	group, kind, namespace, name string
}

func keyOf(p patch.Patch) objectKey {
	return objectKey{group: p.Group(), kind: p.Kind, namespace: p.Namespace, name: p.Name}
}

func (k objectKey) String() string {
	if k.namespace == "" {
		return k.kind + " " + k.name
	}
	return k.kind + " " + k.namespace + "/" + k.name
}

// Served reports whether this package serves the kind a patch changes:
// the kinds the probes read. A patch of another kind (a Deployment) cannot
// be simulated.
func Served(p patch.Patch) bool {
	_, ok := kinds[schema.GroupKind{Group: p.Group(), Kind: p.Kind}]
	return ok
}

// kinds are the kinds served, with a new value of each Go type.
var kinds = map[schema.GroupKind]func() any{
	{Kind: "Namespace"}: func() any { return &corev1.Namespace{} },
	{Kind: "Service"}:   func() any { return &corev1.Service{} },
	{Kind: "Pod"}:       func() any { return &corev1.Pod{} },
	{Kind: "ConfigMap"}: func() any { return &corev1.ConfigMap{} },
	{Group: "networking.istio.io", Kind: "DestinationRule"}:   func() any { return &networkingv1.DestinationRule{} },
	{Group: "networking.istio.io", Kind: "VirtualService"}:    func() any { return &networkingv1.VirtualService{} },
	{Group: "networking.istio.io", Kind: "ServiceEntry"}:      func() any { return &networkingv1.ServiceEntry{} },
	{Group: "networking.istio.io", Kind: "Sidecar"}:           func() any { return &networkingv1.Sidecar{} },
	{Group: "networking.istio.io", Kind: "Gateway"}:           func() any { return &networkingv1.Gateway{} },
	{Group: "security.istio.io", Kind: "PeerAuthentication"}:  func() any { return &securityv1.PeerAuthentication{} },
	{Group: "security.istio.io", Kind: "AuthorizationPolicy"}: func() any { return &securityv1.AuthorizationPolicy{} },
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:       func() any { return &networkingk8s.NetworkPolicy{} },
	{Group: "gateway.networking.k8s.io", Kind: "Gateway"}:     func() any { return &gatewayv1.Gateway{} },
	{Group: cluster.GatewayAPIGroup, Kind: "HTTPRoute"}:       func() any { return &gatewayv1.HTTPRoute{} },
	{Group: cluster.GatewayAPIGroup, Kind: "GRPCRoute"}:       func() any { return &gatewayv1.GRPCRoute{} },
	{Group: cluster.GatewayAPIGroup, Kind: "TLSRoute"}:        func() any { return &gatewayv1.TLSRoute{} },
	{Group: cluster.GatewayAPIGroup, Kind: "TCPRoute"}:        func() any { return &gatewayv1.TCPRoute{} },
	{Group: cluster.GatewayAPIGroup, Kind: "ReferenceGrant"}:  func() any { return &gatewayv1.ReferenceGrant{} },
	{Group: cluster.GatewayAPIGroup, Kind: "GatewayClass"}:    func() any { return &gatewayv1.GatewayClass{} },
}

// New serves base with patches applied, in their order. A patch of a kind
// not served is an error: its effect could not be seen.
func New(base cluster.Cluster, patches []patch.Patch, configOnly bool) (*Cluster, error) {
	c := &Cluster{base: base, configOnly: configOnly, patches: map[objectKey][]patch.Patch{},
		created: map[objectKey]patch.Patch{}, applied: map[objectKey]bool{}, errs: map[objectKey]error{}}
	for _, p := range patches {
		if !Served(p) {
			return nil, fmt.Errorf("%s: the simulation does not serve kind %s", p.Object(), p.Kind)
		}
		k := keyOf(p)
		if p.Type == patch.Create {
			c.created[k] = p
		} else {
			c.patches[k] = append(c.patches[k], p)
		}
		c.order = append(c.order, k)
	}
	return c, nil
}

// Problems says what went wrong with the patches once the probes ran: a
// patch that did not apply to the object read, and a patch of an object
// no probe read (its effect was not seen).
func (c *Cluster) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	seen := map[objectKey]bool{}
	for _, k := range c.order {
		if seen[k] {
			continue
		}
		seen[k] = true
		switch {
		case c.errs[k] != nil:
			out = append(out, fmt.Sprintf("%s: %v", k, c.errs[k]))
		case !c.applied[k]:
			out = append(out, k.String()+" was not read by the configuration probes, so the change is not seen")
		}
	}
	sort.Strings(out)
	return out
}

// patchObject applies the patches of obj's key to obj, a typed object.
func patchObject[T any](c *Cluster, k objectKey, obj *T) (*T, error) {
	ps := c.patches[k]
	c.mu.Lock()
	if _, created := c.created[k]; created || len(ps) > 0 {
		c.applied[k] = true
	}
	c.mu.Unlock()
	if len(ps) == 0 {
		return obj, nil
	}
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	before := doc
	for _, p := range ps {
		if doc, err = patch.Apply(doc, p, new(T)); err != nil {
			c.fail(k, err)
			return nil, fmt.Errorf("simulation: %s: %w", k, err)
		}
	}
	if doc, err = bumpGeneration(before, doc); err != nil {
		c.fail(k, err)
		return nil, fmt.Errorf("simulation: %s: %w", k, err)
	}
	out := new(T)
	if err := json.Unmarshal(doc, out); err != nil {
		c.fail(k, err)
		return nil, fmt.Errorf("simulation: %s after its patches: %w", k, err)
	}
	return out, nil
}

func (c *Cluster) fail(k objectKey, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.errs[k] == nil {
		c.errs[k] = err
	}
}

// createdObject decodes the create of k, patched by later patches of k.
func createdObject[T any](c *Cluster, k objectKey) (*T, bool, error) {
	p, ok := c.created[k]
	if !ok {
		return nil, false, nil
	}
	obj := new(T)
	if err := json.Unmarshal(p.Patch, obj); err != nil {
		c.fail(k, err)
		return nil, true, fmt.Errorf("simulation: create %s: %w", k, err)
	}
	out, err := patchObject(c, k, obj)
	return out, true, err
}

// getOne reads one object through get and patches it; an object the
// patches create is served when the base has none.
func getOne[T any](c *Cluster, group, kind, ns, name string, get func() (*T, error)) (*T, error) {
	k := objectKey{group: group, kind: kind, namespace: ns, name: name}
	obj, err := get()
	if apierrors.IsNotFound(err) || errors.Is(err, cluster.ErrNotFound) {
		if made, ok, cerr := createdObject[T](c, k); ok {
			return made, cerr
		}
	}
	if err != nil {
		return nil, err
	}
	return patchObject(c, k, obj)
}

// listed patches the objects of a list read in namespace ns and adds those
// the patches create there; a list of every namespace (ns "", as the
// config model reads the Istio rules) takes those created anywhere.
func listed[T any](c *Cluster, group, kind, ns string, items []*T, meta func(*T) (string, string)) ([]*T, error) {
	out := make([]*T, 0, len(items))
	have := map[objectKey]bool{}
	for _, it := range items {
		itemNS, name := meta(it)
		k := objectKey{group: group, kind: kind, namespace: itemNS, name: name}
		have[k] = true
		p, err := patchObject(c, k, it)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	for k := range c.created {
		if k.group != group || k.kind != kind || (ns != "" && k.namespace != ns) || have[k] {
			continue
		}
		made, _, err := createdObject[T](c, k)
		if err != nil {
			return nil, err
		}
		out = append(out, made)
	}
	return out, nil
}

func (c *Cluster) Info() cluster.ClusterInfo { return c.base.Info() }

func (c *Cluster) ServerVersion(ctx context.Context) (string, error) {
	return c.base.ServerVersion(ctx)
}

func (c *Cluster) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return getOne(c, "", "Namespace", "", name, func() (*corev1.Namespace, error) { return c.base.GetNamespace(ctx, name) })
}

func (c *Cluster) GetService(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	return getOne(c, "", "Service", namespace, name, func() (*corev1.Service, error) { return c.base.GetService(ctx, namespace, name) })
}

func (c *Cluster) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return getOne(c, "", "Pod", namespace, name, func() (*corev1.Pod, error) { return c.base.GetPod(ctx, namespace, name) })
}

func (c *Cluster) ListPods(ctx context.Context, namespace string, selector map[string]string) ([]corev1.Pod, error) {
	pods, err := c.base.ListPods(ctx, namespace, selector)
	if err != nil {
		return nil, err
	}
	out := make([]corev1.Pod, 0, len(pods))
	for i := range pods {
		p, err := patchObject(c, objectKey{kind: "Pod", namespace: pods[i].Namespace, name: pods[i].Name}, &pods[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, nil
}

func (c *Cluster) EndpointSlices(ctx context.Context, namespace, service string) ([]discoveryv1.EndpointSlice, error) {
	return c.base.EndpointSlices(ctx, namespace, service)
}

func (c *Cluster) GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return getOne(c, "", "ConfigMap", namespace, name, func() (*corev1.ConfigMap, error) { return c.base.GetConfigMap(ctx, namespace, name) })
}

const (
	istioNetworking = "networking.istio.io"
	istioSecurity   = "security.istio.io"
)

func istioMeta[T interface {
	GetNamespace() string
	GetName() string
}](x T) (string, string) {
	return x.GetNamespace(), x.GetName()
}

func (c *Cluster) DestinationRules(ctx context.Context, namespace string) ([]*networkingv1.DestinationRule, error) {
	items, err := c.base.DestinationRules(ctx, namespace)
	if err != nil {
		return nil, err
	}
	return listed(c, istioNetworking, "DestinationRule", namespace, items, istioMeta[*networkingv1.DestinationRule])
}

func (c *Cluster) VirtualServices(ctx context.Context, namespace string) ([]*networkingv1.VirtualService, error) {
	items, err := c.base.VirtualServices(ctx, namespace)
	if err != nil {
		return nil, err
	}
	return listed(c, istioNetworking, "VirtualService", namespace, items, istioMeta[*networkingv1.VirtualService])
}

func (c *Cluster) ServiceEntries(ctx context.Context, namespace string) ([]*networkingv1.ServiceEntry, error) {
	items, err := c.base.ServiceEntries(ctx, namespace)
	if err != nil {
		return nil, err
	}
	return listed(c, istioNetworking, "ServiceEntry", namespace, items, istioMeta[*networkingv1.ServiceEntry])
}

func (c *Cluster) Sidecars(ctx context.Context, namespace string) ([]*networkingv1.Sidecar, error) {
	items, err := c.base.Sidecars(ctx, namespace)
	if err != nil {
		return nil, err
	}
	return listed(c, istioNetworking, "Sidecar", namespace, items, istioMeta[*networkingv1.Sidecar])
}

func (c *Cluster) PeerAuthentications(ctx context.Context, namespace string) ([]*securityv1.PeerAuthentication, error) {
	items, err := c.base.PeerAuthentications(ctx, namespace)
	if err != nil {
		return nil, err
	}
	return listed(c, istioSecurity, "PeerAuthentication", namespace, items, istioMeta[*securityv1.PeerAuthentication])
}

// Gateways are Istio's Gateways (cluster.GatewayLister).
func (c *Cluster) Gateways(ctx context.Context, namespace string) ([]*networkingv1.Gateway, error) {
	items, err := cluster.Gateways(ctx, c.base, namespace)
	if err != nil {
		return nil, err
	}
	return listed(c, istioNetworking, "Gateway", namespace, items, istioMeta[*networkingv1.Gateway])
}

// AuthorizationPolicies (cluster.AuthorizationPolicyReader).
func (c *Cluster) AuthorizationPolicies(ctx context.Context, namespace string) ([]*securityv1.AuthorizationPolicy, error) {
	items, err := cluster.AuthorizationPolicies(ctx, c.base, namespace)
	if err != nil {
		return nil, err
	}
	return listed(c, istioSecurity, "AuthorizationPolicy", namespace, items, istioMeta[*securityv1.AuthorizationPolicy])
}

// GatewayAPIGateways (cluster.GatewayReader).
func (c *Cluster) GatewayAPIGateways(ctx context.Context, namespace string) ([]*gatewayv1.Gateway, error) {
	items, err := cluster.GatewayAPIGateways(ctx, c.base, namespace)
	if err != nil {
		return nil, err
	}
	return listed(c, "gateway.networking.k8s.io", "Gateway", namespace, items, istioMeta[*gatewayv1.Gateway])
}

// NetworkPolicies (cluster.NetworkPolicyReader).
func (c *Cluster) NetworkPolicies(ctx context.Context, namespace string) ([]networkingk8s.NetworkPolicy, error) {
	items, err := cluster.NetworkPolicies(ctx, c.base, namespace)
	if err != nil {
		return nil, err
	}
	ptrs := make([]*networkingk8s.NetworkPolicy, len(items))
	for i := range items {
		ptrs[i] = &items[i]
	}
	out, err := listed(c, "networking.k8s.io", "NetworkPolicy", namespace, ptrs, istioMeta[*networkingk8s.NetworkPolicy])
	if err != nil {
		return nil, err
	}
	vals := make([]networkingk8s.NetworkPolicy, len(out))
	for i, p := range out {
		vals[i] = *p
	}
	return vals, nil
}

// GetNode (cluster.NodeGetter).
func (c *Cluster) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return cluster.GetNode(ctx, c.base, name)
}

// PodsByIP (cluster.PodIPFinder).
func (c *Cluster) PodsByIP(ctx context.Context, ip string) ([]corev1.Pod, error) {
	return cluster.PodsByIP(ctx, c.base, ip)
}

// ErrNotSimulated is what the runtime reads answer in a ConfigOnly cluster.
var ErrNotSimulated = fmt.Errorf("%w: the simulation judges configuration only", cluster.ErrNotFound)

func (c *Cluster) EnvoyAdmin(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error) {
	if c.configOnly {
		return nil, &cluster.UnreachableError{What: "Envoy admin of " + pod.String(), Err: ErrNotSimulated}
	}
	return c.base.EnvoyAdmin(ctx, pod, path)
}

func (c *Cluster) Logs(ctx context.Context, pod cluster.PodRef, opts cluster.LogOptions) ([]byte, error) {
	if c.configOnly {
		return nil, fmt.Errorf("log of %s: %w", pod, ErrNotSimulated)
	}
	return c.base.Logs(ctx, pod, opts)
}

// Netstat (cluster.SocketLister): a runtime read, not simulated.
func (c *Cluster) Netstat(ctx context.Context, pod cluster.PodRef) ([]byte, error) {
	if c.configOnly {
		return nil, fmt.Errorf("netstat of %s: %w", pod, ErrNotSimulated)
	}
	return cluster.Netstat(ctx, c.base, pod)
}

func (c *Cluster) Istiod(ctx context.Context, replica, path string) ([]byte, error) {
	if c.configOnly {
		return nil, &cluster.UnreachableError{What: "istiod", Err: ErrNotSimulated}
	}
	return c.base.Istiod(ctx, replica, path)
}

// bumpGeneration does what the API server does to an object whose spec
// changes: metadata.generation goes up by one (for kinds that keep one),
// so the status istiod wrote for the object as read reads as stale on the
// patched one, as it would until istiod writes again.
func bumpGeneration(before, after []byte) ([]byte, error) {
	var b, a struct {
		Metadata struct {
			Generation int64 `json:"generation"`
		} `json:"metadata"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(before, &b); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(after, &a); err != nil {
		return nil, err
	}
	if b.Metadata.Generation == 0 || a.Metadata.Generation != b.Metadata.Generation || bytes.Equal(b.Spec, a.Spec) {
		return after, nil
	}
	var m map[string]any
	if err := json.Unmarshal(after, &m); err != nil {
		return nil, err
	}
	m["metadata"].(map[string]any)["generation"] = b.Metadata.Generation + 1
	return json.Marshal(m)
}
