package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// gatewayAPIModule is the module of the Gateway API types the project reads
// (a waypoint is a Gateway).
const gatewayAPIModule = "sigs.k8s.io/gateway-api"

// gatewayAPICRDs are the standard-channel CRDs the lab serves: the kinds a
// triage reads (Gateways, the classes they name, the routes and grants
// istiod converts), so scenarios holding them apply, and the lab's istiod,
// which watches only the kinds whose CRD exists, converts them.
var gatewayAPICRDs = []string{"gateway.networking.k8s.io_gatewayclasses.yaml", "gateway.networking.k8s.io_gateways.yaml",
	"gateway.networking.k8s.io_httproutes.yaml", "gateway.networking.k8s.io_grpcroutes.yaml", "gateway.networking.k8s.io_tlsroutes.yaml",
	"gateway.networking.k8s.io_tcproutes.yaml", "gateway.networking.k8s.io_referencegrants.yaml"}

// GatewayAPICRDDir finds config/crd/standard of the Gateway API version the
// project builds with, as IstioCRDFile finds Istio's.
func GatewayAPICRDDir(ctx context.Context) (string, error) {
	const rel = "config/crd/standard"
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", gatewayAPIModule).Output()
	if err == nil {
		if dir := strings.TrimSpace(string(out)); dir != "" {
			return filepath.Join(dir, rel), nil
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == gatewayAPIModule {
				modcache, merr := exec.CommandContext(ctx, "go", "env", "GOMODCACHE").Output()
				if merr == nil {
					return filepath.Join(strings.TrimSpace(string(modcache)), "sigs.k8s.io", "gateway-api@"+dep.Version, rel), nil
				}
			}
		}
	}
	return "", fmt.Errorf("cannot locate the %s module (go list -m %s: %v)", gatewayAPIModule, gatewayAPIModule, err)
}

// ApplyGatewayAPICRDs creates the Gateway API's CRDs the lab serves
// (gatewayAPICRDs) and waits until they are served.
func ApplyGatewayAPICRDs(ctx context.Context, dyn dynamic.Interface, disc discovery.DiscoveryInterface) error {
	dir, err := GatewayAPICRDDir(ctx)
	if err != nil {
		return err
	}
	var crds []*unstructured.Unstructured
	for _, name := range gatewayAPICRDs {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		got, err := ReadCRDs(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		crds = append(crds, got...)
	}
	return ApplyCRDs(ctx, dyn, disc, crds)
}
