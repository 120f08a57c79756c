// Package recorded serves a recorded incident from memory: Kubernetes and
// Istio objects in fake clientsets, plus the Envoy admin responses, container
// logs and istiod sync status that were captured with them. Every probe runs
// unchanged on it, so `meshtriage demo` and `check --scenario` work on a
// machine with no cluster, and the tests pin each scenario to its diagnosis.
//
// A scenario is a folder NAME/ holding:
//
//	scenario.yaml                          name, title, story, target, expected causes
//	manifests/*.yaml                       `kubectl get -o yaml` documents (kind: List allowed)
//	envoy/NS/POD/clusters.json             GET /clusters?format=json
//	envoy/NS/POD/stats.txt                 GET /stats
//	envoy/NS/POD/listeners.json            GET /listeners?format=json
//	envoy/NS/POD/config_dump.json          GET /config_dump
//	envoy/NS/POD/stats_prometheus.txt      GET /stats/prometheus
//	envoy/NS/POD/stats_prometheus.2.txt    the same path read a second time (counters moved on)
//	logs/NS/POD/CONTAINER.log              the container's log
//	logs/NS/POD/CONTAINER.previous.log     the previous (crashed) instance's log
//	netstat/NS/POD/netstat.txt             `netstat -natpw` in the pod's istio-proxy (an istioctl bug-report's)
//	istiod/syncz.json                      istiod GET /debug/syncz (any replica)
//	istiod/version.txt                     istiod GET /version (its build: 1.24.2-SHA-Clean)
//	istiod/edsz/PROXY.json                 istiod GET /debug/edsz?proxyID=PROXY (POD.NS)
//	istiod/POD/...                         the same files, of istiod replica POD
//
// A recording of a real cluster (`meshtriage capture`, an istioctl
// bug-report converted, files assembled by hand) has the same layout and is
// read by LoadRecording: its scenario.yaml is optional, its manifests may be
// JSON too and are read leniently, and it may say when it was captured (log
// windows are measured back from then) and which reads failed (they fail the
// same way on replay).
//
// The embedded scenarios (assets/scenarios) are written by the Go program in
// assets/scenariogen (`go generate ./assets`), which derives every cross-reference
// (pod IPs in EndpointSlices, Envoy host lists, access-log addresses, syncz
// proxy IDs) from one story per scenario; edit the story there and
// regenerate rather than editing the files. Its test fails when a committed
// file differs from what it writes.
package recorded

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/manifests"
)

// Dir is the folder of an assets file system that holds the scenarios.
const Dir = "scenarios"

// Scenario is one recorded incident.
type Scenario struct {
	Name  string
	Title string
	// Summary is the story in one line, for lists.
	Summary     string
	Description string
	Target      cluster.Target
	// Expect lists the cause IDs the unattended check must find, and only
	// those; empty for a healthy scenario.
	Expect        []string
	ServerVersion string
	Context       string
	// ControlPlaneNamespace is where istiod and the mesh config live
	// (istio-system when empty).
	ControlPlaneNamespace string
	// Source says where the scenario was read from, for Info().Server.
	Source string

	// Objects are typed: corev1, discoveryv1, Istio networking/security v1.
	Objects []runtime.Object
	// Envoy holds recorded admin responses per pod, keyed by the admin path
	// a probe requests, e.g. "/clusters?format=json".
	Envoy map[cluster.PodRef]map[string][]byte
	Logs  map[LogKey][]byte
	// Netstat holds `netstat -natpw` run in a pod's istio-proxy, as an
	// istioctl bug-report holds it (cluster.SocketLister).
	Netstat map[cluster.PodRef][]byte
	// Istiod holds recorded istiod debug responses keyed by path ("/debug/syncz").
	Istiod map[string][]byte
	// IstiodReplicas holds the responses of named istiod replicas (pod
	// name, then path): syncz lists only the proxies connected to the
	// replica asked. When it is set, a replica it does not hold answers
	// nothing, as it did not when the recording was made.
	IstiodReplicas map[string]map[string][]byte

	// CapturedAt is when a recording's reads were made: log windows
	// (LogOptions.Since) are measured back from it. Zero: from the newest
	// timestamp in the logs, as for the embedded scenarios.
	CapturedAt time.Time
	// StrictSamples says that a counter path (/stats, /stats/prometheus)
	// read more often than recorded is not answered with an earlier
	// recording: two identical samples would claim that nothing was
	// counted between them. The embedded scenarios repeat their last
	// sample; a recording of a real cluster must not.
	StrictSamples bool
	// Failures are the reads that failed when the recording was made,
	// keyed by ReadKey: they fail the same way on replay, so that a read
	// RBAC refused is not taken for an empty answer.
	Failures map[string]Failure
	// Dump marks a scenario made from documents the user exported (check
	// -f): it holds what they chose to export, so a namespace it holds
	// nothing of was not exported, not empty.
	Dump bool
	// ImpliedNamespaces are namespaces objects are in but whose Namespace
	// object was not recorded: they exist, their labels are unknown.
	ImpliedNamespaces []string
	// SamplesApart is how long apart a capture read the two samples of the
	// counters: a replay that waits as long measures the same rates.
	SamplesApart time.Duration
	// Remotes are the recordings of the mesh's other clusters, read
	// through their own kubeconfig contexts (capture --remote-contexts),
	// under clusters/ (see remotes.go); none for a recording of one
	// cluster.
	Remotes []RemoteScenario
}

// LogKey names one recorded container log.
type LogKey struct {
	Pod       cluster.PodRef
	Container string
	Previous  bool
}

// Admin paths the probes request and the file each is recorded in. A request
// is matched by the part of its path before '?'.
var envoyFiles = map[string]string{
	"/clusters?format=json":  "clusters.json",
	"/stats":                 "stats.txt",
	"/stats/prometheus":      "stats_prometheus.txt",
	"/listeners?format=json": "listeners.json",
	"/config_dump":           "config_dump.json",
}

// readSuffix marks the recording of a later read of the same path: the
// metrics probe samples counters twice and needs to see them move.
const readSuffix = "#"

// The istiod paths recorded: syncz in istiod/syncz.json, /version in
// istiod/version.txt, /debug/edsz?proxyID=PROXY in istiod/edsz/PROXY.json.
const (
	IstiodSyncz   = "/debug/syncz"
	IstiodVersion = "/version"
	IstiodEdsz    = "/debug/edsz"
	// edszQuery is what the edsz path carries, the proxy's ID after it.
	edszQuery = "?proxyID="
	edszDir   = "edsz"
)

// IstiodEdszPath is the edsz read of proxy (POD.NS).
func IstiodEdszPath(proxy string) string { return IstiodEdsz + edszQuery + proxy }

type header struct {
	Name          string   `json:"name"`
	Title         string   `json:"title"`
	Summary       string   `json:"summary"`
	Description   string   `json:"description"`
	Context       string   `json:"context"`
	ServerVersion string   `json:"serverVersion"`
	ControlPlane  string   `json:"controlPlaneNamespace,omitempty"`
	Expect        []string `json:"expect"`
	Target        struct {
		Namespace string `json:"namespace"`
		Service   string `json:"service"`
		Port      int32  `json:"port"`
		Source    *struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"source,omitempty"`
	} `json:"target"`
	// CapturedAt, SamplesApart and Failures are a recording's.
	CapturedAt   string    `json:"capturedAt,omitempty"`
	SamplesApart string    `json:"countersSampledApart,omitempty"`
	Failures     []Failure `json:"failedReads,omitempty"`
	// Clusters are a recording's remote clusters (remotes.go).
	Clusters []remoteEntry `json:"clusters,omitempty"`
}

// scenarioRoot lets callers pass either the assets file system (holding
// scenarios/) or a file system rooted at the scenarios folder itself.
func scenarioRoot(fsys fs.FS) fs.FS {
	if st, err := fs.Stat(fsys, Dir); err == nil && st.IsDir() {
		if sub, err := fs.Sub(fsys, Dir); err == nil {
			return sub
		}
	}
	return fsys
}

// Names lists the scenarios in fsys (the assets file system, or a folder of
// scenario folders), sorted.
func Names(fsys fs.FS) ([]string, error) {
	root := scenarioRoot(fsys)
	entries, err := fs.ReadDir(root, ".")
	if err != nil {
		return nil, fmt.Errorf("list scenarios: %w", err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := fs.Stat(root, path.Join(e.Name(), "scenario.yaml")); err == nil {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// Load reads scenario name from fsys. Manifests are decoded strictly: a
// misspelt field in a recorded scenario is an error, not a silently missing
// status.
func Load(fsys fs.FS, name string) (*Scenario, error) {
	root := scenarioRoot(fsys)
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return nil, fmt.Errorf("invalid scenario name %q", name)
	}
	dir, err := fs.Sub(root, name)
	if err != nil {
		return nil, err
	}
	raw, err := fs.ReadFile(dir, "scenario.yaml")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no scenario %q", name)
	}
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", name, err)
	}
	var h header
	if err := yaml.UnmarshalStrict(raw, &h); err != nil {
		return nil, fmt.Errorf("scenario %s: scenario.yaml: %w", name, err)
	}
	if h.Name != name {
		return nil, fmt.Errorf("scenario %s: scenario.yaml names it %q", name, h.Name)
	}
	s, err := fromHeader(h, "scenario "+name)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", name, err)
	}
	if s.Target.Namespace == "" || s.Target.Service == "" {
		return nil, fmt.Errorf("scenario %s: target needs namespace and service", name)
	}
	files, err := yamlFiles(dir, "manifests")
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", name, err)
	}
	for _, f := range files {
		data, err := fs.ReadFile(dir, f)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", name, err)
		}
		objs, err := manifests.Decode(f, data, true)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", name, err)
		}
		s.Objects = append(s.Objects, objs...)
	}
	if err := loadRecorded(dir, s); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", name, err)
	}
	// A scenario of several clusters is laid out as a recording of them.
	if s.Remotes, err = loadRemotes(dir, h.Clusters, "scenario "+name, ""); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", name, err)
	}
	return s, nil
}

// fromHeader is the scenario scenario.yaml describes, without its data.
func fromHeader(h header, source string) (*Scenario, error) {
	s := &Scenario{
		Name:                  h.Name,
		Title:                 h.Title,
		Summary:               h.Summary,
		Description:           strings.TrimSpace(h.Description),
		Expect:                h.Expect,
		ServerVersion:         h.ServerVersion,
		Context:               h.Context,
		ControlPlaneNamespace: h.ControlPlane,
		Source:                source,
		Target: cluster.Target{
			Namespace: h.Target.Namespace,
			Service:   h.Target.Service,
			Port:      h.Target.Port,
		},
		Envoy:          map[cluster.PodRef]map[string][]byte{},
		Logs:           map[LogKey][]byte{},
		Istiod:         map[string][]byte{},
		IstiodReplicas: map[string]map[string][]byte{},
		Failures:       map[string]Failure{},
	}
	if s.Expect == nil {
		s.Expect = []string{}
	}
	if h.Target.Source != nil {
		s.Target.Source = &cluster.PodRef{Namespace: h.Target.Source.Namespace, Name: h.Target.Source.Name}
	}
	if h.CapturedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, h.CapturedAt)
		if err != nil {
			return nil, fmt.Errorf("scenario.yaml: capturedAt: %w", err)
		}
		s.CapturedAt = t
	}
	if h.SamplesApart != "" {
		d, err := time.ParseDuration(h.SamplesApart)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("scenario.yaml: countersSampledApart %q: want a duration such as 5s", h.SamplesApart)
		}
		s.SamplesApart = d
	}
	for _, f := range h.Failures {
		if f.Read == "" {
			return nil, fmt.Errorf("scenario.yaml: a failedReads entry names no read")
		}
		s.Failures[f.Read] = f
	}
	return s, nil
}

// loadRecorded reads the Envoy admin responses, logs and istiod output.
func loadRecorded(dir fs.FS, s *Scenario) error {
	if err := loadEnvoy(dir, s); err != nil {
		return err
	}
	if err := loadLogs(dir, s); err != nil {
		return err
	}
	if err := loadNetstat(dir, s); err != nil {
		return err
	}
	return loadIstiod(dir, s)
}

// istiodFiles are the istiod paths recorded with a fixed file; edsz has a
// file a proxy (istiodFile).
var istiodFiles = map[string]string{IstiodSyncz: "syncz.json", IstiodVersion: "version.txt"}

// istiodFile is the file, under istiod/ (or istiod/POD/), that records
// the answer to path; false for a path the layout has no file for.
func istiodFile(p string) (string, bool) {
	if f, ok := istiodFiles[p]; ok {
		return f, true
	}
	if proxy, ok := strings.CutPrefix(p, IstiodEdsz+edszQuery); ok && proxy != "" && !strings.ContainsAny(proxy, "/&?") {
		return path.Join(edszDir, proxy+".json"), true
	}
	return "", false
}

// istiodFilePath is the path a file under istiod/ (or istiod/POD/)
// answers, the inverse of istiodFile.
func istiodFilePath(file string) (string, bool) {
	for p, f := range istiodFiles {
		if f == file {
			return p, true
		}
	}
	if proxy, ok := strings.CutPrefix(file, edszDir+"/"); ok && strings.HasSuffix(proxy, ".json") && !strings.Contains(proxy, "/") {
		return IstiodEdszPath(strings.TrimSuffix(proxy, ".json")), true
	}
	return "", false
}

// loadIstiod reads istiod/FILE (any replica) and istiod/POD/FILE (replica
// POD), FILE being syncz.json, version.txt or edsz/PROXY.json.
func loadIstiod(dir fs.FS, s *Scenario) error {
	if _, err := fs.Stat(dir, "istiod"); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	// root reads the files of root (istiod or istiod/POD) and of its edsz
	// folder; replicas says whether other folders are replicas' roots.
	var root func(name string, replicas bool, into func(p string, data []byte)) error
	root = func(name string, replicas bool, into func(p string, data []byte)) error {
		entries, err := fs.ReadDir(dir, name)
		if err != nil {
			return err
		}
		for _, e := range entries {
			switch {
			case e.IsDir() && e.Name() == edszDir:
				files, err := fs.ReadDir(dir, path.Join(name, edszDir))
				if err != nil {
					return err
				}
				for _, f := range files {
					if err := recordedIstiodFile(dir, name, path.Join(edszDir, f.Name()), f.IsDir(), into); err != nil {
						return err
					}
				}
			case e.IsDir() && replicas:
				replica := e.Name()
				if err := root(path.Join(name, replica), false, func(p string, data []byte) {
					if s.IstiodReplicas[replica] == nil {
						s.IstiodReplicas[replica] = map[string][]byte{}
					}
					s.IstiodReplicas[replica][p] = data
				}); err != nil {
					return err
				}
			default:
				if err := recordedIstiodFile(dir, name, e.Name(), e.IsDir(), into); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return root("istiod", true, func(p string, data []byte) { s.Istiod[p] = data })
}

// recordedIstiodFile reads root/rel, a file of the istiod layout.
func recordedIstiodFile(dir fs.FS, root, rel string, isDir bool, into func(p string, data []byte)) error {
	name := path.Join(root, rel)
	p, ok := istiodFilePath(rel)
	if isDir || !ok {
		return fmt.Errorf("%s: not a recorded istiod response (want syncz.json, version.txt, edsz/POD.NS.json, or a replica's folder of them)", name)
	}
	data, err := fs.ReadFile(dir, name)
	if err != nil {
		return err
	}
	into(p, data)
	return nil
}

func yamlFiles(fsys fs.FS, dir string) ([]string, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			out = append(out, path.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// loadEnvoy reads envoy/NS/POD/FILE; a file that is no admin response is an
// error rather than data no probe will ever see.
func loadEnvoy(dir fs.FS, s *Scenario) error {
	byFile := map[string]string{}
	for p, f := range envoyFiles {
		byFile[f] = p
	}
	return walkPodFiles(dir, "envoy", func(pod cluster.PodRef, file string, data []byte) error {
		adminPath, ok := byFile[file]
		if !ok {
			// NAME.N.EXT is the N-th read of NAME.EXT's path.
			ext := path.Ext(file)
			stem := strings.TrimSuffix(file, ext)
			if dot := strings.LastIndexByte(stem, '.'); dot > 0 {
				if n, err := strconv.Atoi(stem[dot+1:]); err == nil && n >= 2 {
					if p, known := byFile[stem[:dot]+ext]; known {
						adminPath, ok = p+readSuffix+strconv.Itoa(n), true
					}
				}
			}
		}
		if !ok {
			return fmt.Errorf("envoy/%s/%s/%s: not a recorded admin response (want one of clusters.json, stats.txt, stats_prometheus[.N].txt, listeners.json, config_dump.json)", pod.Namespace, pod.Name, file)
		}
		if s.Envoy[pod] == nil {
			s.Envoy[pod] = map[string][]byte{}
		}
		s.Envoy[pod][adminPath] = data
		return nil
	})
}

func loadLogs(dir fs.FS, s *Scenario) error {
	return walkPodFiles(dir, "logs", func(pod cluster.PodRef, file string, data []byte) error {
		key := LogKey{Pod: pod}
		switch {
		case strings.HasSuffix(file, ".previous.log"):
			key.Container, key.Previous = strings.TrimSuffix(file, ".previous.log"), true
		case strings.HasSuffix(file, ".log"):
			key.Container = strings.TrimSuffix(file, ".log")
		default:
			return fmt.Errorf("logs/%s/%s/%s: want CONTAINER.log or CONTAINER.previous.log", pod.Namespace, pod.Name, file)
		}
		s.Logs[key] = data
		return nil
	})
}

func loadNetstat(dir fs.FS, s *Scenario) error {
	return walkPodFiles(dir, "netstat", func(pod cluster.PodRef, file string, data []byte) error {
		if file != "netstat.txt" {
			return fmt.Errorf("netstat/%s/%s/%s: want netstat.txt", pod.Namespace, pod.Name, file)
		}
		if s.Netstat == nil {
			s.Netstat = map[cluster.PodRef][]byte{}
		}
		s.Netstat[pod] = data
		return nil
	})
}

// walkPodFiles calls fn for every file ROOT/NS/POD/FILE.
func walkPodFiles(dir fs.FS, root string, fn func(cluster.PodRef, string, []byte) error) error {
	namespaces, err := fs.ReadDir(dir, root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ns := range namespaces {
		if !ns.IsDir() {
			return fmt.Errorf("%s/%s: want %s/NAMESPACE/POD/FILE", root, ns.Name(), root)
		}
		pods, err := fs.ReadDir(dir, path.Join(root, ns.Name()))
		if err != nil {
			return err
		}
		for _, pod := range pods {
			if !pod.IsDir() {
				return fmt.Errorf("%s/%s/%s: want %s/NAMESPACE/POD/FILE", root, ns.Name(), pod.Name(), root)
			}
			podDir := path.Join(root, ns.Name(), pod.Name())
			files, err := fs.ReadDir(dir, podDir)
			if err != nil {
				return err
			}
			for _, f := range files {
				if f.IsDir() {
					return fmt.Errorf("%s/%s: unexpected folder", podDir, f.Name())
				}
				data, err := fs.ReadFile(dir, path.Join(podDir, f.Name()))
				if err != nil {
					return err
				}
				if err := fn(cluster.PodRef{Namespace: ns.Name(), Name: pod.Name()}, f.Name(), data); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// EnvoyResponse is the recorded answer of pod's Envoy admin to path, matched
// exactly or by the part before '?' (so "/stats?format=text" finds the
// recorded /stats). The lab's Envoy admin simulator serves through it too.
func (s *Scenario) EnvoyResponse(pod cluster.PodRef, adminPath string) ([]byte, bool) {
	return s.EnvoyResponseN(pod, adminPath, 1)
}

// EnvoyResponseN is the answer to the n-th read of path (n from 1): the
// recording of that read, or of the latest read recorded before it.
func (s *Scenario) EnvoyResponseN(pod cluster.PodRef, adminPath string, n int) ([]byte, bool) {
	recorded := s.Envoy[pod]
	key, ok := "", false
	if _, exact := recorded[adminPath]; exact {
		key, ok = adminPath, true
	} else {
		base := basePath(adminPath)
		for p := range recorded {
			if !strings.Contains(p, readSuffix) && basePath(p) == base {
				key, ok = p, true
				break
			}
		}
	}
	if !ok {
		return nil, false
	}
	for ; n >= 2; n-- {
		if data, later := recorded[key+readSuffix+strconv.Itoa(n)]; later {
			return data, true
		}
	}
	return recorded[key], true
}

func basePath(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		return p[:i]
	}
	return p
}

// lineEnd reports the index just after the line starting at i.
func lineEnd(b []byte, i int) int {
	if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(b)
}

// FromObjects is a recording of objects only (`check --manifests`): no Envoy
// admin data, logs or istiod status, so the probes that need them report
// "no data recorded". The target is left for the caller.
func FromObjects(source string, objects []runtime.Object) *Scenario {
	return &Scenario{
		Name:    path.Base(source),
		Title:   "manifests from " + source,
		Source:  "manifests " + source,
		Expect:  []string{},
		Objects: objects,
		Envoy:   map[cluster.PodRef]map[string][]byte{},
		Logs:    map[LogKey][]byte{},
		Istiod:  map[string][]byte{},

		IstiodReplicas: map[string]map[string][]byte{},
		Failures:       map[string]Failure{},
	}
}
