package callersearch

import (
	"fmt"
	"sort"
	"strings"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// ByGateway: an ingress or egress gateway whose Gateway a
// VirtualService routing to the target names. A gateway that answers 404
// NR never reaches the target's pods, so no inbound log shows it: the
// routing configuration is where it is found.
const ByGateway = "gateway"

// gatewayCandidate is a Gateway whose pods may call the target, and the
// namespace its pods are listed in.
type gatewayCandidate struct {
	Gateway string // namespace/name
	// Namespace is where its pods are listed: "" (every namespace), since
	// the selector of an Istio Gateway matches pods in any.
	Namespace string
	Selector  map[string]string
	Why       string
	Pods      []corev1.Pod
}

// gatewayCandidates are the Gateways the VirtualServices routing to the
// target name, resolved as istiod resolves them; a name that resolves to no
// Gateway (a short name read in the VirtualService's namespace) stands for
// the Gateways of that name elsewhere, since that mistake is what the
// triage must find. Their pods are listed by selector in every namespace,
// as istiod applies an Istio Gateway's selector to the pods of all
// namespaces (unless PILOT_SCOPE_GATEWAY_TO_NAMESPACE): a Helm install runs
// the gateway in istio-ingress, say, with the Gateway in the app's
// namespace.
func gatewayCandidates(vss []*networkingv1.VirtualService, gws []*networkingv1.Gateway) []gatewayCandidate {
	byRef := map[string]*networkingv1.Gateway{}
	for _, gw := range gws {
		byRef[gw.Namespace+"/"+gw.Name] = gw
	}
	var out []gatewayCandidate
	seen := map[string]bool{}
	add := func(gw *networkingv1.Gateway, why string) {
		sel := gw.Spec.GetSelector()
		if len(sel) == 0 {
			return // every gateway workload: no narrow list names them
		}
		key := gw.Namespace + "/" + gw.Name
		if !seen[key] {
			seen[key] = true
			out = append(out, gatewayCandidate{Gateway: key, Namespace: metav1.NamespaceAll, Selector: sel, Why: why})
		}
	}
	for _, vs := range vss {
		for _, g := range vs.Spec.GetGateways() {
			ref := mesh.ResolveGatewayName(g, vs.Namespace)
			if ref == mesh.MeshGateway {
				continue
			}
			if gw := byRef[ref]; gw != nil {
				add(gw, fmt.Sprintf("pod of Gateway %s, which VirtualService %s/%s routing to the target names", ref, vs.Namespace, vs.Name))
				continue
			}
			_, name, _ := strings.Cut(ref, "/")
			for _, gw := range gws {
				if gw.Name == name {
					add(gw, fmt.Sprintf("pod of Gateway %s/%s: VirtualService %s/%s routing to the target names %q, which is no Gateway (%s)", gw.Namespace, gw.Name, vs.Namespace, vs.Name, g, ref))
				}
			}
		}
	}
	return out
}

// namesGateways reports whether a VirtualService names a gateway besides
// the mesh.
func namesGateways(vs *networkingv1.VirtualService) bool {
	for _, g := range vs.Spec.GetGateways() {
		if g != mesh.MeshGateway {
			return true
		}
	}
	return false
}

// addGatewayCallers adds the gateway pods of the candidates, ready first.
func addGatewayCallers(in callerSearchInput, add func(pod *corev1.Pod, by, why string, errs, reqs float64)) []string {
	var searched []string
	for _, gc := range in.Gateways {
		where := "all namespaces"
		if gc.Namespace != metav1.NamespaceAll {
			where = gc.Namespace
		}
		searched = append(searched, fmt.Sprintf("gateway pods (%s) in %s", labels.SelectorFromSet(gc.Selector), where))
		pods := readyFirst(gc.Pods)
		for i := range pods {
			if ok, _ := mesh.GatewayPod(&pods[i]); ok {
				add(&pods[i], ByGateway, gc.Why, 0, 0)
			}
		}
	}
	sort.Strings(searched)
	return searched
}
