package recorded_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshtriage/meshtriage/assets"
	"github.com/meshtriage/meshtriage/probes"
	"github.com/meshtriage/meshtriage/probes/callersearch"
	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/recorded"
	"github.com/meshtriage/meshtriage/runbook"
	"github.com/meshtriage/meshtriage/runbook/incidentlog"
)

// triageRun is what a triage concluded, and every probe's outcome.
type triageRun struct {
	findings []string
	results  map[string]probes.Result
	sess     *runbook.Session
}

// runTriage walks the runbook unattended over c behind the probes' read
// cache, as `meshtriage check` does, with a short metrics window.
func runTriage(t *testing.T, c cluster.Cluster, target cluster.Target) triageRun {
	t.Helper()
	graph, err := runbook.LoadFS(assets.FS, assets.Runbook503, runbook.CatalogueOf(probes.All(), assets.Causes))
	if err != nil {
		t.Fatal(err)
	}
	reg := probes.ByID()
	reg["metrics"] = probes.MetricsProbe{Interval: 20 * time.Millisecond}
	sess, err := runbook.NewSession(runbook.Config{
		Graph: graph, Cluster: cluster.NewCache(c), Target: target, Probes: reg, Mode: runbook.ModeAuto,
		Clock: func() time.Time { return time.Date(2026, 12, 2, 3, 30, 0, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	findings, err := sess.Auto(ctx)
	if err != nil {
		t.Fatalf("auto triage: %v", err)
	}
	run := triageRun{results: map[string]probes.Result{}, sess: sess}
	for _, f := range findings {
		run.findings = append(run.findings, f.Cause)
	}
	sort.Strings(run.findings)
	for _, st := range sess.Steps() {
		if r, ok := sess.Result(st.ID); ok {
			run.results[st.ID] = r
		}
	}
	return run
}

// replay writes what rec recorded as a redacted archive, reads it back as
// a user's --recording would be, and returns the cluster it serves.
func replay(t *testing.T, rec *recorded.Recorder, target cluster.Target, findings []string) (cluster.Cluster, []byte) {
	t.Helper()
	captured := rec.Scenario(target, findings)
	files, err := captured.Files(incidentlog.Redact)
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := recorded.WriteArchive(&archive, "capture", files, time.Now()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "capture.tar.gz")
	if err := os.WriteFile(path, archive.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := recorded.OpenRecording(path, "default")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Skipped) > 0 || !r.HasTarget || r.Target.String() != target.String() || !slices.Equal(r.Expect, findings) {
		t.Errorf("recording read back: skipped %v, target %s (want %s), expect %v (want %v)", r.Skipped, r.Target, target, r.Expect, findings)
	}
	if r.SamplesApart != captured.SamplesApart.Round(time.Millisecond) || (captured.SamplesApart > 0 && captured.SamplesApart < 20*time.Millisecond) {
		t.Errorf("counters sampled %v apart, read back as %v (the metrics window is 20ms)", captured.SamplesApart, r.SamplesApart)
	}
	c, err := recorded.NewCluster(r.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	return c, archive.Bytes()
}

// sameOutcome requires the replay to reach every probe's status, summary
// and facts the recorded run reached; rates depend on how long the two
// samples of the counters were apart, so of those only "zero or not" must
// agree.
func sameOutcome(t *testing.T, live, again triageRun) {
	t.Helper()
	if !slices.Equal(live.findings, again.findings) {
		t.Errorf("findings: live %v, replayed %v", live.findings, again.findings)
	}
	for id, want := range live.results {
		got, ok := again.results[id]
		if !ok {
			t.Errorf("step %s ran live, not on replay", id)
			continue
		}
		if got.Status != want.Status {
			t.Errorf("step %s: status live %s (%s), replayed %s (%s)", id, want.Status, want.Summary, got.Status, got.Summary)
		}
		for k, v := range want.Facts {
			g := got.Facts[k]
			if f, isFloat := v.(float64); isFloat && (strings.HasSuffix(k, "_rate") || strings.HasSuffix(k, "_window_s")) {
				if gf, _ := g.(float64); (f == 0) != (gf == 0) {
					t.Errorf("step %s fact %s: live %v, replayed %v", id, k, v, g)
				}
				continue
			}
			if !reflect.DeepEqual(fmt.Sprint(v), fmt.Sprint(g)) {
				t.Errorf("step %s fact %s: live %v, replayed %v", id, k, v, g)
			}
		}
		if len(got.Facts) != len(want.Facts) {
			t.Errorf("step %s: %d facts live, %d replayed", id, len(want.Facts), len(got.Facts))
		}
	}
}

// TestCaptureReplaysEveryScenario records a triage of every embedded
// scenario through a Recorder, writes the recording as `meshtriage
// capture` does (redacted, archived), reads it back as `check --recording`
// does, and triages it again: the same findings, and every probe the same
// status and facts.
func TestCaptureReplaysEveryScenario(t *testing.T) {
	names, err := recorded.Names(assets.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := recorded.Load(assets.FS, name)
			if err != nil {
				t.Fatal(err)
			}
			live, err := recorded.NewCluster(s)
			if err != nil {
				t.Fatal(err)
			}
			rec := recorded.NewRecorder(live)
			first := runTriage(t, rec, s.Target)
			if u := rec.Unrecorded(); len(u) > 0 {
				t.Errorf("reads the recording has no file for: %v", u)
			}
			c, _ := replay(t, rec, s.Target, first.findings)
			sameOutcome(t, first, runTriage(t, c, s.Target))
		})
	}
}

// forbidding refuses some reads, as a narrow RBAC role does.
type forbidding struct {
	cluster.Cluster
	pods bool
}

func (f forbidding) ListPods(ctx context.Context, ns string, sel map[string]string) ([]corev1.Pod, error) {
	if f.pods {
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("User \"oncall\" cannot list resource \"pods\" in API group \"\" in the namespace %q", ns))
	}
	return f.Cluster.ListPods(ctx, ns, sel)
}

func (f forbidding) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, name, fmt.Errorf("User \"oncall\" cannot get resource \"namespaces\""))
}

// A read that failed when the capture was made fails the same way on
// replay: refused pods are not "no pods" (which would claim the selector
// matches nothing), and a refused namespace leaves its injection unknown.
func TestCaptureReplaysFailedReads(t *testing.T) {
	s, err := recorded.Load(assets.FS, "healthy")
	if err != nil {
		t.Fatal(err)
	}
	for _, refusePods := range []bool{false, true} {
		t.Run(fmt.Sprintf("pods refused %v", refusePods), func(t *testing.T) {
			c, err := recorded.NewCluster(s)
			if err != nil {
				t.Fatal(err)
			}
			rec := recorded.NewRecorder(forbidding{Cluster: c, pods: refusePods})
			ctx := context.Background()
			live := probes.Run(ctx, probes.TargetProbe{}, cluster.NewCache(rec), s.Target)
			again, _ := replay(t, rec, s.Target, nil)
			got := probes.Run(ctx, probes.TargetProbe{}, cluster.NewCache(again), s.Target)
			if got.Status != live.Status || got.Summary != live.Summary || fmt.Sprint(got.Facts) != fmt.Sprint(live.Facts) {
				t.Errorf("target probe live: %s %q %v\nreplayed: %s %q %v", live.Status, live.Summary, live.Facts, got.Status, got.Summary, got.Facts)
			}
			if _, known := got.Facts["target_namespace_injection"]; known {
				t.Errorf("namespace injection %v from a recording whose namespace was unreadable", got.Facts["target_namespace_injection"])
			}
			if refusePods && (got.Status != probes.StatusError || !strings.Contains(got.Summary, "forbidden")) {
				t.Errorf("refused pods replayed as %s %q", got.Status, got.Summary)
			}
		})
	}
}

// Credentials a cluster may hold where the probes read: the capture must
// carry none of them.
const (
	secretEnv      = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
	secretFlag     = "kubectl-flag-t0ken-8f2b"
	secretBearer   = "ya29.a0AfH6SMBx-bearer-t0ken"
	secretCookie   = "sessionid=c00kie-4b1d"
	secretKCToken  = "kc-t0ken-4e7d1c9a"
	secretPassword = "hunter2-pa55w0rd"
	// pemBody is what sits between a PEM block's armour.
	pemBody = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
)

var (
	secretJWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6c2hvcDp3ZWIifQ.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"
	secretPEM = "-----BEGIN PRIVATE KEY-----\n" + pemBody + "\n-----END PRIVATE KEY-----\n"
	// secretPEM64 is the PEM as Envoy's inline_bytes and a kubeconfig's
	// client-key-data hold it.
	secretPEM64 = base64.StdEncoding.EncodeToString([]byte(secretPEM))
)

// leaky is a cluster whose objects, Envoy output and logs hold credentials
// where real ones do.
type leaky struct{ cluster.Cluster }

func withSecrets(p *corev1.Pod) {
	if len(p.Spec.Containers) == 0 {
		return
	}
	c := &p.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: "AWS_SECRET_ACCESS_KEY", Value: secretEnv}, corev1.EnvVar{Name: "DB_PASSWORD", Value: secretPassword})
	c.Args = append(c.Args, "--token="+secretFlag)
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = `{"spec":{"containers":[{"env":[{"name":"AWS_SECRET_ACCESS_KEY","value":"` + secretEnv + `"}]}]}}`
}

func (l leaky) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	p, err := l.Cluster.GetPod(ctx, ns, name)
	if err == nil {
		withSecrets(p)
	}
	return p, err
}

func (l leaky) ListPods(ctx context.Context, ns string, sel map[string]string) ([]corev1.Pod, error) {
	pods, err := l.Cluster.ListPods(ctx, ns, sel)
	for i := range pods {
		withSecrets(&pods[i])
	}
	return pods, err
}

func (l leaky) GetConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	cm, err := l.Cluster.GetConfigMap(ctx, ns, name)
	if err == nil {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data["kubeconfig"] = "apiVersion: v1\nkind: Config\nusers:\n- name: ci\n  user:\n    token: " + secretKCToken +
			"\n    client-key-data: " + secretPEM64 + "\n    password: " + secretPassword + "\n"
	}
	return cm, err
}

func (l leaky) EnvoyAdmin(ctx context.Context, pod cluster.PodRef, path string) ([]byte, error) {
	body, err := l.Cluster.EnvoyAdmin(ctx, pod, path)
	if err != nil || !strings.HasPrefix(path, "/config_dump") {
		return body, err
	}
	secrets := `{"@type": "type.googleapis.com/envoy.admin.v3.SecretsConfigDump", "dynamic_active_secrets": [{"name": "default", "secret": {"name": "default", "tls_certificate": {"certificate_chain": {"inline_bytes": "` + secretPEM64 + `"}, "private_key": {"inline_string": ` + strconv.Quote(secretPEM) + `}}}}]},`
	return []byte(strings.Replace(string(body), `"configs": [`, `"configs": [`+secrets, 1)), nil
}

func (l leaky) Logs(ctx context.Context, pod cluster.PodRef, opts cluster.LogOptions) ([]byte, error) {
	b, err := l.Cluster.Logs(ctx, pod, opts)
	if err != nil {
		return b, err
	}
	leak := fmt.Sprintf("2026-12-02T03:29:59.000Z\tdebug\tenvoy http\t[C1][S2] request headers complete:\n':authority', 'orders:8080'\n'authorization', 'Bearer %s'\n'cookie', '%s'\n'x-forwarded-client-cert', 'By=spiffe://cluster.local/ns/shop/sa/orders'\n", secretBearer, secretCookie) +
		fmt.Sprintf("[2026-12-02T03:29:59.100Z] \"GET /orders?access_token=%s HTTP/1.1\" 503 UH no_healthy_upstream - \"-\" 0 19 0 - \"-\" \"curl/8\" \"Authorization: Bearer %s\" \"orders:8080\" \"-\" outbound|8080||orders.shop.svc.cluster.local\n", secretJWT, secretBearer)
	return append(b, leak...), nil
}

// A capture carries no credential: no token (bearer, JWT, kubeconfig,
// command-line), no key or certificate body (PEM or base64), no cookie or
// password, though the cluster it records holds them all where the probes
// read.
func TestCaptureCarriesNoCredentials(t *testing.T) {
	s, err := recorded.Load(assets.FS, "startup-race")
	if err != nil {
		t.Fatal(err)
	}
	c, err := recorded.NewCluster(s)
	if err != nil {
		t.Fatal(err)
	}
	rec := recorded.NewRecorder(leaky{c})
	run := runTriage(t, rec, s.Target)
	// The leak is real: the triage read every kind of credential.
	raw, err := rec.Scenario(s.Target, run.findings).Files(func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{secretEnv, secretFlag, secretBearer, secretCookie, secretKCToken, secretPassword, secretJWT, pemBody, secretPEM64[:40]}
	var all strings.Builder
	for _, data := range raw {
		all.Write(data)
	}
	for _, secret := range secrets {
		if !strings.Contains(all.String(), secret) {
			t.Fatalf("the unredacted recording lacks %q: the test plants nothing there", secret)
		}
	}

	// Redacted value by value, the recording still reads back whole (no
	// document skipped) and replays to the same outcome.
	again, archive := replay(t, rec, s.Target, run.findings)
	sameOutcome(t, run, runTriage(t, again, s.Target))
	files, _, err := recorded.ReadArchive(bytes.NewReader(archive), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		for _, secret := range secrets {
			if strings.Contains(string(data), secret) {
				t.Errorf("%s carries the credential %q", name, secret)
			}
		}
	}
	if !strings.Contains(string(files["capture/logs/shop/"+s.Target.Source.Name+"/istio-proxy.log"]), "'authorization', '[REDACTED]'") {
		t.Errorf("the redacted header is not in the source's proxy log; the capture dropped the line rather than redact it")
	}
}

// A capture without --from records the caller search's reads (all
// namespaces' rules, pods found by IP, the meshed pods listed): the replay
// finds the same callers, for the same reasons.
func TestCaptureReplaysTheCallerSearch(t *testing.T) {
	for _, name := range []string{"outlier-all-ejected", "mtls-plaintext-to-strict", "missing-serviceentry"} {
		t.Run(name, func(t *testing.T) {
			s, err := recorded.Load(assets.FS, name)
			if err != nil {
				t.Fatal(err)
			}
			live, err := recorded.NewCluster(s)
			if err != nil {
				t.Fatal(err)
			}
			target := s.Target
			target.Source = nil
			rec := recorded.NewRecorder(live)
			first := callersearch.Find(context.Background(), cluster.NewCache(rec), target, callersearch.Options{})
			if len(first.Callers) == 0 || len(first.Problems) > 0 {
				t.Fatalf("through the recorder the search found no caller or could not read something: %s", first.Summary())
			}
			if u := rec.Unrecorded(); len(u) > 0 {
				t.Errorf("reads the recording has no file for: %v", u)
			}
			c, _ := replay(t, rec, target, nil)
			again := callersearch.Find(context.Background(), cluster.NewCache(c), target, callersearch.Options{})
			if first.Summary() != again.Summary() {
				t.Errorf("callers live: %s\nreplayed: %s", first.Summary(), again.Summary())
			}
		})
	}
}
