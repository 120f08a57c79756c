// Package istioconfig reads the mesh's Istio configuration as istiod reads
// it: the mesh config from istiod's namespace (Istio's defaults when there
// is none), its access-log formats, and the rules (DestinationRules,
// VirtualServices, PeerAuthentications, Sidecars, ServiceEntries) of every
// namespace, one list a kind.
package istioconfig

import (
	"context"
	"strings"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ControlPlane is the namespace istiod runs in, where its mesh config is:
// the cluster's, else Istio's default.
func ControlPlane(c cluster.Cluster) string {
	if ns := c.Info().ControlPlaneNamespace; ns != "" {
		return ns
	}
	return cluster.DefaultControlPlane
}

// ReadMeshConfig fetches and parses the mesh config. An absent ConfigMap is
// not an error (Istio then runs on defaults); an unreadable one is.
func ReadMeshConfig(ctx context.Context, c cluster.Cluster) (mesh.MeshConfig, error) {
	cm, err := c.GetConfigMap(ctx, ControlPlane(c), mesh.MeshConfigMap)
	if apierrors.IsNotFound(err) {
		return mesh.MeshConfig{}, nil
	}
	if err != nil {
		return mesh.MeshConfig{}, err
	}
	mc, err := mesh.ParseMeshConfig(cm.Data["mesh"])
	if err != nil {
		return mesh.MeshConfig{}, err
	}
	// meshNetworks, in the same ConfigMap: its gateways are network
	// gateways too (split-horizon EDS).
	networks, err := mesh.ParseMeshNetworks(cm.Data["meshNetworks"])
	if err != nil {
		return mesh.MeshConfig{}, err
	}
	return mesh.MeshConfig{Raw: mc, Found: true, Networks: networks, NetworksRead: true}, nil
}

// AccessLogFormats are the access-log formats the mesh config declares,
// for the log readers to try before the built-in layouts:
// meshConfig.accessLogFormat in its accessLogEncoding, and the logFormat of
// every envoyFileAccessLog extension provider (a Telemetry resource picks
// which one a proxy uses; trying them all reads whichever it is). Istio's
// default TEXT format and an empty one need none: the built-in reader reads
// them. A format that cannot be read is a problem, named, not an error:
// the built-in layouts still read what they can.
func AccessLogFormats(mc mesh.MeshConfig) (accesslog.Formats, []string) {
	var out accesslog.Formats
	var problems []string
	add := func(name, encoding, format string) {
		if strings.TrimSpace(format) == "" || strings.TrimSpace(format) == strings.TrimSpace(accesslog.IstioDefaultText) && encoding != "JSON" {
			return
		}
		f, err := accesslog.ParseFormat(name, encoding, format)
		if err != nil {
			problems = append(problems, err.Error())
			return
		}
		out = append(out, f)
	}
	if mc.Raw == nil {
		return nil, nil
	}
	add("meshConfig.accessLogFormat", mc.Raw.GetAccessLogEncoding().String(), mc.Raw.GetAccessLogFormat())
	for _, p := range mc.Raw.GetExtensionProviders() {
		lf := p.GetEnvoyFileAccessLog().GetLogFormat()
		if lf == nil {
			continue
		}
		name := "extensionProviders " + p.GetName()
		if labels := lf.GetLabels(); labels != nil {
			f, err := accesslog.JSONFormat(name, labels.AsMap())
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			out = append(out, f)
			continue
		}
		add(name, "TEXT", lf.GetText())
	}
	return out, problems
}

// ReadAccessLogFormats reads the mesh config for its access-log formats.
// An unreadable mesh config leaves the built-in layouts, and says so.
func ReadAccessLogFormats(ctx context.Context, c cluster.Cluster) (accesslog.Formats, []string) {
	mc, err := ReadMeshConfig(ctx, c)
	if err != nil {
		return nil, []string{cluster.AccessProblem("read the mesh config for its access-log format", err) + ": lines are read by Istio's default layouts"}
	}
	return AccessLogFormats(mc)
}
