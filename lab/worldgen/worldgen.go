// Package worldgen generates cluster worlds for the config model's
// differential test against a real istiod (lab/differential_worlds.go):
// seeded, reproducible sets of Kubernetes and Istio objects that vary the
// shapes real input has, each world in namespaces of its own so that many
// share one API server and one istiod.
//
// A world is a few Services (with selectors, headless, selector-less with
// hand-made EndpointSlices, ExternalName; one to three ports of HTTP, gRPC,
// TCP and unnamed protocols, targetPorts by number, by name or unset), the
// pods behind them (classic, native or no sidecar; the injector's labels
// present or missing; ready or not; an app running as the proxy's UID),
// their EndpointSlices (with and without targetRef, addresses that do and
// do not match a pod), client pods, and Istio rules in any of the world's
// namespaces: DestinationRules (subsets with absent and empty labels, TLS
// modes at the top, port and subset level, exportTo, workload selectors),
// VirtualServices (weights across subsets, matches, mirrors, routes to
// other hosts, exportTo, gateways), Sidecars (egress hosts, outbound
// policy), PeerAuthentications (namespace, workload and port level) and
// ServiceEntries. What is global to istiod (the mesh config, the root
// namespace's rules) is a batch's: Batch.Mesh and Batch.Root.
package worldgen

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sort"
	"strings"
	"time"

	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	securityv1beta1 "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// RootNamespace is the root namespace (and istiod's) of every batch.
const RootNamespace = "istio-system"

// World is one generated cluster world.
type World struct {
	// Index is the world's number in its run: its namespaces, node names
	// and addresses derive from it, so worlds of one run never clash.
	Index int
	// Seed is the run's seed; Generate(Seed, Index) makes the world again.
	Seed uint64
	// Prefix starts the name of every namespace and node of the world.
	Prefix     string
	Namespaces []string
	Objects    []runtime.Object
	// Shapes names the input shapes the world holds (see the Shape
	// constants), for the coverage of a run.
	Shapes map[string]int
}

// Target is a Service port a caller's view is taken of.
type Target struct {
	Host string
	Port int32
}

// Pods are the world's pods.
func (w *World) Pods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range w.Objects {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	return out
}

// Targets are every port of every Service of the world.
func (w *World) Targets() []Target {
	var out []Target
	for _, o := range w.Objects {
		if s, ok := o.(*corev1.Service); ok {
			for _, p := range s.Spec.Ports {
				out = append(out, Target{Host: s.Name + "." + s.Namespace + ".svc.cluster.local", Port: p.Port})
			}
		}
	}
	return out
}

// Batch is worlds that share one istiod, with the mesh-wide settings they
// all get: the mesh config and the root namespace's rules.
type Batch struct {
	Index int
	// Mesh is the mesh config YAML (the ConfigMap istio-system/istio's
	// "mesh" key), "" for none.
	Mesh string
	// Root are the root namespace's rules of the batch.
	Root   []runtime.Object
	Worlds []*World
	Shapes map[string]int
}

// Input shapes a world or batch can hold.
const (
	ShapeSliceWithoutTargetRef  = "endpointslice endpoint without targetRef"
	ShapeAddressWithoutPod      = "endpoint address no pod has"
	ShapeAddressOfOtherPod      = "endpoint address of a pod the Service does not select"
	ShapeTLSModeMissing         = "sidecar pod without the tlsMode label"
	ShapeTLSModeWithoutSidecar  = "tlsMode label on a pod without sidecar"
	ShapeRevisionLabel          = "istio.io/rev label"
	ShapeCanonicalLabels        = "service.istio.io/canonical-* labels"
	ShapeWorkloadNameLabel      = "service.istio.io/workload-name label"
	ShapeNativeSidecar          = "native sidecar"
	ShapeClassicSidecar         = "classic sidecar"
	ShapeNoSidecar              = "pod without sidecar"
	ShapePodNotReady            = "pod not ready"
	ShapeProxyUID               = "app container running as UID 1337"
	ShapeSubsetLabelAbsent      = "subset label the pods lack"
	ShapeSubsetLabelEmpty       = "subset label with an empty value"
	ShapeExternalName           = "ExternalName Service"
	ShapeHeadless               = "headless Service"
	ShapeSelectorless           = "selector-less Service"
	ShapeMultiPort              = "multi-port Service"
	ShapeNamedTargetPort        = "targetPort by name"
	ShapeUnnamedPort            = "port without a name (sniffed)"
	ShapeTCPPort                = "TCP port"
	ShapeAppProtocol            = "appProtocol"
	ShapeServiceExportTo        = "Service exportTo annotation"
	ShapeRuleExportTo           = "rule exportTo field"
	ShapeRuleOtherNamespace     = "rule in a namespace neither the caller's nor the Service's"
	ShapeSidecarEgress          = "Sidecar egress hosts"
	ShapeSidecarRegistryOnly    = "Sidecar REGISTRY_ONLY"
	ShapeSidecarSelector        = "Sidecar with workloadSelector"
	ShapePeerAuthNamespace      = "namespace PeerAuthentication"
	ShapePeerAuthWorkload       = "workload PeerAuthentication"
	ShapePeerAuthPort           = "port-level PeerAuthentication"
	ShapeDRTLS                  = "DestinationRule tls mode"
	ShapeDRPortTLS              = "DestinationRule port-level settings"
	ShapeDRSubsetTLS            = "DestinationRule subset traffic policy"
	ShapeDRSelector             = "DestinationRule workloadSelector"
	ShapeDRWildcard             = "DestinationRule wildcard host"
	ShapeVSWeights              = "VirtualService weights across subsets"
	ShapeVSMatch                = "VirtualService match"
	ShapeVSSourceLabels         = "VirtualService match on sourceLabels"
	ShapeVSMirror               = "VirtualService mirror"
	ShapeVSOtherHost            = "VirtualService route to another host"
	ShapeVSGateways             = "VirtualService gateways"
	ShapeVSTCP                  = "VirtualService tcp route"
	ShapeServiceEntry           = "ServiceEntry"
	ShapeMeshConfig             = "mesh config"
	ShapeMeshAutoMTLSOff        = "mesh enableAutoMtls false"
	ShapeMeshRegistryOnly       = "mesh REGISTRY_ONLY"
	ShapeMeshDefaultExportTo    = "mesh default exportTo"
	ShapeRootPeerAuth           = "mesh-wide PeerAuthentication"
	ShapeRootDestinationRule    = "root-namespace DestinationRule"
	ShapeRootSidecar            = "root-namespace Sidecar"
	ShapeNodeLocality           = "node with locality labels"
	ShapeTerminatingEndpoint    = "terminating endpoint"
	ShapeReplicaSetOwner        = "pod owned by a ReplicaSet"
	ShapeEndpointNotReadyTarget = "not-ready endpoint of a ready pod"
	ShapeInternalTrafficLocal   = "Service internalTrafficPolicy Local"
	ShapeSecondDestinationRule  = "second DestinationRule for a host"
	ShapeSecondVirtualService   = "second VirtualService for a host"
)

// Shapes are every input shape the generator draws, for a run to show it
// covered them.
var Shapes = []string{
	ShapeSliceWithoutTargetRef,
	ShapeAddressWithoutPod,
	ShapeAddressOfOtherPod,
	ShapeTLSModeMissing,
	ShapeTLSModeWithoutSidecar,
	ShapeRevisionLabel,
	ShapeCanonicalLabels,
	ShapeWorkloadNameLabel,
	ShapeNativeSidecar,
	ShapeClassicSidecar,
	ShapeNoSidecar,
	ShapePodNotReady,
	ShapeProxyUID,
	ShapeSubsetLabelAbsent,
	ShapeSubsetLabelEmpty,
	ShapeExternalName,
	ShapeHeadless,
	ShapeSelectorless,
	ShapeMultiPort,
	ShapeNamedTargetPort,
	ShapeUnnamedPort,
	ShapeTCPPort,
	ShapeAppProtocol,
	ShapeServiceExportTo,
	ShapeRuleExportTo,
	ShapeRuleOtherNamespace,
	ShapeSidecarEgress,
	ShapeSidecarRegistryOnly,
	ShapeSidecarSelector,
	ShapePeerAuthNamespace,
	ShapePeerAuthWorkload,
	ShapePeerAuthPort,
	ShapeDRTLS,
	ShapeDRPortTLS,
	ShapeDRSubsetTLS,
	ShapeDRSelector,
	ShapeDRWildcard,
	ShapeVSWeights,
	ShapeVSMatch,
	ShapeVSSourceLabels,
	ShapeVSMirror,
	ShapeVSOtherHost,
	ShapeVSGateways,
	ShapeVSTCP,
	ShapeServiceEntry,
	ShapeMeshConfig,
	ShapeMeshAutoMTLSOff,
	ShapeMeshRegistryOnly,
	ShapeMeshDefaultExportTo,
	ShapeRootPeerAuth,
	ShapeRootDestinationRule,
	ShapeRootSidecar,
	ShapeNodeLocality,
	ShapeTerminatingEndpoint,
	ShapeReplicaSetOwner,
	ShapeEndpointNotReadyTarget,
	ShapeInternalTrafficLocal,
	ShapeSecondDestinationRule,
	ShapeSecondVirtualService,
}

// NewBatch makes batch number index of a run: worlds first, first+1, ...
// first+n-1, and the batch's mesh-wide settings. Every sixth batch (0, 6,
// ...) has none, Istio's defaults; batches 1 to 5 of every six each stress
// one group of settings (see meshWide), with others drawn beside it, so
// that any six batches in a row hold them all.
func NewBatch(seed uint64, index, first, n int) *Batch {
	r := rand.New(rand.NewPCG(seed, 1<<40|uint64(index)))
	b := &Batch{Index: index, Shapes: map[string]int{}}
	if index%6 != 0 {
		b.meshWide(r, index%6)
	}
	for i := range n {
		w := Generate(seed, first+i)
		b.Worlds = append(b.Worlds, w)
		for s, c := range w.Shapes {
			b.Shapes[s] += c
		}
	}
	return b
}

// meshWide draws the batch's mesh config and root-namespace rules: group
// 1 turns auto mTLS off, 2 makes the outbound policy REGISTRY_ONLY, 3 sets
// the mesh's default exportTo of Services, VirtualServices and
// DestinationRules to their own namespace, 4 adds a mesh-wide
// PeerAuthentication, 5 a root-namespace DestinationRule for every host and
// a root-namespace Sidecar; each of the others is drawn beside it now and
// then.
func (b *Batch) meshWide(r *rand.Rand, group int) {
	on := func(g, oneIn int) bool { return group == g || r.IntN(oneIn) == 0 }
	var mesh []string
	if on(1, 6) {
		mesh = append(mesh, "enableAutoMtls: false")
		b.Shapes[ShapeMeshAutoMTLSOff]++
	}
	if on(2, 6) {
		mesh = append(mesh, "outboundTrafficPolicy: {mode: REGISTRY_ONLY}")
		b.Shapes[ShapeMeshRegistryOnly]++
	}
	for _, key := range []string{"defaultServiceExportTo", "defaultVirtualServiceExportTo", "defaultDestinationRuleExportTo"} {
		if on(3, 8) {
			mesh = append(mesh, key+`: ["."]`)
			b.Shapes[ShapeMeshDefaultExportTo]++
		}
	}
	if len(mesh) > 0 {
		b.Mesh = strings.Join(mesh, "\n") + "\n"
		b.Shapes[ShapeMeshConfig]++
	}
	created := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	if on(4, 5) {
		mode := pick(r, securityv1beta1.PeerAuthentication_MutualTLS_STRICT, securityv1beta1.PeerAuthentication_MutualTLS_PERMISSIVE,
			securityv1beta1.PeerAuthentication_MutualTLS_DISABLE)
		pa := peerAuthentication(RootNamespace, "default", created, mode)
		b.Root = append(b.Root, pa)
		b.Shapes[ShapeRootPeerAuth]++
	}
	if on(5, 6) {
		dr := &networkingv1.DestinationRule{TypeMeta: typeMeta("networking.istio.io/v1", "DestinationRule"),
			ObjectMeta: objectMeta(RootNamespace, "mesh-default", created.Add(time.Second))}
		dr.Spec.Host = pick(r, "*.local", "*.svc.cluster.local", "*")
		dr.Spec.TrafficPolicy = &networkingv1alpha3.TrafficPolicy{Tls: &networkingv1alpha3.ClientTLSSettings{
			Mode: pick(r, networkingv1alpha3.ClientTLSSettings_ISTIO_MUTUAL, networkingv1alpha3.ClientTLSSettings_DISABLE)}}
		b.Root = append(b.Root, dr)
		b.Shapes[ShapeRootDestinationRule]++
	}
	if on(5, 8) {
		sc := &networkingv1.Sidecar{TypeMeta: typeMeta("networking.istio.io/v1", "Sidecar"),
			ObjectMeta: objectMeta(RootNamespace, "default", created.Add(2*time.Second))}
		sc.Spec.Egress = []*networkingv1alpha3.IstioEgressListener{{Hosts: []string{"*/*"}}}
		if r.IntN(2) == 0 {
			sc.Spec.OutboundTrafficPolicy = &networkingv1alpha3.OutboundTrafficPolicy{Mode: networkingv1alpha3.OutboundTrafficPolicy_REGISTRY_ONLY}
		}
		b.Root = append(b.Root, sc)
		b.Shapes[ShapeRootSidecar]++
	}
}

// Objects are the batch's objects: the root rules, then every world's.
func (b *Batch) Objects() []runtime.Object {
	out := append([]runtime.Object(nil), b.Root...)
	for _, w := range b.Worlds {
		out = append(out, w.Objects...)
	}
	return out
}

// PodIP is the address of pod number k (0-255) of world index: 10.128.0.0/9
// holds 32,768 worlds of 256 pods, outside the lab's Service range
// (10.96.0.0/12).
func PodIP(index, k int) string {
	n := uint32(10)<<24 | uint32(128)<<16 + uint32(index&0x7fff)<<8 + uint32(k&0xff)
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}).String()
}

// externalIP is address number k of world index that no pod has (for
// selector-less endpoints): 172.16.0.0/12.
func externalIP(index, k int) string {
	return netip.AddrFrom4([4]byte{172, 16 + byte(k&0x0f), byte(index >> 8), byte(index)}).String()
}

// gen builds one world.
type gen struct {
	r       *rand.Rand
	w       *World
	ns      []string
	nodes   []string
	podN    int
	extN    int
	created time.Time
	svcs    []*svc
	clients []*corev1.Pod
	entries []string // ServiceEntry hosts
	// drs and vss are the rules drawn for each Service, by name.
	drs map[string]*networkingv1.DestinationRule
	vss map[string]*networkingv1.VirtualService
}

// svc is a generated Service with what the rest of the world refers to.
type svc struct {
	s        *corev1.Service
	kind     string // selector, headless, selectorless, externalname
	versions []string
	pods     []*corev1.Pod
	// targets are the ports' target port numbers on the pods, by port.
	targets map[int32]int32
}

func (s *svc) host() string { return s.s.Name + "." + s.s.Namespace + ".svc.cluster.local" }

var serviceNames = []string{"orders", "ratings", "payments", "reviews", "catalog", "users", "cart", "search", "billing", "stock"}

// Generate makes world index of the run seeded seed.
func Generate(seed uint64, index int) *World {
	g := &gen{
		r:       rand.New(rand.NewPCG(seed, uint64(index))),
		w:       &World{Index: index, Seed: seed, Prefix: fmt.Sprintf("w%05d", index), Shapes: map[string]int{}},
		created: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(index) * time.Minute),
		drs:     map[string]*networkingv1.DestinationRule{},
		vss:     map[string]*networkingv1.VirtualService{},
	}
	g.namespaces()
	g.nodesOf()
	names := append([]string(nil), serviceNames...)
	g.r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	n := 2 + g.r.IntN(3)
	for i := range n {
		g.service(names[i])
	}
	for _, s := range g.svcs {
		if s.kind == "externalname" {
			g.externalName(s)
		}
	}
	g.clientsOf()
	if g.r.IntN(4) == 0 {
		g.serviceEntry()
	}
	for _, s := range g.svcs {
		if s.kind != "externalname" && g.r.IntN(2) == 0 {
			g.destinationRule(s)
		}
	}
	for _, s := range g.svcs {
		if s.kind != "externalname" && g.r.IntN(5) < 2 {
			g.virtualService(s)
		}
	}
	for _, ns := range g.ns {
		if g.r.IntN(5) == 0 {
			g.sidecar(ns)
		}
		if g.r.IntN(10) < 3 {
			mode := pick(g.r, securityv1beta1.PeerAuthentication_MutualTLS_STRICT, securityv1beta1.PeerAuthentication_MutualTLS_PERMISSIVE,
				securityv1beta1.PeerAuthentication_MutualTLS_DISABLE, securityv1beta1.PeerAuthentication_MutualTLS_UNSET)
			g.add(peerAuthentication(ns, "default", g.next(), mode))
			g.shape(ShapePeerAuthNamespace)
		}
	}
	for _, s := range g.svcs {
		if len(s.pods) > 0 && g.r.IntN(5) == 0 {
			g.workloadPeerAuthentication(s)
		}
	}
	// Shapes added since the first runs draw from a stream of their own,
	// so that the worlds those runs found keep every object they had.
	g.r = rand.New(rand.NewPCG(seed, 1<<50|uint64(index)))
	g.extras()
	return g.w
}

func (g *gen) shape(s string) { g.w.Shapes[s]++ }

// extras: internalTrafficPolicy Local, and a second DestinationRule or
// VirtualService for a host that has one (merged, shadowed, or apart by
// exportTo, as istiod decides).
func (g *gen) extras() {
	for _, s := range g.svcs {
		if s.kind == "selector" && g.r.IntN(12) == 0 {
			s.s.Spec.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyLocal)
			g.shape(ShapeInternalTrafficLocal)
		}
	}
	for _, s := range g.svcs {
		if first := g.drs[s.s.Name]; first != nil && g.r.IntN(4) == 0 {
			g.secondDestinationRule(s, first)
		}
		if first := g.vss[s.s.Name]; first != nil && g.r.IntN(4) == 0 {
			g.secondVirtualService(s, first)
		}
	}
}

// secondDestinationRule writes another rule for the host first names: in
// first's namespace mostly (istiod merges same-host rules there, oldest
// first, when their exportTo agree), else in another.
func (g *gen) secondDestinationRule(s *svc, first *networkingv1.DestinationRule) {
	ns := first.Namespace
	if g.r.IntN(4) == 0 {
		ns = g.otherNS(ns)
	}
	dr := &networkingv1.DestinationRule{TypeMeta: typeMeta("networking.istio.io/v1", "DestinationRule"), ObjectMeta: objectMeta(ns, s.s.Name+"-more", g.next())}
	dr.Spec.Host = first.Spec.Host
	if ns != first.Namespace {
		dr.Spec.Host = s.host()
	}
	switch g.r.IntN(3) {
	case 0:
		dr.Spec.ExportTo = first.Spec.ExportTo
	case 1:
		dr.Spec.ExportTo = g.exportTo(ns)
	default:
		dr.Spec.ExportTo = []string{"*"}
	}
	v := s.versions[g.r.IntN(len(s.versions))]
	dr.Spec.Subsets = []*networkingv1alpha3.Subset{{Name: pick(g.r, "canary", v), Labels: map[string]string{"version": v}}}
	if g.r.IntN(2) == 0 {
		dr.Spec.TrafficPolicy = &networkingv1alpha3.TrafficPolicy{Tls: g.tlsSettings()}
	}
	g.shape(ShapeSecondDestinationRule)
	g.add(dr)
}

// secondVirtualService writes another VirtualService for the host first
// routes: one of them wins for each caller (private, exported by name,
// public; oldest first), never both.
func (g *gen) secondVirtualService(s *svc, first *networkingv1.VirtualService) {
	ns := pick(g.r, first.Namespace, g.otherNS(first.Namespace))
	vs := &networkingv1.VirtualService{TypeMeta: typeMeta("networking.istio.io/v1", "VirtualService"), ObjectMeta: objectMeta(ns, s.s.Name+"-more", g.next())}
	vs.Spec.Hosts = []string{s.host()}
	vs.Spec.ExportTo = g.exportTo(ns)
	subset := pick(g.r, append([]string{""}, s.versions...)...)
	d := &networkingv1alpha3.Destination{Host: s.host(), Subset: subset}
	for _, p := range s.s.Spec.Ports {
		if isTCP(p) {
			vs.Spec.Tcp = []*networkingv1alpha3.TCPRoute{{Route: []*networkingv1alpha3.RouteDestination{{Destination: d}}}}
		} else if len(vs.Spec.Http) == 0 {
			vs.Spec.Http = []*networkingv1alpha3.HTTPRoute{{Route: []*networkingv1alpha3.HTTPRouteDestination{{Destination: d}}}}
		}
	}
	g.shape(ShapeSecondVirtualService)
	g.add(vs)
}

func (g *gen) add(o runtime.Object) { g.w.Objects = append(g.w.Objects, o) }

// next is the creation time of the next rule: a second after the last, or
// (now and then) the same second, as rules applied together get.
func (g *gen) next() time.Time {
	if g.r.IntN(10) != 0 {
		g.created = g.created.Add(time.Second)
	}
	return g.created
}

func (g *gen) namespaces() {
	n := 2 + g.r.IntN(2)
	for i := range n {
		name := g.w.Prefix + "-" + string(rune('a'+i))
		ns := &corev1.Namespace{TypeMeta: typeMeta("v1", "Namespace"), ObjectMeta: metav1.ObjectMeta{Name: name}}
		if g.r.IntN(10) < 7 {
			ns.Labels = map[string]string{"istio-injection": "enabled"}
		}
		g.ns = append(g.ns, name)
		g.add(ns)
	}
	g.w.Namespaces = g.ns
}

func (g *gen) nodesOf() {
	n := 1 + g.r.IntN(2)
	for i := range n {
		name := fmt.Sprintf("%s-node-%d", g.w.Prefix, i+1)
		node := &corev1.Node{TypeMeta: typeMeta("v1", "Node"), ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"kubernetes.io/hostname": name}}}
		if g.r.IntN(10) < 7 {
			region := pick(g.r, "eu-west-1", "us-east-1")
			node.Labels["topology.kubernetes.io/region"] = region
			node.Labels["topology.kubernetes.io/zone"] = region + pick(g.r, "a", "b")
			if g.r.IntN(5) == 0 {
				node.Labels["topology.istio.io/subzone"] = pick(g.r, "rack1", "rack2")
			}
			g.shape(ShapeNodeLocality)
		}
		g.nodes = append(g.nodes, name)
		g.add(node)
	}
}

// portSpec is a drawn service port.
type portSpec struct {
	name, appProtocol string
	port, target      int32
	targetName        string // the container port's name when targetPort names it
	byName            bool
	unsetTarget       bool
}

func (g *gen) ports() []portSpec {
	n := 1
	switch x := g.r.IntN(20); {
	case x >= 17:
		n = 3
	case x >= 10:
		n = 2
	}
	numbers := []int32{80, 8080, 9080, 5432, 7070, 9090, 3000}
	g.r.Shuffle(len(numbers), func(i, j int) { numbers[i], numbers[j] = numbers[j], numbers[i] })
	var out []portSpec
	for i := range n {
		p := portSpec{port: numbers[i]}
		switch x := g.r.IntN(20); {
		case x < 8:
			p.name = pick(g.r, "http", "http-api", "http-web")
		case x < 11:
			p.name = "grpc"
		case x < 15:
			p.name = pick(g.r, "tcp", "tcp-db")
			g.shape(ShapeTCPPort)
		case x < 17 && n == 1:
			g.shape(ShapeUnnamedPort)
		default:
			p.name = fmt.Sprintf("port-%d", i)
			p.appProtocol = pick(g.r, "http", "tcp", "grpc")
			g.shape(ShapeAppProtocol)
		}
		if p.name == "" && n > 1 {
			p.name = fmt.Sprintf("p%d", i)
		}
		for _, o := range out {
			if o.name == p.name {
				p.name = fmt.Sprintf("%s-%d", p.name, i) // port names are unique in a Service
			}
		}
		switch x := g.r.IntN(10); {
		case x < 4:
			p.target = p.port
		case x < 7:
			p.target = pick(g.r, int32(8000), int32(8443), int32(9000), int32(5000)) + int32(i)
		case x < 9:
			p.target = 8100 + int32(i)
			p.byName, p.targetName = true, fmt.Sprintf("svc-%d", i)
			g.shape(ShapeNamedTargetPort)
		default:
			p.target, p.unsetTarget = p.port, true
		}
		out = append(out, p)
	}
	if n > 1 {
		g.shape(ShapeMultiPort)
	}
	return out
}

func (g *gen) service(name string) {
	ns := pick(g.r, g.ns[0], g.ns[1])
	s := &svc{targets: map[int32]int32{}}
	switch x := g.r.IntN(20); {
	case x < 12:
		s.kind = "selector"
	case x < 14:
		s.kind = "headless"
		g.shape(ShapeHeadless)
	case x < 17:
		s.kind = "selectorless"
		g.shape(ShapeSelectorless)
	default:
		s.kind = "externalname"
		g.shape(ShapeExternalName)
	}
	ports := g.ports()
	s.s = &corev1.Service{TypeMeta: typeMeta("v1", "Service"), ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	for _, p := range ports {
		sp := corev1.ServicePort{Name: p.name, Port: p.port, Protocol: corev1.ProtocolTCP}
		if p.appProtocol != "" {
			sp.AppProtocol = &p.appProtocol
		}
		switch {
		case p.byName:
			sp.TargetPort = intstr.FromString(p.targetName)
		case !p.unsetTarget:
			sp.TargetPort = intstr.FromInt32(p.target)
		}
		if s.kind == "externalname" {
			sp.TargetPort = intstr.IntOrString{}
		}
		s.s.Spec.Ports = append(s.s.Spec.Ports, sp)
		s.targets[p.port] = p.target
	}
	if g.r.IntN(8) == 0 {
		s.s.Annotations = map[string]string{"networking.istio.io/exportTo": pick(g.r, ".", "*", g.otherNS(ns), ".,"+g.otherNS(ns))}
		g.shape(ShapeServiceExportTo)
	}
	g.svcs = append(g.svcs, s)
	switch s.kind {
	case "externalname":
		s.s.Spec.Type = corev1.ServiceTypeExternalName
		g.add(s.s)
		return // its name is drawn once every Service exists
	case "headless":
		s.s.Spec.ClusterIP = corev1.ClusterIPNone
	}
	if s.kind != "selectorless" {
		s.s.Spec.Selector = map[string]string{"app": name}
	}
	g.add(s.s)
	// The workloads: one to three versions, one or two pods each.
	nv := 1 + g.r.IntN(3)
	for v := range nv {
		version := fmt.Sprintf("v%d", v+1)
		s.versions = append(s.versions, version)
		for range 1 + g.r.IntN(2) {
			s.pods = append(s.pods, g.pod(ns, name, version, ports, s.kind != "selectorless"))
		}
	}
	g.slices(s, ports)
}

func (g *gen) otherNS(ns string) string {
	for {
		if o := g.ns[g.r.IntN(len(g.ns))]; o != ns {
			return o
		}
	}
}

// pod makes a pod of app name, version, serving ports (selected: the
// Service selects it by app).
func (g *gen) pod(ns, app, version string, ports []portSpec, selected bool) *corev1.Pod {
	k := g.podN
	g.podN++
	labels := map[string]string{}
	if selected || g.r.IntN(2) == 0 {
		labels["app"] = app
	}
	if g.r.IntN(7) != 0 {
		labels["version"] = version
	}
	name := fmt.Sprintf("%s-%s-%d", app, version, k)
	p := &corev1.Pod{TypeMeta: typeMeta("v1", "Pod"), ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
	if g.r.IntN(5) < 3 {
		hash := fmt.Sprintf("%x", g.r.Uint32()&0xfffff)
		rs := app + "-" + version + "-" + hash
		p.GenerateName = rs + "-"
		p.Name = fmt.Sprintf("%s-%05x", rs, k)
		labels["pod-template-hash"] = hash
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, UID: "00000000-0000-0000-0000-000000000001", Controller: ptr(true)}}
		g.shape(ShapeReplicaSetOwner)
	}
	app1 := corev1.Container{Name: "app", Image: app}
	for _, sp := range ports {
		cp := corev1.ContainerPort{ContainerPort: sp.target, Protocol: corev1.ProtocolTCP}
		if sp.byName {
			cp.Name = sp.targetName
		}
		app1.Ports = append(app1.Ports, cp)
	}
	p.Spec.Containers = []corev1.Container{app1}
	g.sidecarOf(p)
	p.Spec.NodeName = g.nodes[g.r.IntN(len(g.nodes))]
	g.status(p)
	g.add(p)
	return p
}

// sidecarOf gives p a sidecar (or not) and the injector's labels (or not).
func (g *gen) sidecarOf(p *corev1.Pod) {
	proxy := corev1.Container{Name: "istio-proxy", Image: "proxyv2", Args: []string{"proxy", "sidecar"}}
	sidecar := true
	switch x := g.r.IntN(20); {
	case x < 11:
		p.Spec.Containers = append(p.Spec.Containers, proxy)
		g.shape(ShapeClassicSidecar)
	case x < 16:
		proxy.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
		p.Spec.InitContainers = append(p.Spec.InitContainers, proxy)
		g.shape(ShapeNativeSidecar)
	default:
		sidecar = false
		g.shape(ShapeNoSidecar)
	}
	switch {
	case sidecar && g.r.IntN(6) != 0:
		p.Labels["security.istio.io/tlsMode"] = "istio"
	case sidecar:
		g.shape(ShapeTLSModeMissing)
	case g.r.IntN(8) == 0:
		p.Labels["security.istio.io/tlsMode"] = "istio"
		g.shape(ShapeTLSModeWithoutSidecar)
	}
	if sidecar && g.r.IntN(10) < 3 {
		p.Labels["istio.io/rev"] = pick(g.r, "default", "canary")
		g.shape(ShapeRevisionLabel)
	}
	if g.r.IntN(5) < 2 {
		p.Labels["service.istio.io/canonical-name"] = pick(g.r, p.Labels["app"], "canonical-"+p.Namespace[len(p.Namespace)-1:])
		if g.r.IntN(2) == 0 {
			p.Labels["service.istio.io/canonical-revision"] = pick(g.r, p.Labels["version"], "r1")
		}
		g.shape(ShapeCanonicalLabels)
	} else if g.r.IntN(5) == 0 {
		p.Labels["app.kubernetes.io/name"] = "kname"
		p.Labels["app.kubernetes.io/version"] = "kv1"
	}
	if g.r.IntN(20) == 0 {
		p.Labels["service.istio.io/workload-name"] = "named-workload"
		g.shape(ShapeWorkloadNameLabel)
	}
	if sidecar && g.r.IntN(20) == 0 {
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(1337))}
		g.shape(ShapeProxyUID)
	}
	for k, v := range p.Labels {
		if v == "" {
			delete(p.Labels, k)
		}
	}
}

func (g *gen) status(p *corev1.Pod) {
	ip := PodIP(g.w.Index, g.podN)
	ready := corev1.ConditionTrue
	if g.r.IntN(10) == 0 {
		ready = corev1.ConditionFalse
		g.shape(ShapePodNotReady)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: "127.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}, {Type: corev1.ContainersReady, Status: ready}}}
}

// slices writes the Service's EndpointSlice: as the controller does for a
// selector (with targetRefs, ready as the pod is), with shapes hand-made
// ones have: endpoints without targetRef, addresses of no pod or of a pod
// the Service does not select.
func (g *gen) slices(s *svc, ports []portSpec) {
	es := &discoveryv1.EndpointSlice{TypeMeta: typeMeta("discovery.k8s.io/v1", "EndpointSlice"),
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05x", s.s.Name, g.r.Uint32()&0xfffff), Namespace: s.s.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: s.s.Name}},
		AddressType: discoveryv1.AddressTypeIPv4}
	if s.kind != "selectorless" {
		es.Labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
	}
	for _, p := range ports {
		es.Ports = append(es.Ports, discoveryv1.EndpointPort{Name: ptr(p.name), Port: ptr(p.target), Protocol: ptr(corev1.ProtocolTCP)})
	}
	for _, p := range s.pods {
		ready, _ := podReady(p)
		e := discoveryv1.Endpoint{Addresses: []string{p.Status.PodIP}, NodeName: ptr(p.Spec.NodeName),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(ready), Serving: ptr(ready), Terminating: ptr(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name}}
		switch x := g.r.IntN(20); {
		case x < 3 || s.kind == "selectorless" && x < 10:
			e.TargetRef = nil
			g.shape(ShapeSliceWithoutTargetRef)
		case x == 3 && ready:
			e.Conditions.Ready, e.Conditions.Serving = ptr(false), ptr(false)
			g.shape(ShapeEndpointNotReadyTarget)
		case x == 4 && ready:
			e.Conditions.Ready, e.Conditions.Terminating = ptr(false), ptr(true)
			g.shape(ShapeTerminatingEndpoint)
		}
		es.Endpoints = append(es.Endpoints, e)
	}
	if s.kind == "selectorless" || g.r.IntN(10) == 0 {
		g.extN++
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{externalIP(g.w.Index, g.extN)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}})
		g.shape(ShapeAddressWithoutPod)
	}
	if s.kind == "selectorless" && g.r.IntN(3) == 0 {
		// A pod of the world the Service does not select, by its IP.
		other := g.pod(s.s.Namespace, s.s.Name+"-extra", "v1", ports, false)
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{other.Status.PodIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}})
		s.pods = append(s.pods, other)
		g.shape(ShapeAddressOfOtherPod)
	}
	if len(es.Endpoints) == 0 {
		return
	}
	g.add(es)
}

// externalName points the alias at a Service of the world, a
// ServiceEntry host or a name istiod does not know.
func (g *gen) externalName(s *svc) {
	var concrete []string
	for _, o := range g.svcs {
		if o.kind != "externalname" {
			concrete = append(concrete, o.host())
		}
	}
	switch x := g.r.IntN(10); {
	case x < 6 && len(concrete) > 0:
		s.s.Spec.ExternalName = concrete[g.r.IntN(len(concrete))]
	case x < 8:
		s.s.Spec.ExternalName = g.entryHost()
	default:
		s.s.Spec.ExternalName = "unknown." + g.w.Prefix + ".example.org"
	}
}

// entryHost is the host a ServiceEntry of the world declares (when it has
// one).
func (g *gen) entryHost() string { return "api." + g.w.Prefix + ".example.com" }

func (g *gen) clientsOf() {
	n := 1 + g.r.IntN(2)
	for i := range n {
		ns := g.ns[g.r.IntN(len(g.ns))]
		p := &corev1.Pod{TypeMeta: typeMeta("v1", "Pod"), ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("client-%d", i+1), Namespace: ns,
			Labels: map[string]string{"app": "client", "role": pick(g.r, "web", "batch")}}}
		p.Spec.Containers = []corev1.Container{{Name: "client", Image: "curl"}}
		g.sidecarOf(p)
		p.Spec.NodeName = g.nodes[g.r.IntN(len(g.nodes))]
		g.podN++
		g.status(p)
		p.Status.Conditions[0].Status, p.Status.Conditions[1].Status = corev1.ConditionTrue, corev1.ConditionTrue
		g.clients = append(g.clients, p)
		g.add(p)
	}
}

func (g *gen) serviceEntry() {
	ns := g.ns[g.r.IntN(len(g.ns))]
	se := &networkingv1.ServiceEntry{TypeMeta: typeMeta("networking.istio.io/v1", "ServiceEntry"), ObjectMeta: objectMeta(ns, "partner-api", g.next())}
	se.Spec.Hosts = []string{g.entryHost()}
	se.Spec.Location = networkingv1alpha3.ServiceEntry_MESH_EXTERNAL
	se.Spec.Resolution = networkingv1alpha3.ServiceEntry_DNS
	se.Spec.Ports = []*networkingv1alpha3.ServicePort{{Number: 443, Name: "tls", Protocol: "TLS"}, {Number: 80, Name: "http", Protocol: "HTTP"}}
	if g.r.IntN(3) == 0 {
		se.Spec.ExportTo = []string{pick(g.r, ".", "*", g.otherNS(ns))}
		g.shape(ShapeRuleExportTo)
	}
	g.entries = append(g.entries, g.entryHost())
	g.add(se)
	g.shape(ShapeServiceEntry)
}

// ruleNamespace is where a rule for s goes: mostly the Service's, else a
// caller's or a third namespace.
func (g *gen) ruleNamespace(s *svc) string {
	if g.r.IntN(10) < 7 {
		return s.s.Namespace
	}
	ns := g.otherNS(s.s.Namespace)
	if len(g.ns) > 2 {
		g.shape(ShapeRuleOtherNamespace)
	}
	return ns
}

// ruleHost is how a rule in ns names s: its short name (in its own
// namespace), its FQDN, or now and then a wildcard over its namespace.
func (g *gen) ruleHost(s *svc, ns string, wildcard bool) string {
	switch x := g.r.IntN(10); {
	case x < 4 && ns == s.s.Namespace:
		return s.s.Name
	case x == 9 && wildcard:
		g.shape(ShapeDRWildcard)
		return "*." + s.s.Namespace + ".svc.cluster.local"
	}
	return s.host()
}

func (g *gen) exportTo(ns string) []string {
	if g.r.IntN(4) != 0 {
		return nil
	}
	g.shape(ShapeRuleExportTo)
	return []string{pick(g.r, ".", "*", g.otherNS(ns))}
}

func (g *gen) tlsSettings() *networkingv1alpha3.ClientTLSSettings {
	g.shape(ShapeDRTLS)
	mode := pick(g.r, networkingv1alpha3.ClientTLSSettings_ISTIO_MUTUAL, networkingv1alpha3.ClientTLSSettings_DISABLE,
		networkingv1alpha3.ClientTLSSettings_SIMPLE, networkingv1alpha3.ClientTLSSettings_ISTIO_MUTUAL)
	return &networkingv1alpha3.ClientTLSSettings{Mode: mode}
}

func (g *gen) destinationRule(s *svc) {
	ns := g.ruleNamespace(s)
	dr := &networkingv1.DestinationRule{TypeMeta: typeMeta("networking.istio.io/v1", "DestinationRule"), ObjectMeta: objectMeta(ns, s.s.Name, g.next())}
	dr.Spec.Host = g.ruleHost(s, ns, true)
	dr.Spec.ExportTo = g.exportTo(ns)
	if g.r.IntN(20) == 0 {
		dr.Spec.WorkloadSelector = &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "client"}}
		g.shape(ShapeDRSelector)
	}
	if g.r.IntN(2) == 0 {
		dr.Spec.TrafficPolicy = &networkingv1alpha3.TrafficPolicy{}
		if g.r.IntN(3) < 2 {
			dr.Spec.TrafficPolicy.Tls = g.tlsSettings()
		}
		if g.r.IntN(4) == 0 {
			port := s.s.Spec.Ports[g.r.IntN(len(s.s.Spec.Ports))].Port
			pl := &networkingv1alpha3.TrafficPolicy_PortTrafficPolicy{Port: &networkingv1alpha3.PortSelector{Number: uint32(port)},
				ConnectionPool: &networkingv1alpha3.ConnectionPoolSettings{Tcp: &networkingv1alpha3.ConnectionPoolSettings_TCPSettings{MaxConnections: 100}}}
			if g.r.IntN(2) == 0 {
				pl.Tls = g.tlsSettings()
			}
			dr.Spec.TrafficPolicy.PortLevelSettings = append(dr.Spec.TrafficPolicy.PortLevelSettings, pl)
			g.shape(ShapeDRPortTLS)
		}
	}
	if g.r.IntN(5) < 4 {
		for _, v := range s.versions {
			sub := &networkingv1alpha3.Subset{Name: v, Labels: map[string]string{"version": v}}
			switch x := g.r.IntN(20); {
			case x == 0:
				sub.Labels = map[string]string{"version": ""}
				g.shape(ShapeSubsetLabelEmpty)
			case x == 1:
				sub.Labels = map[string]string{"track": "stable"}
				g.shape(ShapeSubsetLabelAbsent)
			case x == 2:
				sub.Labels = nil
			case x == 3:
				sub.Labels["topology.kubernetes.io/region"] = "eu-west-1"
			}
			if g.r.IntN(8) == 0 {
				sub.TrafficPolicy = &networkingv1alpha3.TrafficPolicy{Tls: g.tlsSettings()}
				g.shape(ShapeDRSubsetTLS)
			}
			dr.Spec.Subsets = append(dr.Spec.Subsets, sub)
		}
	}
	g.drs[s.s.Name] = dr
	g.add(dr)
}

func (g *gen) virtualService(s *svc) {
	ns := g.ruleNamespace(s)
	vs := &networkingv1.VirtualService{TypeMeta: typeMeta("networking.istio.io/v1", "VirtualService"), ObjectMeta: objectMeta(ns, s.s.Name, g.next())}
	vs.Spec.Hosts = []string{g.ruleHost(s, ns, false)}
	vs.Spec.ExportTo = g.exportTo(ns)
	if g.r.IntN(10) == 0 {
		vs.Spec.Gateways = pick(g.r, []string{"mesh"}, []string{"istio-system/ingress"}, []string{"mesh", "istio-system/ingress"})
		g.shape(ShapeVSGateways)
	}
	dest := func(subset string, port int32) *networkingv1alpha3.Destination {
		d := &networkingv1alpha3.Destination{Host: vs.Spec.Hosts[0], Subset: subset}
		if port != 0 {
			d.Port = &networkingv1alpha3.PortSelector{Number: uint32(port)}
		}
		return d
	}
	subsets := append([]string{""}, s.versions...)
	if g.r.IntN(10) == 0 {
		subsets = append(subsets, "v9")
	}
	routeTo := func() []*networkingv1alpha3.HTTPRouteDestination {
		if g.r.IntN(8) == 0 {
			// Another host of the world, or the ServiceEntry's, without a
			// port: istiod takes the only port of a one-port Service.
			g.shape(ShapeVSOtherHost)
			other := g.svcs[g.r.IntN(len(g.svcs))].host()
			if len(g.entries) > 0 && g.r.IntN(3) == 0 {
				other = g.entries[0]
			}
			return []*networkingv1alpha3.HTTPRouteDestination{{Destination: &networkingv1alpha3.Destination{Host: other}}}
		}
		n := 1 + g.r.IntN(3)
		var out []*networkingv1alpha3.HTTPRouteDestination
		for range n {
			d := &networkingv1alpha3.HTTPRouteDestination{Destination: dest(subsets[g.r.IntN(len(subsets))], 0)}
			if n > 1 {
				d.Weight = pick(g.r, int32(0), int32(10), int32(20), int32(50), int32(90))
			}
			out = append(out, d)
		}
		if n > 1 {
			g.shape(ShapeVSWeights)
			total := int32(0)
			for _, d := range out {
				total += d.Weight
			}
			if total == 0 {
				out[0].Weight = 100
			}
		}
		return out
	}
	hasHTTP, hasTCP := false, false
	for _, p := range s.s.Spec.Ports {
		if isTCP(p) {
			hasTCP = true
		} else {
			hasHTTP = true
		}
	}
	if hasHTTP {
		n := 1 + g.r.IntN(3)
		for i := range n {
			h := &networkingv1alpha3.HTTPRoute{Route: routeTo()}
			if i < n-1 || g.r.IntN(5) == 0 {
				h.Match = g.matches(s)
			}
			if g.r.IntN(10) == 0 {
				h.Mirror = dest(subsets[g.r.IntN(len(subsets))], 0)
				g.shape(ShapeVSMirror)
			}
			vs.Spec.Http = append(vs.Spec.Http, h)
		}
	}
	if hasTCP && g.r.IntN(2) == 0 {
		var ws []*networkingv1alpha3.RouteDestination
		for _, d := range routeTo() {
			ws = append(ws, &networkingv1alpha3.RouteDestination{Destination: d.Destination, Weight: d.Weight})
		}
		vs.Spec.Tcp = []*networkingv1alpha3.TCPRoute{{Route: ws}}
		g.shape(ShapeVSTCP)
	}
	if len(vs.Spec.Http) == 0 && len(vs.Spec.Tcp) == 0 {
		return
	}
	g.vss[s.s.Name] = vs
	g.add(vs)
}

func (g *gen) matches(s *svc) []*networkingv1alpha3.HTTPMatchRequest {
	g.shape(ShapeVSMatch)
	var out []*networkingv1alpha3.HTTPMatchRequest
	for range 1 + g.r.IntN(2) {
		m := &networkingv1alpha3.HTTPMatchRequest{}
		switch x := g.r.IntN(10); {
		case x < 3:
			m.Uri = &networkingv1alpha3.StringMatch{MatchType: &networkingv1alpha3.StringMatch_Prefix{Prefix: pick(g.r, "/api", "/")}}
		case x < 5:
			m.Headers = map[string]*networkingv1alpha3.StringMatch{"x-canary": {MatchType: &networkingv1alpha3.StringMatch_Exact{Exact: "true"}}}
		case x < 7:
			m.Port = uint32(s.s.Spec.Ports[g.r.IntN(len(s.s.Spec.Ports))].Port)
		case x < 9:
			m.SourceLabels = map[string]string{"role": pick(g.r, "web", "batch")}
			g.shape(ShapeVSSourceLabels)
		default:
			m.SourceNamespace = g.ns[g.r.IntN(len(g.ns))]
			g.shape(ShapeVSSourceLabels)
		}
		out = append(out, m)
	}
	return out
}

// isTCP reads a port as istiod reads its protocol for routing: tcp by
// name or appProtocol.
func isTCP(p corev1.ServicePort) bool {
	proto := p.Name
	if p.AppProtocol != nil {
		proto = *p.AppProtocol
	}
	proto, _, _ = strings.Cut(proto, "-")
	return proto == "tcp"
}

func (g *gen) sidecar(ns string) {
	sc := &networkingv1.Sidecar{TypeMeta: typeMeta("networking.istio.io/v1", "Sidecar"), ObjectMeta: objectMeta(ns, "default", g.next())}
	var hosts []string
	switch x := g.r.IntN(4); {
	case x == 0:
		hosts = []string{"./*", "istio-system/*"}
	case x == 1 && len(g.svcs) > 0:
		s := g.svcs[g.r.IntN(len(g.svcs))]
		hosts = []string{s.s.Namespace + "/" + s.host()}
	case x == 2:
		hosts = []string{g.otherNS(ns) + "/*"}
	default:
		hosts = []string{"*/*"}
	}
	sc.Spec.Egress = []*networkingv1alpha3.IstioEgressListener{{Hosts: hosts}}
	g.shape(ShapeSidecarEgress)
	if g.r.IntN(3) == 0 {
		sc.Spec.OutboundTrafficPolicy = &networkingv1alpha3.OutboundTrafficPolicy{Mode: pick(g.r, networkingv1alpha3.OutboundTrafficPolicy_REGISTRY_ONLY, networkingv1alpha3.OutboundTrafficPolicy_ALLOW_ANY)}
		g.shape(ShapeSidecarRegistryOnly)
	}
	if g.r.IntN(5) == 0 {
		sc.Name = "clients"
		sc.Spec.WorkloadSelector = &networkingv1alpha3.WorkloadSelector{Labels: map[string]string{"app": "client"}}
		g.shape(ShapeSidecarSelector)
	}
	g.add(sc)
}

func (g *gen) workloadPeerAuthentication(s *svc) {
	mode := pick(g.r, securityv1beta1.PeerAuthentication_MutualTLS_STRICT, securityv1beta1.PeerAuthentication_MutualTLS_PERMISSIVE,
		securityv1beta1.PeerAuthentication_MutualTLS_DISABLE, securityv1beta1.PeerAuthentication_MutualTLS_UNSET)
	pa := peerAuthentication(s.s.Namespace, s.s.Name, g.next(), mode)
	sel := map[string]string{"app": s.s.Name}
	if g.r.IntN(3) == 0 && len(s.versions) > 1 {
		sel["version"] = s.versions[g.r.IntN(len(s.versions))]
	}
	pa.Spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: sel}
	g.shape(ShapePeerAuthWorkload)
	if g.r.IntN(2) == 0 {
		var targets []int32
		for _, t := range s.targets {
			targets = append(targets, t)
		}
		sort.Slice(targets, func(i, j int) bool { return targets[i] < targets[j] })
		port := targets[g.r.IntN(len(targets))]
		pa.Spec.PortLevelMtls = map[uint32]*securityv1beta1.PeerAuthentication_MutualTLS{uint32(port): {Mode: pick(g.r,
			securityv1beta1.PeerAuthentication_MutualTLS_STRICT, securityv1beta1.PeerAuthentication_MutualTLS_PERMISSIVE,
			securityv1beta1.PeerAuthentication_MutualTLS_DISABLE)}}
		g.shape(ShapePeerAuthPort)
	}
	g.add(pa)
}

func peerAuthentication(ns, name string, created time.Time, mode securityv1beta1.PeerAuthentication_MutualTLS_Mode) *securityv1.PeerAuthentication {
	pa := &securityv1.PeerAuthentication{TypeMeta: typeMeta("security.istio.io/v1", "PeerAuthentication"), ObjectMeta: objectMeta(ns, name, created)}
	pa.Spec.Mtls = &securityv1beta1.PeerAuthentication_MutualTLS{Mode: mode}
	return pa
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func objectMeta(ns, name string, created time.Time) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)}
}

func podReady(p *corev1.Pod) (bool, string) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue, ""
		}
	}
	return false, "no Ready condition"
}

func pick[T any](r *rand.Rand, options ...T) T { return options[r.IntN(len(options))] }

func ptr[T any](v T) *T { return &v }
