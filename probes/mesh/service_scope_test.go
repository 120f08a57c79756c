package mesh

import (
	"testing"

	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// matchServiceScope's rules (ambient/services.go): an entry selects when
// both its namespace and its service selectors match, a missing selector
// matching everything; only a GLOBAL entry makes a Service global; an
// unreadable namespace is unknown, not unlabelled.
func TestServiceScopeOf(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop", Labels: map[string]string{"tier": "api"}}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"istio.io/global": "true"}}}
	global := meshv1alpha1.MeshConfig_ServiceScopeConfigs_GLOBAL
	local := meshv1alpha1.MeshConfig_ServiceScopeConfigs_LOCAL
	sel := func(k, v string) *meshv1alpha1.LabelSelector {
		return &meshv1alpha1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
	expr := &meshv1alpha1.LabelSelector{MatchExpressions: []*meshv1alpha1.LabelSelectorRequirement{{Key: "tier", Operator: "In", Values: []string{"api", "web"}}}}
	for _, c := range []struct {
		name    string
		configs []*meshv1alpha1.MeshConfig_ServiceScopeConfigs
		ns      *corev1.Namespace
		global  bool
		unknown bool
	}{
		{"no configs", nil, ns, false, false},
		{"namespace selected, no service selector", []*meshv1alpha1.MeshConfig_ServiceScopeConfigs{{NamespaceSelector: sel("istio.io/global", "true"), Scope: global}}, ns, true, false},
		{"service selected by expression, no namespace selector", []*meshv1alpha1.MeshConfig_ServiceScopeConfigs{{ServicesSelector: expr, Scope: global}}, ns, true, false},
		{"namespace selected, service not", []*meshv1alpha1.MeshConfig_ServiceScopeConfigs{{NamespaceSelector: sel("istio.io/global", "true"), ServicesSelector: sel("tier", "db"), Scope: global}}, ns, false, false},
		{"a LOCAL entry selects", []*meshv1alpha1.MeshConfig_ServiceScopeConfigs{{NamespaceSelector: sel("istio.io/global", "true"), Scope: local}}, ns, false, false},
		{"namespace not read", []*meshv1alpha1.MeshConfig_ServiceScopeConfigs{{NamespaceSelector: sel("istio.io/global", "true"), Scope: global}}, nil, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ServiceScopeOf(MeshConfig{Raw: &meshv1alpha1.MeshConfig{ServiceScopeConfigs: c.configs}}, svc, c.ns)
			if got.Global != c.global || (got.Unknown != "") != c.unknown {
				t.Fatalf("got %+v", got)
			}
		})
	}
}
