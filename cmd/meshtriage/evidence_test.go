package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// The cases issue 15 measured, each a `check --manifests` run on YAML the
// on-call would have: the configuration, no Envoy admin, no logs.

// measuredWorld is shop/orders with two v1 pods, and the caller web/web-1.
const measuredWorld = `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {istio-injection: enabled}}
---
apiVersion: v1
kind: Namespace
metadata: {name: web, labels: {istio-injection: enabled}}
---
apiVersion: v1
kind: Service
metadata: {name: orders, namespace: shop}
spec:
  selector: {app: orders}
  ports: [{name: http, port: 8080, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: orders-v1-a, namespace: shop, labels: {app: orders, version: v1, security.istio.io/tlsMode: istio}}
spec:
  containers: [{name: app, image: orders, ports: [{containerPort: 8080}]}, {name: istio-proxy, image: proxyv2}]
status:
  phase: Running
  podIP: 10.244.1.10
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Pod
metadata: {name: orders-v1-b, namespace: shop, labels: {app: orders, version: v1, security.istio.io/tlsMode: istio}}
spec:
  containers: [{name: app, image: orders, ports: [{containerPort: 8080}]}, {name: istio-proxy, image: proxyv2}]
status:
  phase: Running
  podIP: 10.244.1.11
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: web, labels: {app: web, security.istio.io/tlsMode: istio}}
spec:
  containers: [{name: web, image: web}, {name: istio-proxy, image: proxyv2}]
status: {phase: Running, podIP: 10.244.2.20}
`

// routeToV2 is a DestinationRule defining v1 and v2 (v2 has no pod: the
// canary was scaled away) and a VirtualService sending weight% to v2.
func routeToV2(weight int) string {
	route := `
  - route:
    - destination: {host: orders, subset: v2}`
	if weight < 100 {
		route = `
  - route:
    - destination: {host: orders, subset: v1}
      weight: ` + itoa(100-weight) + `
    - destination: {host: orders, subset: v2}
      weight: ` + itoa(weight)
	}
	return `
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: orders, namespace: shop}
spec:
  host: orders
  subsets: [{name: v1, labels: {version: v1}}, {name: v2, labels: {version: v2}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: orders, namespace: shop}
spec:
  hosts: [orders]
  http:` + route + "\n"
}

func itoa(n int) string { return strconv.Itoa(n) }

func writeManifests(t *testing.T, docs string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.yaml"), []byte(docs), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

type jsonFinding struct {
	Cause      string `json:"cause"`
	Confidence string `json:"confidence"`
	Summary    string `json:"summary"`
	Step       string `json:"step"`
	Evidence   []struct {
		Missing []struct {
			Describe string   `json:"describe"`
			Commands []string `json:"commands"`
		} `json:"missing"`
	} `json:"evidence"`
}

func findingsOf(t *testing.T, r checkRun) []jsonFinding {
	t.Helper()
	var rep struct {
		Findings []jsonFinding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return rep.Findings
}

// A VirtualService sends all of its traffic to a subset without pods: the
// configuration makes the 503 UH certain, with no log to confirm it.
func TestCheckFindsAllTrafficOnAnEmptySubsetFromConfigAlone(t *testing.T) {
	dir := writeManifests(t, measuredWorld+routeToV2(100))
	r := runCheck(t, "-n", "shop", "svc/orders", "--from", "web/pod/web-1", "--manifests", dir, "-o", "json", "--metrics-window", "0")
	fs := findingsOf(t, r)
	if r.code != exitFindings || len(fs) != 1 || fs[0].Cause != "dr.subset-no-pods" || fs[0].Confidence != "high" {
		t.Fatalf("exit %d, findings %+v; want dr.subset-no-pods at high confidence\nstderr: %s", r.code, fs, r.stderr)
	}
}

// A 90/10 canary with its 10% on the empty subset: a finding that says the
// share of requests it breaks.
func TestCheckFindsAPartialWeightWithItsShare(t *testing.T) {
	dir := writeManifests(t, measuredWorld+routeToV2(10))
	r := runCheck(t, "-n", "shop", "svc/orders", "--from", "web/pod/web-1", "--manifests", dir, "-o", "json", "--metrics-window", "0")
	fs := findingsOf(t, r)
	if r.code != exitFindings || len(fs) != 1 || fs[0].Cause != "dr.subset-no-pods" || !strings.HasPrefix(fs[0].Summary, "10% of requests") {
		t.Fatalf("exit %d, findings %+v; want dr.subset-no-pods whose summary opens with 10%% of requests\nstderr: %s", r.code, fs, r.stderr)
	}
}

// The startup race from statuses alone: restarted 1 s after creation with
// exit 1, classic sidecar, no hold, app and proxy started in the same
// second, and no log that says "connection refused".
func TestCheckFindsTheStartupRaceFromStatusesAlone(t *testing.T) {
	pod := `
---
apiVersion: v1
kind: Pod
metadata: {name: orders-api-7f9c-x7k2p, namespace: shop, labels: {app: orders}, creationTimestamp: "2026-12-01T03:00:00Z"}
spec:
  containers: [{name: app, image: orders-api, ports: [{containerPort: 8080}]}, {name: istio-proxy, image: proxyv2}]
status:
  phase: Running
  podIP: 10.244.1.12
  conditions: [{type: Ready, status: "True"}]
  containerStatuses:
  - name: app
    ready: true
    restartCount: 1
    state: {running: {startedAt: "2026-12-01T03:00:11Z"}}
    lastState: {terminated: {exitCode: 1, reason: Error, startedAt: "2026-12-01T03:00:01Z", finishedAt: "2026-12-01T03:00:01Z"}}
  - name: istio-proxy
    ready: true
    restartCount: 0
    state: {running: {startedAt: "2026-12-01T03:00:01Z"}}
`
	dir := writeManifests(t, measuredWorld+pod)
	r := runCheck(t, "-n", "shop", "svc/orders", "--manifests", dir, "-o", "json", "--metrics-window", "0")
	var race *jsonFinding
	fs := findingsOf(t, r)
	for i := range fs {
		if fs[i].Cause == "startup.app-before-proxy" {
			race = &fs[i]
		}
	}
	if r.code != exitFindings || race == nil || race.Confidence != "medium" {
		t.Fatalf("exit %d, findings %+v; want startup.app-before-proxy at medium confidence\nstderr: %s", r.code, fs, r.stderr)
	}
	// The previous log was not in the dump: the finding says that it would
	// confirm the race, and how to read it.
	var missing []string
	for _, ev := range race.Evidence {
		for _, m := range ev.Missing {
			if strings.Contains(m.Describe, "connection refused") {
				missing = append(missing, m.Commands...)
			}
		}
	}
	if !slices.ContainsFunc(missing, func(c string) bool { return strings.Contains(c, "--previous") }) {
		t.Errorf("the finding does not say that the previous log would confirm it, with the command (missing evidence commands %q)", missing)
	}
}

// Without --from, check searches for the callers: on every embedded
// scenario it reaches exactly the scenario's causes, each finding says whom
// it holds for, and the search's reads are in the report.
func TestCheckWithoutFromFindsEveryScenariosCause(t *testing.T) {
	names, err := recorded.Names(assets.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		s, err := recorded.Load(assets.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			r := runCheck(t, "--scenario", name, "svc/"+s.Target.Service, "-n", s.Target.Namespace, "-o", "json", "--metrics-window", "0")
			var rep struct {
				Findings []struct {
					Cause       string   `json:"cause"`
					Callers     []string `json:"callers"`
					ServiceSide bool     `json:"service_side"`
				} `json:"findings"`
				CallerSearch *struct {
					Callers []struct {
						Pod cluster.PodRef `json:"pod"`
					} `json:"callers"`
				} `json:"caller_search"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatalf("exit %d: %v\n%s", r.code, err, r.stderr)
			}
			var got []string
			for _, f := range rep.Findings {
				got = append(got, f.Cause)
				if len(f.Callers) == 0 && !f.ServiceSide {
					t.Errorf("%s holds for nobody", f.Cause)
				}
			}
			sort.Strings(got)
			want := append([]string(nil), s.Expect...)
			sort.Strings(want)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("causes %v, want %v\nstderr: %s", got, want, r.stderr)
			}
			if rep.CallerSearch == nil || len(rep.CallerSearch.Callers) == 0 {
				t.Errorf("no caller search in the report, or no caller read")
			}
			if wantCode := map[bool]int{true: exitOK, false: exitFindings}[len(want) == 0]; r.code != wantCode {
				t.Errorf("exit %d, want %d", r.code, wantCode)
			}
		})
	}
}

// --max-callers 0 is the service side only: the search is not run, and
// the outlier incident is still found, at the confidence the configuration
// and the upstream errors give without the caller's Envoy.
func TestCheckMaxCallersZeroIsTheServiceSideOnly(t *testing.T) {
	r := runCheck(t, "--scenario", "outlier-all-ejected", "svc/orders", "-n", "shop", "-o", "json", "--metrics-window", "0", "--max-callers", "0")
	fs := findingsOf(t, r)
	if r.code != exitFindings || len(fs) != 1 || fs[0].Cause != "outlier.all-ejected" || fs[0].Confidence != "medium" {
		t.Fatalf("exit %d, findings %+v; want outlier.all-ejected at medium\nstderr: %s", r.code, fs, r.stderr)
	}
	if strings.Contains(r.stdout, "caller_search") {
		t.Errorf("a caller search ran with --max-callers 0")
	}
	if r := runCheck(t, "--scenario", "healthy", "--max-callers", "-1"); r.code != exitTriage {
		t.Errorf("--max-callers -1: exit %d, want %d", r.code, exitTriage)
	}
}
