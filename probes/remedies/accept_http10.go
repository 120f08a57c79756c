package remedies

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshtriage/meshtriage/probes/mesh"
)

// AcceptHTTP10 tells the proxies that answered HTTP/1.0 requests with 426
// to accept them: proxyMetadata ISTIO_META_HTTP10 "1" in the
// proxy.istio.io/config annotation of their workloads' pod template, which
// pilot-agent hands istiod as node metadata HTTP10, for which istiod sets
// accept_http_10 on that proxy's HTTP listeners (listener.go
// enableHTTP10). Which proxies is the access log's word: the caller's
// sidecar or gateway (its outbound), the Service's pods (their inbound).
type AcceptHTTP10 struct{}

func (AcceptHTTP10) Meta() Meta {
	return Meta{
		ID:     "accept-http10",
		Causes: []string{"http.1.0-rejected"},
		Does:   "sets proxyMetadata.ISTIO_META_HTTP10: \"1\" in the proxy.istio.io/config annotation of the pod template of the workloads whose proxies answered 426 (merge patch)",
	}
}

func (AcceptHTTP10) Compute(ctx context.Context, in *Input) Output {
	hops, _ := in.Facts["log_http10_hops"].([]string)
	if len(hops) == 0 {
		return unpatchable("the access log names no proxy that answered 426 low_version")
	}
	var pods []*corev1.Pod
	if slices.Contains(hops, "sidecar-outbound") || slices.Contains(hops, "gateway") {
		if in.Target.Source == nil {
			return unpatchable("no caller was named (--from): whose sidecar answered 426 is not known")
		}
		pod, err := in.Cluster.GetPod(ctx, in.Target.Source.Namespace, in.Target.Source.Name)
		if err != nil {
			return unpatchable("the caller pod could not be read: %v", err)
		}
		pods = append(pods, pod)
	}
	if slices.Contains(hops, "sidecar-inbound") {
		all, _ := in.Pods(ctx)
		for _, p := range all {
			if mesh.PodSidecar(p) != mesh.SidecarNone {
				pods = append(pods, p)
			}
		}
		if len(all) == 0 {
			return unpatchable("the Service's pods answered 426 and none was read: whose pod template to change is not known")
		}
	}
	out := proxyConfigPatchesOf(pods, func(cfg map[string]any) bool {
		md, _ := cfg["proxyMetadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
		}
		if v, _ := md["ISTIO_META_HTTP10"].(string); v == "1" {
			return false
		}
		md["ISTIO_META_HTTP10"] = "1"
		cfg["proxyMetadata"] = md
		return true
	}, "proxyMetadata.ISTIO_META_HTTP10: \"1\"")
	if len(out.Patches) > 0 {
		out.Note += fmt.Sprintf(" Only those proxies (the 426s were logged by %v) then accept HTTP/1.0 on their HTTP listeners.", hops)
	}
	return out
}
