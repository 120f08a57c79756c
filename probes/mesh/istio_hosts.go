package mesh

// ExportedTo reports whether a rule in ruleNamespace with exportTo is visible
// from namespace ns. Empty exportTo means everywhere (Istio's default).
func ExportedTo(exportTo []string, ruleNamespace, ns string) bool {
	if len(exportTo) == 0 {
		return true
	}
	for _, e := range exportTo {
		if e == "*" || e == ns || (e == "." && ruleNamespace == ns) {
			return true
		}
	}
	return false
}

// LabelsMatch reports whether every selector label is set to the same value
// in labels.
func LabelsMatch(selector, labels map[string]string) bool {
	if labels == nil {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
