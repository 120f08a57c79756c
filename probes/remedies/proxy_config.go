package remedies

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// proxyConfigAnnotation is the pod template annotation istiod reads a
// workload's ProxyConfig from.
const proxyConfigAnnotation = "proxy.istio.io/config"

// proxyConfigPatches set keys of the proxy.istio.io/config annotation of
// the pod template of each Deployment that owns the Service's pods,
// keeping what the annotation already says (the pods carry it as their
// template does). The Deployments are not read by the triage, so the
// patches cannot be simulated, and take effect when their rollout
// recreates the pods.
func proxyConfigPatches(ctx context.Context, in *Input, set func(cfg map[string]any) bool, what string) Output {
	pods, _ := in.Pods(ctx)
	if len(pods) == 0 {
		return unpatchable("the Service selects no pod the triage read: whose pod template to change is not known")
	}
	return proxyConfigPatchesOf(pods, set, what)
}

// proxyConfigPatchesOf is proxyConfigPatches for the workloads of pods.
func proxyConfigPatchesOf(pods []*corev1.Pod, set func(cfg map[string]any) bool, what string) Output {
	var out Output
	var names []string
	for _, w := range workloadsOf(pods) {
		var pod *corev1.Pod
		for _, p := range pods {
			if workloadOf(p) == w {
				pod = p
				break
			}
		}
		if w.Kind != "Deployment" && w.Kind != "StatefulSet" && w.Kind != "DaemonSet" {
			return unpatchable("pod %s is owned by %s, whose template is not patched here: set %s in its %s annotation", pod.Name, w, what, proxyConfigAnnotation)
		}
		cfg := map[string]any{}
		if text := pod.Annotations[proxyConfigAnnotation]; strings.TrimSpace(text) != "" {
			if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
				return unpatchable("the %s annotation of pod %s is not YAML (%v): fix it first", proxyConfigAnnotation, pod.Name, err)
			}
			if cfg == nil {
				cfg = map[string]any{}
			}
		}
		if !set(cfg) {
			continue
		}
		text, err := yaml.Marshal(cfg)
		if err != nil {
			return unpatchable("%v", err)
		}
		p, err := templatePatch(w, map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
			"annotations": map[string]any{proxyConfigAnnotation: string(text)},
		}}}})
		if err != nil {
			return unpatchable("%v", err)
		}
		out.Patches = append(out.Patches, p)
		names = append(names, w.String())
	}
	if len(out.Patches) == 0 {
		return unpatchable("the pod templates already set %s", what)
	}
	out.NotSimulated = "it patches " + strings.Join(names, ", ") + ", which the triage does not read (it reads the pods), and takes effect when the rollout recreates the pods"
	out.Note = fmt.Sprintf("The patch sets %s in the %s annotation of the pod template of %s, keeping what the annotation already said; the rollout it starts recreates the pods.", what, proxyConfigAnnotation, strings.Join(names, ", "))
	return out
}

// HoldApplication sets holdApplicationUntilProxyStarts for the Service's
// workloads, in their pod template's proxy.istio.io/config annotation.
type HoldApplication struct{}

func (HoldApplication) Meta() Meta {
	return Meta{
		ID:     "hold-application",
		Causes: []string{"startup.app-before-proxy"},
		Does:   "sets holdApplicationUntilProxyStarts: true in the Deployments' proxy.istio.io/config annotation (merge patch)",
	}
}

func (HoldApplication) Compute(ctx context.Context, in *Input) Output {
	return proxyConfigPatches(ctx, in, func(cfg map[string]any) bool {
		if v, _ := cfg["holdApplicationUntilProxyStarts"].(bool); v {
			return false
		}
		cfg["holdApplicationUntilProxyStarts"] = true
		return true
	}, "holdApplicationUntilProxyStarts: true")
}

// DrainSettings makes pilot-agent wait for the app's connections to end
// before the proxy exits (EXIT_ON_ZERO_ACTIVE_CONNECTIONS), in the
// Service's workloads' proxy.istio.io/config annotation. It is bounded by
// the pod's terminationGracePeriodSeconds, which stays as it is.
type DrainSettings struct{}

func (DrainSettings) Meta() Meta {
	return Meta{
		ID:     "drain-settings",
		Causes: []string{"shutdown.proxy-exits-first"},
		Does:   "sets proxyMetadata.EXIT_ON_ZERO_ACTIVE_CONNECTIONS in the Deployments' proxy.istio.io/config annotation (merge patch)",
	}
}

func (DrainSettings) Compute(ctx context.Context, in *Input) Output {
	return proxyConfigPatches(ctx, in, func(cfg map[string]any) bool {
		md, _ := cfg["proxyMetadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
		}
		if v, _ := md["EXIT_ON_ZERO_ACTIVE_CONNECTIONS"].(string); v == "true" {
			return false
		}
		md["EXIT_ON_ZERO_ACTIVE_CONNECTIONS"] = "true"
		cfg["proxyMetadata"] = md
		return true
	}, "proxyMetadata.EXIT_ON_ZERO_ACTIVE_CONNECTIONS: \"true\"")
}
