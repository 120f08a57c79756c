package mesh

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/istioversion"
)

// The istiod variables that decide whether it merges other clusters'
// workloads into what it gives ztunnel (pilot/pkg/features/ambient.go).
const (
	EnvEnableAmbient             = "PILOT_ENABLE_AMBIENT"
	EnvAmbientEnableMultiNetwork = "AMBIENT_ENABLE_MULTI_NETWORK"
)

// AmbientMultiNetwork is whether istiod gives ztunnel the workloads and
// Services of other clusters. istiod builds its ambient index across
// clusters only with AMBIENT_ENABLE_MULTI_NETWORK
// (pilot/pkg/serviceregistry/ambient/ambientindex.go New →
// buildGlobalCollections); without it the index holds istiod's own
// cluster alone: ztunnel is given no remote endpoint, with or without a
// network gateway, and Service scopes are not read. The variable is
// registered by registerAmbient: false by default, and ignored (false)
// unless PILOT_ENABLE_AMBIENT is true; each is parsed by strconv.ParseBool
// (env.RegisterBoolVar), a value it cannot parse being the default.
type AmbientMultiNetwork struct {
	// On is what every istiod replica read does; meaningful only when
	// Unknown is "".
	On bool
	// Why says, per replica, the values it runs with.
	Why string
	// Unknown says why it cannot be told: no replica read, a value from a
	// reference this tool does not resolve, or replicas that disagree.
	Unknown string
}

// AmbientMultiNetworkOf reads the setting from the discovery container of
// each istiod pod given (the running replicas of the caller's cluster).
func AmbientMultiNetworkOf(istiods []corev1.Pod) AmbientMultiNetwork {
	if len(istiods) == 0 {
		return AmbientMultiNetwork{Unknown: "no running istiod pod (app=istiod) read"}
	}
	var whys []string
	values := map[bool]bool{}
	for i := range istiods {
		p := &istiods[i]
		var ct *corev1.Container
		for j := range p.Spec.Containers {
			if p.Spec.Containers[j].Name == istioversion.IstiodContainer {
				ct = &p.Spec.Containers[j]
			}
		}
		if ct == nil {
			return AmbientMultiNetwork{Unknown: "istiod pod " + p.Name + " has no " + istioversion.IstiodContainer + " container: its " + EnvAmbientEnableMultiNetwork + " is not known"}
		}
		ambient, ambientWhy, unknown := istiodEnvBool(ct, EnvEnableAmbient)
		if unknown != "" {
			return AmbientMultiNetwork{Unknown: p.Name + ": " + unknown}
		}
		multi, multiWhy, unknown := istiodEnvBool(ct, EnvAmbientEnableMultiNetwork)
		if unknown != "" {
			return AmbientMultiNetwork{Unknown: p.Name + ": " + unknown}
		}
		on := ambient && multi
		values[on] = true
		whys = append(whys, p.Name+": "+multiWhy+", "+ambientWhy)
	}
	sort.Strings(whys)
	why := strings.Join(whys, "; ")
	if len(values) > 1 {
		return AmbientMultiNetwork{Why: why, Unknown: "the istiod replicas disagree (" + why + "): the caller's ztunnel gets what its own replica does"}
	}
	return AmbientMultiNetwork{On: values[true], Why: why}
}

// istiodEnvBool is the value istiod runs with for a boolean variable whose
// default is false: its literal value parsed as istiod parses it.
func istiodEnvBool(ct *corev1.Container, name string) (value bool, why, unknown string) {
	// The kubelet gives a variable named twice its last value.
	var found *corev1.EnvVar
	for i := range ct.Env {
		if ct.Env[i].Name == name {
			found = &ct.Env[i]
		}
	}
	switch {
	case found == nil && len(ct.EnvFrom) > 0:
		return false, "", name + " is not in the container's env, which also takes variables from envFrom this tool does not resolve"
	case found == nil:
		return false, name + " unset (false)", ""
	case found.ValueFrom != nil:
		return false, "", name + " comes from a reference this tool does not resolve"
	}
	v, err := strconv.ParseBool(found.Value)
	if err != nil {
		return false, name + "=" + strconv.Quote(found.Value) + " (not a boolean: istiod takes its default, false)", ""
	}
	return v, name + "=" + found.Value, ""
}
