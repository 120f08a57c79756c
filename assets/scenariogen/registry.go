package main

import (
	"strings"
	"time"
)

// Scenario is one recorded incident: the story `meshtriage demo` tells and
// the world that reproduces it, one story_NAME.go file each.
type Scenario struct {
	Name  string
	Title string
	// Summary is one line for `meshtriage demo`'s list: the story as the
	// on-call would tell it in the incident channel.
	Summary string
	// Description is the full story, shown before triage starts.
	Description string
	// Expect are the cause IDs (assets.Causes) the unattended check must
	// find.
	Expect []string
	// Now is the moment the scenario was recorded.
	Now  time.Time
	Mesh MeshOptions
	// Shapes are the output formats of the scenario's proxies, when they
	// are not the ones the first scenarios were written in.
	Shapes Shapes
	// Build adds the scenario's objects, logs and Envoy state to s and
	// returns what triage targets.
	Build func(s *Shop) Target
}

// Target is what `meshtriage check` is pointed at.
type Target struct {
	Service string
	// Source is the pod triage runs from.
	Source *Pod
	// Namespace defaults to shop, Port to 8080.
	Namespace string
	Port      int
}

// scenarios are the embedded incidents, one story file each
// (story_NAME.go), in the order the generator writes them.
var scenarios = []Scenario{
	healthy,
	mtlsPlaintextToStrict,
	mtlsToPodWithoutSidecar,
	startupRace,
	rolloutShutdown503,
	portMismatch,
	noReadyEndpoints,
	subsetNoPods,
	vsUndefinedSubset,
	outlierAllEjected,
	circuitBreakerOverflow,
	missingServiceEntry,
	staleXDS,
	idleTimeoutUC,
	circuitBreakerTemplate,
	outlierGatewayErrors,
	idleResetLegacyLogFormat,
	ambientHBONENetworkPolicy,
	ambientWaypointNotReady,
	ambientRolloutDrain,
	ambientHBONEPoolIPReused,
	ambientSidecarBypassesWaypoint,
	gatewayVSNotBound,
	gatewaySubsetNoPods,
	gatewayHostMismatch,
	gatewayAPIBackendPortMissing,
	gatewayAPIRouteNotAttached,
	gatewayAPIRefNotPermitted,
	gatewayListenerUnreachable,
	gatewayTLSCredentialMissing,
	meshRouteBackendNotFound,
	waypointRouteBackendNotFound,
	// issue 29, control plane and ambient.
	xdsRejectedAfterUpgrade,
	// Issue 29, the sidecar and the app's side.
	appRunsAsProxyUID,
	probeRewriteOffStrict,
	http10Nginx426,
	protocolMySQLNamedHTTP,
	appLocalhostBound,
}

// render builds the scenario and returns its files by path relative to
// the scenario's folder.
func (sc Scenario) render() map[string]string {
	s := newShop(sc.Name, sc.Now, sc.Mesh, sc.Shapes)
	target := sc.Build(s)
	return s.files(sc.header(s, target))
}

// header is scenario.yaml.
func (sc Scenario) header(s *Shop, t Target) Object {
	port := t.Port
	if port == 0 {
		port = 8080
	}
	target := Object{{"namespace", firstNonEmpty(t.Namespace, "shop")}, {"service", t.Service}, {"port", port}}
	if t.Source != nil {
		target.Set("source", Object{{"namespace", t.Source.Namespace}, {"name", t.Source.Name}})
	}
	return Object{
		{"name", sc.Name},
		{"title", sc.Title},
		{"summary", sc.Summary},
		{"description", strings.TrimSpace(sc.Description) + "\n"},
		{"context", "prod-eu-west-1"},
		{"serverVersion", s.serverVersion},
		{"target", target},
		{"expect", sc.Expect},
	}
}
