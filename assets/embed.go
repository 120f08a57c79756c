// Package assets embeds the data meshtriage ships: the runbooks (the Istio
// knowledge the generic engine walks), the vocabulary of the data plane's
// flags and errors, and the recorded scenarios (written by
// assets/scenariogen, beside them: `go generate ./assets`).
package assets

import "embed"

// FS holds runbooks/, scenarios/ and vocabulary/ (the closed vocabulary of
// Envoy's response flags and ztunnel's errors, probes/vocabulary), each
// under its folder name. "all:" keeps files whose names start with "." or
// "_".
//
//go:generate go run ./scenariogen -out scenarios
//go:embed all:runbooks all:scenarios all:vocabulary
var FS embed.FS

// RunbooksDir is the folder of FS that holds the runbooks.
const RunbooksDir = "runbooks"

// Runbook503 is the Envoy 503 runbook, the one `check` and the TUI walk.
const Runbook503 = RunbooksDir + "/503.yaml"

// Causes are the stable cause IDs of the catalogue (ARCHITECTURE.md): the
// JSON report and the tests use them, and every runbook must give each one a
// cause node. Changing an ID breaks users' alerting on `check` output.
var Causes = []string{
	"service.no-selector-match",
	"service.port-mismatch",
	"endpoints.none-ready",
	"sidecar.missing-upstream",
	"mtls.plaintext-to-strict",
	"mtls.origination-conflict",
	"dr.subset-no-pods",
	"vs.subset-undefined",
	"outlier.all-ejected",
	"circuit-breaker.overflow",
	"serviceentry.missing",
	"xds.stale",
	"startup.app-before-proxy",
	"shutdown.proxy-exits-first",
	"upstream.idle-reset",
	"security.port-excluded",
	"config.not-visible",
	"service.no-endpoints",
	"ambient.hbone-blocked",
	"ambient.authz-rejected",
	"ambient.waypoint-missing",
	"ambient.waypoint-not-ready",
	"ambient.waypoint-not-bound",
	"ambient.pod-not-enrolled",
	"ambient.sidecar-bypasses-waypoint",
	"ambient.ztunnel-unavailable",
	"gateway.vs-not-bound",
	"gateway.host-mismatch",
	// issue 29, control plane and ambient.
	"xds.config-rejected",
	"xds.version-skew",
	"eds.synced-but-empty",
	// The Gateway API (issue 28).
	"gateway.route-not-attached",
	"gateway.backend-not-found",
	"gateway.backend-port-missing",
	"gateway.ref-not-permitted",
	"gateway.tls-credential-missing",
	"gateway.listener-unreachable",
	// Issue 29, the sidecar and the app's side.
	"sidecar.app-runs-as-proxy-uid",
	"probe.blocked-by-strict",
	"probe.rewrite-mismatch",
	"http.1.0-rejected",
	"app.localhost-bound",
	"protocol.server-first",
	// Issue 29, the ambient platform.
	"ambient.platform-cilium-socket-lb",
	"ambient.platform-eks-sg-strict",
	// Issue 29, the ambient rollout.
	"ambient.drain-before-removal",
	"ambient.hbone-pool-ip-reused",
	"ambient.pod-started-before-ztunnel",
	// Issue 30, multi-cluster meshes.
	"multicluster.network-label-missing",
	"multicluster.network-label-disagrees",
	"multicluster.gateway-unusable",
	"multicluster.gateway-hostname-unresolved",
	"multicluster.remote-secret-missing",
	"multicluster.remote-secret-stale",
	"multicluster.eastwest-not-passthrough",
	"multicluster.trust-mismatch",
	"multicluster.waypoint-differs",
	"multicluster.double-hbone",
	"multicluster.ambient-gateway-missing",
	"multicluster.ambient-multinetwork-off",
}
