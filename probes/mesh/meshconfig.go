package mesh

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	meshv1alpha1 "istio.io/api/mesh/v1alpha1"
	"sigs.k8s.io/yaml"
)

// MeshConfig is the mesh config as istiod reads it from the `istio` ConfigMap,
// with the defaults Istio applies where a field is unset made explicit, so
// probes never mistake "unset" for "off".
type MeshConfig struct {
	Raw *meshv1alpha1.MeshConfig
	// Found is false when the ConfigMap is absent; the defaults still apply.
	Found bool
	// Networks is the ConfigMap's meshNetworks (nil for none), read when
	// NetworksRead: its gateways are network gateways too.
	Networks     *meshv1alpha1.MeshNetworks
	NetworksRead bool
}

// EnableAutoMtls is true unless the mesh turns it off (Istio's default).
func (m MeshConfig) EnableAutoMtls() bool {
	if m.Raw == nil || m.Raw.GetEnableAutoMtls() == nil {
		return true
	}
	return m.Raw.GetEnableAutoMtls().GetValue()
}

// RegistryOnly reports outboundTrafficPolicy mode REGISTRY_ONLY (default
// ALLOW_ANY). An absent policy is ALLOW_ANY, although the enum's zero is
// REGISTRY_ONLY.
func (m MeshConfig) RegistryOnly() bool {
	p := m.Raw.GetOutboundTrafficPolicy()
	return p != nil && p.GetMode() == meshv1alpha1.MeshConfig_OutboundTrafficPolicy_REGISTRY_ONLY
}

// RootNamespace is where mesh-wide policies live (default: the control plane's).
func (m MeshConfig) RootNamespace(controlPlane string) string {
	if m.Raw != nil && m.Raw.GetRootNamespace() != "" {
		return m.Raw.GetRootNamespace()
	}
	return controlPlane
}

// DefaultProxyConfig is mesh defaultConfig, never nil.
func (m MeshConfig) DefaultProxyConfig() *meshv1alpha1.ProxyConfig {
	if m.Raw == nil || m.Raw.GetDefaultConfig() == nil {
		return &meshv1alpha1.ProxyConfig{}
	}
	return m.Raw.GetDefaultConfig()
}

// ParseMeshConfig parses the `mesh` key of the istio ConfigMap (YAML).
func ParseMeshConfig(text string) (*meshv1alpha1.MeshConfig, error) {
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("mesh config is not YAML: %w", err)
	}
	mc := &meshv1alpha1.MeshConfig{}
	if string(js) != "null" {
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(js, mc); err != nil {
			return nil, fmt.Errorf("mesh config: %w", err)
		}
	}
	// Istio applies this text over its defaults (mode ALLOW_ANY); proto3
	// cannot tell an absent mode from REGISTRY_ONLY, the enum's zero.
	if !namesOutboundMode(js) {
		mc.OutboundTrafficPolicy = &meshv1alpha1.MeshConfig_OutboundTrafficPolicy{Mode: meshv1alpha1.MeshConfig_OutboundTrafficPolicy_ALLOW_ANY}
	}
	return mc, nil
}

func namesOutboundMode(js []byte) bool {
	var doc map[string]json.RawMessage
	if json.Unmarshal(js, &doc) != nil {
		return false
	}
	for _, key := range []string{"outboundTrafficPolicy", "outbound_traffic_policy"} {
		var policy map[string]json.RawMessage
		if raw, ok := doc[key]; ok && json.Unmarshal(raw, &policy) == nil {
			if _, ok := policy["mode"]; ok {
				return true
			}
		}
	}
	return false
}

// ParseProxyConfig parses a proxy.istio.io/config annotation (YAML).
func ParseProxyConfig(text string) (*meshv1alpha1.ProxyConfig, error) {
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("proxy config is not YAML: %w", err)
	}
	pc := &meshv1alpha1.ProxyConfig{}
	if string(js) == "null" {
		return pc, nil
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(js, pc); err != nil {
		return nil, fmt.Errorf("proxy config: %w", err)
	}
	return pc, nil
}

// DefaultHBONEIdleTimeout is how long a gateway's, waypoint's or sidecar's
// Envoy keeps an idle pooled HBONE connection (connect_originate) when the
// mesh config sets no hboneIdleTimeout (istiod's getHBONEIdleTimeout).
const DefaultHBONEIdleTimeout = time.Hour

// HBONEIdleTimeout is the idle timeout of the Envoys' pooled HBONE
// connections: meshConfig.hboneIdleTimeout when set (Istio 1.29+; istiod
// passes it as it is, and Envoy takes 0 as no idle timeout at all), else
// DefaultHBONEIdleTimeout.
func (m MeshConfig) HBONEIdleTimeout() time.Duration {
	if d := m.Raw.GetHboneIdleTimeout(); d != nil {
		return d.AsDuration()
	}
	return DefaultHBONEIdleTimeout
}
