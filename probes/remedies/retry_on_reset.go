package remedies

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/patch"
)

// RetryOnReset lets the caller's sidecar retry a request whose upstream
// connection was reset: "reset" added to the retryOn of each HTTP route of
// the VirtualService to the target (with Istio's default two attempts
// where the route sets no retries). Without a VirtualService for the
// host, it creates one with the single route istiod would have given.
type RetryOnReset struct{}

const retryOn = "connect-failure,refused-stream,reset"

func (RetryOnReset) Meta() Meta {
	return Meta{
		ID:     "retry-on-reset",
		Causes: []string{"upstream.idle-reset", "ambient.drain-before-removal", "ambient.hbone-pool-ip-reused"},
		Does:   "adds reset to the retryOn of the VirtualService's routes to the target, or creates one with that retry policy",
	}
}

func (RetryOnReset) Compute(ctx context.Context, in *Input) Output {
	cfg, _, views, err := in.Model(ctx)
	if err != nil {
		return unpatchable("the config model could not be read: %v", err)
	}
	host := in.Target.Host()
	var v *mesh.View
	for _, x := range views {
		if x.Protocol == mesh.ProtocolHTTP {
			v = x
			break
		}
	}
	if v == nil {
		return unpatchable("the target port is not HTTP: Envoy retries HTTP requests only")
	}
	if v.VirtualService == nil {
		if findVS(cfg, in.Target.Namespace, in.Target.Service) != nil {
			return unpatchable("a VirtualService named %s/%s exists and does not route %s for the caller", in.Target.Namespace, in.Target.Service, host)
		}
		obj := patch.Object{APIVersion: istioNetworking, Kind: "VirtualService", Namespace: in.Target.Namespace, Name: in.Target.Service}
		p, err := patch.CreateObject(obj, newObject(obj, map[string]any{
			"hosts": []string{host},
			"http": []any{map[string]any{
				"route":   []any{map[string]any{"destination": map[string]any{"host": host}}},
				"retries": map[string]any{"attempts": 2, "retryOn": retryOn},
			}},
		}))
		if err != nil {
			return unpatchable("%v", err)
		}
		return Output{Patches: []patch.Patch{p}, Note: "No VirtualService routes " + host + ": the patch creates " + obj.Namespace + "/" + obj.Name + " with the one route istiod gives by default and retries on " + retryOn + "; Istio's default retry policy no longer applies to it."}
	}
	vs := v.VirtualService
	var ops []patch.Op
	var routes []string
	for i, h := range vs.Spec.GetHttp() {
		reaches := false
		for _, d := range h.GetRoute() {
			reaches = reaches || mesh.ResolveHost(d.GetDestination().GetHost(), vs.Namespace) == host
		}
		if !reaches {
			continue
		}
		base := patch.Pointer("spec", "http", i, "retries")
		switch r := h.GetRetries(); {
		case r == nil:
			ops = append(ops, patch.Add(base, map[string]any{"attempts": 2, "retryOn": retryOn}))
		case r.GetAttempts() == 0:
			continue // retries turned off on purpose
		case !strings.Contains(r.GetRetryOn(), "reset"):
			next := "reset"
			if r.GetRetryOn() != "" {
				next = r.GetRetryOn() + ",reset"
			}
			ops = append(ops, patch.Add(base+"/retryOn", next))
		default:
			continue
		}
		routes = append(routes, fmt.Sprintf("http[%d]", i))
	}
	if len(ops) == 0 {
		return unpatchable("the routes of %s/%s to %s already retry on reset, or turn retries off on purpose", vs.Namespace, vs.Name, host)
	}
	p, err := change(objectOf(istioNetworking, "VirtualService", vs), vs, ops...)
	if err != nil {
		return unpatchable("the change of VirtualService %s/%s does not apply: %v", vs.Namespace, vs.Name, err)
	}
	return Output{Patches: []patch.Patch{p}, Note: fmt.Sprintf("The patch adds reset to the retries of %s of VirtualService %s/%s.", strings.Join(routes, ", "), vs.Namespace, vs.Name)}
}
