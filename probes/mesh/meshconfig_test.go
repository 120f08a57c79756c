package mesh

import (
	"testing"
	"time"
)

func TestParseMeshConfigAppliesIstioDefaults(t *testing.T) {
	mc, err := ParseMeshConfig(`
defaultConfig:
  holdApplicationUntilProxyStarts: true
  terminationDrainDuration: 20s
  proxyMetadata:
    EXIT_ON_ZERO_ACTIVE_CONNECTIONS: "true"
outboundTrafficPolicy:
  mode: REGISTRY_ONLY
someFieldFromANewerIstio: 1
`)
	if err != nil {
		t.Fatal(err)
	}
	m := MeshConfig{Raw: mc, Found: true}
	if !m.EnableAutoMtls() {
		t.Error("auto mTLS is on unless the mesh turns it off")
	}
	if !m.RegistryOnly() {
		t.Error("REGISTRY_ONLY not read")
	}
	pc := m.DefaultProxyConfig()
	if !pc.GetHoldApplicationUntilProxyStarts().GetValue() || pc.GetTerminationDrainDuration().AsDuration().Seconds() != 20 {
		t.Errorf("defaultConfig not read: %v", pc)
	}
	if pc.GetProxyMetadata()["EXIT_ON_ZERO_ACTIVE_CONNECTIONS"] != "true" {
		t.Error("proxyMetadata not read")
	}
	if (MeshConfig{}).RegistryOnly() || !(MeshConfig{}).EnableAutoMtls() {
		t.Error("absent mesh config must mean Istio defaults")
	}
	if _, err := ParseMeshConfig("enableAutoMtls: [oops"); err == nil {
		t.Error("malformed mesh config must fail")
	}
}

// istiod's getHBONEIdleTimeout: the mesh's hboneIdleTimeout as set (0s is
// Envoy's no idle timeout), else one hour.
func TestHBONEIdleTimeout(t *testing.T) {
	for text, want := range map[string]time.Duration{
		"":                      time.Hour,
		"hboneIdleTimeout: 25s": 25 * time.Second,
		"hboneIdleTimeout: 0s":  0,
	} {
		raw, err := ParseMeshConfig(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if got := (MeshConfig{Raw: raw, Found: true}).HBONEIdleTimeout(); got != want {
			t.Errorf("%q: %s, want %s", text, got, want)
		}
	}
	if got := (MeshConfig{}).HBONEIdleTimeout(); got != time.Hour {
		t.Errorf("no mesh config: %s, want Istio's 1h", got)
	}
}
