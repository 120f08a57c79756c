// Package bugreport reads an `istioctl bug-report` archive as a recording
// the probes can triage: its cluster resources, each proxy's Envoy admin
// output and istio-proxy log, and each istiod replica's debug output, laid
// out as package recorded lays out a recording.
//
// istioctl writes (tools/bug-report in istio/istio), under bug-report/:
//
//	cluster/k8s-resources           kubectl get all,jobs,ingresses,endpointslices,configmaps,networkpolicies -o yaml
//	cluster/k8s-cluster-resources   kubectl get nodes,namespaces,crds,webhooks -o yaml
//	cluster/crs                     every custom resource (Istio's among them) -o yaml
//	cluster/pods                    the control-plane namespace's pods -o yaml
//	cluster/cluster-context         the kube context, then the API server's address
//	cluster/kubectl-version         kubectl version ("Server Version: v1.34.4")
//	proxies/NS/POD/clusters         Envoy /clusters (text)
//	proxies/NS/POD/listeners        Envoy /listeners (text)
//	proxies/NS/POD/config_dump?include_eds
//	proxies/NS/POD/stats/prometheus Envoy /stats/prometheus (one sample)
//	proxies/NS/POD/istio-proxy.log  the proxy's log, the previous one appended
//	proxies/NS/POD/netstat          `netstat -natpw` in istio-proxy: where the app listens
//	istio/NS/POD/debug/syncz        istiod's syncz, per replica
//	istio/NS/POD/discovery.log      istiod's log
//
// and more that no probe reads (secrets as a table, events, nodes, certs,
// memory, core dumps, analyze), which is left in the archive.
// istioctl writes a proxy's Envoy files only when every admin path it asks
// for answered, and collects a pod only when a Deployment or DaemonSet owns
// it; its --include with namespaces asks kubectl for "-n istio-system,NS",
// which kubectl reads as one namespace, so that k8s-resources and crs come
// out empty (Notes says so).
package bugreport

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
)

// Report is a bug report read as a recording.
type Report struct {
	*recorded.Recording
	// Notes say, one line each, what the bug report lacks that the probes
	// read, and what was skipped, grouped by kind.
	Notes []string
}

// Open reads the bug report at p: the .tar.gz istioctl writes, or the
// folder it unpacks to. Objects that name no namespace take namespace;
// extra are further manifest files (name → contents) read after the
// bug report's own, for what it lacks.
func Open(p, namespace string, extra map[string][]byte) (*Report, error) {
	files, times, err := read(p)
	if err != nil {
		return nil, fmt.Errorf("bug report %s: %w", p, err)
	}
	root, err := findRoot(files)
	if err != nil {
		return nil, fmt.Errorf("bug report %s: %w", p, err)
	}
	layout, notes, err := convert(files, root)
	if err != nil {
		return nil, fmt.Errorf("bug report %s: %w", p, err)
	}
	// After the bug report's own files (manifests/*.yaml), so that an
	// object in both is read from the bug report.
	for i, name := range sortedKeys(extra) {
		layout[fmt.Sprintf("manifests/~extra/%03d-%s.yaml", i, path.Base(name))] = extra[name]
	}
	rec, err := recorded.LoadRecording(layout, "bug report "+p, namespace)
	if err != nil {
		return nil, err
	}
	s := rec.Scenario
	s.Name, s.Title = path.Base(p), "istioctl bug-report "+p
	if ctx, server, ok := strings.Cut(strings.TrimSpace(string(files[path.Join(root, "cluster/cluster-context")])), "\n"); ok {
		s.Context, s.Source = strings.TrimSpace(ctx), strings.TrimSpace(server)
	} else if ctx != "" {
		s.Context = ctx
	}
	s.ServerVersion = serverVersion(files[path.Join(root, "cluster/kubectl-version")])
	if cp := controlPlane(files, root); cp != "" {
		s.ControlPlaneNamespace = cp
	}
	// Log windows end when istioctl wrote its files: it fetched the logs
	// last, and the archive keeps the time each file was written.
	for name, t := range times {
		if strings.HasPrefix(name, root) && t.After(s.CapturedAt) {
			s.CapturedAt = t
		}
	}
	return &Report{Recording: rec, Notes: append(notes, groupSkipped(rec)...)}, nil
}

// OpenMesh reads one bug report a cluster of a mesh that spans clusters
// (istioctl bug-report takes one --context): the first is the current
// cluster, the one the target is in, and extra goes with it; each further
// one is a remote cluster, named by the context its cluster/cluster-context
// names, as --remote-contexts names one live. A further report that names
// no context, or two that name one, is refused: which cluster an endpoint
// is in would be a guess.
func OpenMesh(paths []string, namespace string, extra map[string][]byte) (*Report, error) {
	if len(paths) == 0 {
		return nil, errors.New("no bug report given")
	}
	first, err := Open(paths[0], namespace, extra)
	if err != nil {
		return nil, err
	}
	byContext := map[string]string{}                     // context → the report naming it
	servers := map[string]string{paths[0]: first.Source} // report → its API server
	if first.Context != "" {
		byContext[first.Context] = paths[0]
	}
	for _, p := range paths[1:] {
		r, err := Open(p, namespace, nil)
		if err != nil {
			return nil, err
		}
		if r.Context == "" {
			return nil, fmt.Errorf("bug report %s: no cluster/cluster-context names its kube context; a further bug report is a remote cluster, known by its context", p)
		}
		if other, dup := byContext[r.Context]; dup {
			if servers[other] != r.Source {
				// istioctl bug-report --context writes `kubectl config
				// current-context --context CTX`, which kubectl answers
				// with the kubeconfig's current context, not CTX: two
				// clusters' reports made from one kubeconfig name one
				// context. Their servers tell them apart; their contexts,
				// which the fixes' commands name, are not known.
				return nil, fmt.Errorf("bug reports %s and %s both name context %q, of different API servers (%s, %s): istioctl bug-report --context writes the kubeconfig's current context, not --context's; make each with its cluster's context current (kubectl config use-context CTX), or write the context on the first line of its cluster/cluster-context", other, p, r.Context, servers[other], r.Source)
			}
			return nil, fmt.Errorf("bug reports %s and %s are both of context %q: give one bug report a cluster", other, p, r.Context)
		}
		servers[p] = r.Source
		byContext[r.Context] = p
		first.Remotes = append(first.Remotes, recorded.RemoteScenario{Context: r.Context, Scenario: r.Scenario})
		for _, n := range r.Notes {
			first.Notes = append(first.Notes, r.Context+": "+n)
		}
	}
	return first, nil
}

// read unpacks the archive, or reads the folder, keeping only the files
// worth reading.
func read(p string) (recorded.Files, map[string]time.Time, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, nil, err
	}
	if !st.IsDir() {
		f, err := os.Open(p)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		return recorded.ReadArchive(f, wanted)
	}
	files := recorded.Files{}
	times := map[string]time.Time{}
	fsys := os.DirFS(p)
	err = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !wanted(name) {
			return err
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files[name], times[name] = data, info.ModTime()
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return files, times, nil
}

// wanted keeps the files a triage reads: never cluster/secrets (even as
// istioctl's table, it names every secret), nor the much larger rest.
func wanted(name string) bool {
	switch {
	case strings.HasSuffix(name, "cluster/secrets"):
		return false
	case hasDir(name, "cluster"):
		for _, f := range []string{"k8s-resources", "k8s-cluster-resources", "crs", "pods", "cluster-context", "kubectl-version"} {
			if path.Base(name) == f {
				return true
			}
		}
		return false
	case hasDir(name, "proxies"):
		base := path.Base(name)
		return base == "clusters" || base == "listeners" || strings.HasPrefix(base, "config_dump") ||
			strings.HasSuffix(name, "stats/prometheus") || base == "istio-proxy.log" || base == "netstat"
	case hasDir(name, "istio"):
		return strings.HasSuffix(name, "debug/syncz") || path.Base(name) == "discovery.log"
	}
	return path.Base(name) == "versions"
}

// hasDir reports whether name lies under a folder called dir at the
// archive's top or one level down (bug-report/).
func hasDir(name, dir string) bool {
	parts := strings.Split(name, "/")
	return (len(parts) > 1 && parts[0] == dir) || (len(parts) > 2 && parts[1] == dir)
}

// findRoot is the folder holding cluster/ (bug-report/ in istioctl's
// archives; the top when made with --dir).
func findRoot(files recorded.Files) (string, error) {
	roots := map[string]bool{}
	for name := range files {
		parts := strings.Split(name, "/")
		for i, p := range parts[:len(parts)-1] {
			if p == "cluster" || p == "proxies" || p == "istio" {
				roots[strings.Join(parts[:i], "/")] = true
				break
			}
		}
	}
	if len(roots) != 1 {
		return "", errors.New("not an istioctl bug-report: no cluster/, proxies/ or istio/ folder (or several)")
	}
	for r := range roots {
		if r == "" {
			return "", nil
		}
		return r + "/", nil
	}
	return "", nil
}

// convert lays the bug report out as a recording.
func convert(files recorded.Files, root string) (recorded.Files, []string, error) {
	out := recorded.Files{}
	var notes []string
	for _, f := range []string{"k8s-resources", "k8s-cluster-resources", "crs", "pods"} {
		data, ok := files[root+"cluster/"+f]
		if !ok {
			if f == "k8s-resources" || f == "crs" {
				notes = append(notes, fmt.Sprintf("the bug report has no cluster/%s (made with --skip-cluster-dump?): add the objects with -f", f))
			}
			continue
		}
		if f == "k8s-resources" && emptyList(data) {
			// Every cluster has objects (the default namespace's kubernetes
			// Service): an empty list is istioctl's --include at work. An
			// empty crs alone may be true.
			notes = append(notes, "the bug report's cluster/k8s-resources is an empty list (and so is its crs): istioctl bug-report --include NS asks kubectl for \"-n istio-system,NS\", which kubectl reads as one namespace; add `kubectl get -n NS services,pods,endpointslices,configmaps -o yaml` and the namespace's Istio objects with -f, or make the bug report without --include")
		}
		out["manifests/"+f+".yaml"] = data
	}
	proxies := 0
	for _, name := range sortedKeys(files) {
		rel, ok := strings.CutPrefix(name, root)
		if !ok {
			continue
		}
		data := files[name]
		parts := strings.Split(rel, "/")
		switch {
		case parts[0] == "proxies" && len(parts) >= 4:
			ns, pod, file := parts[1], parts[2], strings.Join(parts[3:], "/")
			dir := path.Join("envoy", ns, pod)
			switch {
			case file == "clusters":
				j, err := clustersJSON(data)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: %w", name, err)
				}
				out[dir+"/clusters.json"] = j
				proxies++
			case file == "listeners":
				j, err := listenersJSON(data)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: %w", name, err)
				}
				out[dir+"/listeners.json"] = j
			case strings.HasPrefix(file, "config_dump"):
				out[dir+"/config_dump.json"] = data
			case file == "stats/prometheus":
				out[dir+"/stats_prometheus.txt"] = data
			case file == "netstat":
				out[path.Join("netstat", ns, pod, "netstat.txt")] = data
			case file == "istio-proxy.log":
				current, previous := splitPrevious(data)
				out[path.Join("logs", ns, pod, "istio-proxy.log")] = current
				if previous != nil {
					out[path.Join("logs", ns, pod, "istio-proxy.previous.log")] = previous
				}
			}
		case parts[0] == "istio" && len(parts) >= 4:
			ns, pod, file := parts[1], parts[2], strings.Join(parts[3:], "/")
			switch file {
			case "debug/syncz":
				out[path.Join("istiod", pod, "syncz.json")] = data
			case "discovery.log":
				out[path.Join("logs", ns, pod, "discovery.log")] = data
			}
		}
	}
	if proxies == 0 {
		notes = append(notes, "the bug report holds no proxy's Envoy output (istioctl keeps a proxy's only when every admin path it asks answered, and collects only pods a Deployment or DaemonSet owns): the Envoy checks cannot run")
	} else {
		notes = append(notes, "the bug report holds one sample of each proxy's counters and no /stats: the 503 rate and the cluster counters are unknown")
	}
	if !hasSyncz(out) {
		notes = append(notes, "the bug report holds no istiod debug/syncz: the xDS sync check cannot run")
	}
	return out, notes, nil
}

func hasSyncz(files recorded.Files) bool {
	for name := range files {
		if strings.HasPrefix(name, "istiod/") {
			return true
		}
	}
	return false
}

// emptyList reports a `kind: List` with no item.
func emptyList(data []byte) bool {
	s := string(data)
	return strings.Contains(s, "kind: List") && strings.Contains(s, "items: []")
}

// The markers istioctl puts around a restarted container's previous log.
const (
	previousPresent = "========= Previous log present (appended at the end) =========\n\n"
	previousMarker  = "\n\n========= Previous log =========\n\n"
)

// splitPrevious separates the current log from the previous instance's,
// which istioctl appends.
func splitPrevious(data []byte) (current, previous []byte) {
	rest, ok := bytes.CutPrefix(data, []byte(previousPresent))
	if !ok {
		return data, nil
	}
	i := bytes.LastIndex(rest, []byte(previousMarker))
	if i < 0 {
		return rest, nil
	}
	return rest[:i], rest[i+len(previousMarker):]
}

// serverVersion reads "Server Version: v1.34.4" from kubectl version.
func serverVersion(data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Server Version:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// controlPlane is the namespace of the istiod replicas the bug report
// holds, or of its cluster/pods.
func controlPlane(files recorded.Files, root string) string {
	for _, name := range sortedKeys(files) {
		if rel, ok := strings.CutPrefix(name, root+"istio/"); ok {
			if ns, _, found := strings.Cut(rel, "/"); found {
				return ns
			}
		}
	}
	return ""
}

// groupSkipped says what of the bug report's objects was not read, one
// line per reason and kind: a bug report holds every CRD, webhook and node,
// which no probe reads.
func groupSkipped(rec *recorded.Recording) []string {
	counts := map[string]int{}
	for _, s := range rec.Skipped {
		if strings.Contains(s.Reason, "is already read from") && !strings.HasPrefix(s.Where, "manifests/~extra/") {
			// istioctl writes the control plane's pods twice (pods and
			// k8s-resources): nothing the user gave was left out.
			continue
		}
		kind := s.Kind
		if kind == "" {
			kind = s.Where
		}
		counts[s.Reason+": "+kind] += max(s.Documents, 1)
	}
	var out []string
	for _, k := range sortedKeys(counts) {
		out = append(out, fmt.Sprintf("skipped %d document(s), %s", counts[k], k))
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
