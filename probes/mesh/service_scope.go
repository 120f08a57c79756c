package mesh

import (
	"fmt"

	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// ServiceScope is what istiod's ambient index decides of a Service across
// clusters (pilot/pkg/serviceregistry/ambient/services.go
// matchServiceScope): global when a meshConfig.serviceScopeConfigs entry
// of scope GLOBAL selects both its namespace's labels and its own, local
// otherwise. istiod reads it only with AMBIENT_ENABLE_MULTI_NETWORK
// (GlobalNestedWorkloadServicesCollection's checkServiceScope); a remote
// cluster's Service that is not global is dropped ("Skipping non-global
// service"), and only global ones are merged with the local one
// (multicluster.go mergeServiceInfosWithCluster).
type ServiceScope struct {
	Global bool
	// Why says which entry made it global, or that none did.
	Why string
	// Unknown says why it cannot be told (the namespace not read).
	Unknown string
}

// ServiceScopeOf decides svc's scope as matchServiceScope does, with the
// mesh config m of the istiod that reads it and ns, svc's namespace in
// the same cluster (nil when not read: unknown, never "no labels").
func ServiceScopeOf(m MeshConfig, svc *corev1.Service, ns *corev1.Namespace) ServiceScope {
	configs := m.Raw.GetServiceScopeConfigs()
	if len(configs) == 0 {
		return ServiceScope{Why: "the mesh config has no serviceScopeConfigs: every Service is local to its cluster"}
	}
	if ns == nil {
		return ServiceScope{Unknown: "namespace " + svc.Namespace + " not read: whether a serviceScopeConfigs entry selects it is not known"}
	}
	for i, sc := range configs {
		nss, err := scopeSelector(sc.GetNamespaceSelector())
		if err != nil {
			// istiod logs and skips such an entry.
			continue
		}
		ss, err := scopeSelector(sc.GetServicesSelector())
		if err != nil {
			continue
		}
		if nss.Matches(k8slabels.Set(ns.Labels)) && ss.Matches(k8slabels.Set(svc.Labels)) &&
			sc.GetScope() == meshv1alpha1.MeshConfig_ServiceScopeConfigs_GLOBAL {
			return ServiceScope{Global: true, Why: fmt.Sprintf("serviceScopeConfigs[%d] (GLOBAL) selects namespace %s and the Service", i, svc.Namespace)}
		}
	}
	return ServiceScope{Why: "no GLOBAL serviceScopeConfigs entry selects the Service and its namespace"}
}

// scopeSelector converts a mesh LabelSelector as istio's
// pkg/config/mesh/labelselector does, with matchServiceScope's twist: a
// selector that matches nothing (nil) matches everything.
func scopeSelector(ps *meshv1alpha1.LabelSelector) (k8slabels.Selector, error) {
	if ps == nil || len(ps.MatchLabels)+len(ps.MatchExpressions) == 0 {
		return k8slabels.Everything(), nil
	}
	var reqs []k8slabels.Requirement
	for k, v := range ps.MatchLabels {
		r, err := k8slabels.NewRequirement(k, selection.Equals, []string{v})
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, *r)
	}
	for _, e := range ps.MatchExpressions {
		var op selection.Operator
		switch metav1.LabelSelectorOperator(e.Operator) {
		case metav1.LabelSelectorOpIn:
			op = selection.In
		case metav1.LabelSelectorOpNotIn:
			op = selection.NotIn
		case metav1.LabelSelectorOpExists:
			op = selection.Exists
		case metav1.LabelSelectorOpDoesNotExist:
			op = selection.DoesNotExist
		default:
			return nil, fmt.Errorf("%q is not a valid label selector operator", e.Operator)
		}
		r, err := k8slabels.NewRequirement(e.Key, op, append([]string(nil), e.Values...))
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, *r)
	}
	return k8slabels.NewSelector().Add(reqs...), nil
}
