package istioversion

import "testing"

func TestVersionParsing(t *testing.T) {
	for v, want := range map[string][2]int{"v1.29.3": {1, 29}, "v1.30.0-gke.1": {1, 30}, "v1.28.5-eks-5e0fdde": {1, 28}, "1.24.2-distroless": {1, 24}, "v1.33.1+k3s1": {1, 33},
		"1.31-dev-eed52ebb66ad-Clean": {1, 31}, "1.24.2-5f8a1e3c-Clean\n": {1, 24}} {
		if got, ok := MajorMinor(v); !ok || got != want {
			t.Errorf("MajorMinor(%q) = %v %v, want %v", v, got, ok, want)
		}
	}
	if _, ok := MajorMinor("latest"); ok {
		t.Error("latest is no version")
	}
	for image, want := range map[string]string{
		"docker.io/istio/pilot:1.24.2":                     "1.24.2",
		"gcr.io/istio-release/pilot:1.22.3-distroless":     "1.22.3-distroless",
		"registry.local:5000/istio/pilot:1.27.1@sha256:ab": "1.27.1",
		"registry.local:5000/istio/pilot@sha256:ab":        "",
		"pilot": "",
	} {
		if got := ImageTag(image); got != want {
			t.Errorf("ImageTag(%q) = %q, want %q", image, got, want)
		}
	}
}

// The skew is the control plane's minor minus the proxy's: istiod's
// /version against the proxy's ISTIO_VERSION, whatever their suffixes.
func TestMinorSkew(t *testing.T) {
	for _, c := range []struct {
		cp, dp string
		want   int
		ok     bool
	}{
		{"1.30.0-5f8a1e3c-Clean", "1.28.3", 2, true},
		{"1.31-dev-eed52ebb66ad-Clean", "1.31-dev", 0, true},
		{"1.24.2", "1.25.0", -1, true},
		{"1.24.2", "", 0, false},
		{"2.0.0", "1.29.0", 0, false},
	} {
		got, ok := MinorSkew(c.cp, c.dp)
		if got != c.want || ok != c.ok {
			t.Errorf("MinorSkew(%q, %q) = %d %v, want %d %v", c.cp, c.dp, got, ok, c.want, c.ok)
		}
	}
}
