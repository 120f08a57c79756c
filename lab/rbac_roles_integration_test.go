//go:build integration

package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/live"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/runbook/triage"
)

// waitAllowedIn waits until ServiceAccount namespace/name may verb resource
// in ns: the API server's authorizer learns of RBAC changes through a cache.
func waitAllowedIn(ctx context.Context, t *testing.T, l *Lab, namespace, name, verb, resource, ns string) {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               ServiceAccountUser(namespace, name),
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: resource, Namespace: ns},
	}}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		res, err := l.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err == nil && res.Status.Allowed {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("RBAC never allowed %s to %s %s in %s: %v", sar.Spec.User, verb, resource, ns, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// serviceAccountKubeconfigFor writes a kubeconfig with a token of
// ServiceAccount meshtriage/name (created if absent).
func serviceAccountKubeconfigFor(ctx context.Context, t *testing.T, l *Lab, name string) string {
	t.Helper()
	token, err := l.ServiceAccountToken(ctx, "meshtriage", name)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := l.WriteKubeconfig(path, name, token, "default"); err != nil {
		t.Fatal(err)
	}
	return path
}

func serviceAccountSubject(name string) []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "meshtriage", Name: name}}
}

// bindClusterRole applies a shipped ClusterRole (file under assets/rbac)
// with a binding of its own to ServiceAccount meshtriage/subject.
func bindClusterRole(ctx context.Context, t *testing.T, l *Lab, file, subject string) *rbacv1.ClusterRole {
	t.Helper()
	m := readManifest(t, file)
	role := m.ClusterRoles[0]
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + subject},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   serviceAccountSubject(subject),
	}
	if err := l.ApplyRBAC(ctx, role, binding); err != nil {
		t.Fatal(err)
	}
	return role
}

// auditOf lists the requests of ServiceAccount meshtriage/name since mark
// that either changed something or were refused.
func auditOf(t *testing.T, l *Lab, name string, since int) (forbidden, writes []string, total int) {
	t.Helper()
	events, err := ReadAudit(l.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	user := ServiceAccountUser("meshtriage", name)
	for _, e := range events[since:] {
		if e.User.Username != user || e.Stage != "ResponseComplete" && e.Stage != "Panic" {
			continue
		}
		total++
		what := fmt.Sprintf("%s %s (%s) -> %d", e.Verb, e.Resource(), e.RequestURI, e.Code())
		if e.Code() == 403 {
			forbidden = append(forbidden, what)
		}
		if !readOnlyVerb(e) {
			writes = append(writes, what)
		}
	}
	return forbidden, writes, total
}

func auditLen(t *testing.T, l *Lab) int {
	t.Helper()
	events, err := ReadAudit(l.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	return len(events)
}

// ruleLists are the kinds the config model lists across all namespaces,
// as istiod reads them; a Role cannot grant that.
var ruleLists = map[string]bool{
	"destinationrules.networking.istio.io": true, "virtualservices.networking.istio.io": true,
	"serviceentries.networking.istio.io": true, "sidecars.networking.istio.io": true,
	"peerauthentications.security.istio.io": true,
}

// gatewayAPILists are the Gateway API kinds a triage lists across all
// namespaces when its caller or target may sit behind a Gateway API
// gateway or route (istiod reads them mesh-wide; GatewayClasses are
// cluster-scoped): a namespaced Role cannot grant those lists, and the
// gateway step then says its verdicts are partial or unjudged.
var gatewayAPILists = map[string]bool{
	"gateways.gateway.networking.k8s.io": true, "httproutes.gateway.networking.k8s.io": true,
	"grpcroutes.gateway.networking.k8s.io": true, "tlsroutes.gateway.networking.k8s.io": true,
	"tcproutes.gateway.networking.k8s.io": true, "referencegrants.gateway.networking.k8s.io": true,
	"gatewayclasses.gateway.networking.k8s.io": true,
}

// refusalsOf are the refused requests of ServiceAccount meshtriage/name
// since mark.
func refusalsOf(t *testing.T, l *Lab, name string, since int) []AuditEvent {
	t.Helper()
	events, err := ReadAudit(l.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	var out []AuditEvent
	user := ServiceAccountUser("meshtriage", name)
	for _, e := range events[since:] {
		if e.User.Username == user && e.Stage == "ResponseComplete" && e.Code() == 403 {
			out = append(out, e)
		}
	}
	return out
}

// The namespaced Role, bound only in the target's, the caller's and the
// control plane's namespaces, is enough for a whole triage of every
// scenario: no probe is refused. The API server refuses exactly one
// request a kind of Istio rule a triage, the list across all namespaces a
// Role cannot grant (a gateway caller's Gateways too), and the triage says
// its rule set is partial.
func TestNamespacedReadOnlyRoleSufficesForATriage(t *testing.T) {
	l := sharedLab(t)
	const sa = "meshtriage-namespaced"
	m := readManifest(t, live.ReadOnlyRole+"-namespaced.yaml")
	role, binding := m.Roles[0], m.RoleBindings[0].DeepCopy()
	binding.Subjects = serviceAccountSubject(sa)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kubeconfig := serviceAccountKubeconfigFor(ctx, t, l, sa)
	mark := auditLen(t, l)

	for _, name := range scenarioNames(t) {
		t.Run(name, func(t *testing.T) {
			s := loadScenario(t, name)
			applyShared(t, l, s)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			controlPlane := s.ControlPlaneNamespace
			if controlPlane == "" {
				controlPlane = cluster.DefaultControlPlane
			}
			namespaces := map[string]bool{s.Target.Namespace: true, controlPlane: true}
			if s.Target.Source != nil {
				namespaces[s.Target.Source.Namespace] = true
			}
			for ns := range namespaces {
				if err := l.ApplyRole(ctx, ns, role, binding); err != nil {
					t.Fatal(err)
				}
				waitAllowedIn(ctx, t, l, "meshtriage", sa, "create", "pods/portforward", ns)
			}
			before := auditLen(t, l)
			run := runCheck(t, ctx, triage.LiveSource(liveCluster(t, kubeconfig, s, 20*time.Second)), s.Target)
			partial := false
			for id, r := range run.results {
				if strings.Contains(strings.ToLower(r.Summary), "forbidden") {
					t.Errorf("probe %s with the namespaced read-only Role: %s", id, r.Summary)
				}
				for _, f := range []string{"dr_rules_partial", "se_rules_partial"} {
					if v, _ := r.Facts[f].(string); strings.Contains(v, "a namespaced role") {
						partial = true
					}
				}
			}
			if !partial {
				t.Error("no probe says its rule set is partial (dr_rules_partial, se_rules_partial)")
			}
			refused := map[string]int{}
			for _, e := range refusalsOf(t, l, sa, before) {
				what := fmt.Sprintf("%s %s (%s)", e.Verb, e.Resource(), e.RequestURI)
				// The network gateways (Services labelled with a network) are
				// one list across namespaces, which a namespaced Role refuses:
				// split-horizon is then undecided, never guessed.
				gatewayList := e.Resource() == "gateways.networking.istio.io" && s.Target.Source != nil || gatewayAPILists[e.Resource()] || e.Resource() == "services"
				switch {
				case platformRead(e):
					// the ambient platform checks' optional reads in kube-system
					// (cilium-config, aws-node's pods): refused, their facts are unknown
				case e.Verb != "list" || e.ObjectRef == nil || e.ObjectRef.Namespace != "" || !ruleLists[e.Resource()] && !gatewayList:
					t.Errorf("audit: refused %s: the Role lacks a permission a probe uses", what)
				default:
					refused[e.Resource()]++
				}
			}
			for kind := range ruleLists {
				if refused[kind] != 1 {
					t.Errorf("the list of %s across all namespaces was refused %d times, want once a triage (the read cache keeps the refusal)", kind, refused[kind])
				}
			}
			for kind := range gatewayAPILists {
				if n := refused[kind]; n > 1 {
					t.Errorf("the list of %s across all namespaces was refused %d times, want at most once (the read cache keeps the refusal)", kind, n)
				}
			}
			if n := refused["services"]; n > 1 {
				t.Errorf("the list of network gateway Services across all namespaces was refused %d times, want at most once", n)
			}
			if n := refused["gateways.networking.istio.io"]; n > 1 {
				t.Errorf("the list of Gateways across all namespaces was refused %d times, want at most once", n)
			}
		})
	}
	_, writes, total := auditOf(t, l, sa, mark)
	if total == 0 {
		t.Fatal("the audit log has no request by the namespaced user")
	}
	for _, w := range writes {
		t.Errorf("audit: %s by the read-only user", w)
	}
}

// execRecorder stands in for the commands the actions run in a pod: it
// records them and answers as pilot-agent and curl would.
type execRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *execRecorder) run(_ context.Context, pod cluster.PodRef, container string, command []string, stdout, stderr io.Writer) int {
	r.mu.Lock()
	r.calls = append(r.calls, fmt.Sprintf("%s %s: %s", pod, container, strings.Join(command, " ")))
	r.mu.Unlock()
	switch {
	case container == mesh.ProxyContainer && len(command) == 4 && command[0] == "pilot-agent" && command[2] == "POST":
		fmt.Fprint(stdout, "active loggers:\n  connection: info\n  http: info\n  upstream: info\n")
		return 0
	case len(command) > 0 && command[0] == "curl":
		fmt.Fprint(stderr, "< HTTP/1.1 200 OK\n< x-envoy-upstream-service-time: 3\n")
		return 0
	}
	fmt.Fprintf(stderr, "exec: %q: executable file not found in $PATH\n", strings.Join(command, " "))
	return 127
}

func (r *execRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// runActions runs `meshtriage check` once with each action (debug logging
// that cannot start sends no test request) and returns its stderr lines
// about them.
func runActions(t *testing.T, kubeconfig string, args []string) (testRequest, debugLogging string) {
	t.Helper()
	run := func(action ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, meshtriageBinary(t), append(append([]string{"--kubeconfig", kubeconfig, "check",
			"--metrics-window", "0", "-o", "json"}, action...), args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		var exitErr *exec.ExitError
		if err := cmd.Run(); err != nil && !errors.As(err, &exitErr) {
			t.Fatal(err)
		}
		var lines []string
		for _, line := range strings.Split(stderr.String(), "\n") {
			if strings.HasPrefix(line, "meshtriage: test request") || strings.HasPrefix(line, "meshtriage: debug logging") {
				lines = append(lines, line)
			}
		}
		if len(lines) == 0 {
			t.Fatalf("check %v reported no action:\n%s", action, stderr.String())
		}
		return strings.Join(lines, "\n")
	}
	return run("--test-request", "/"), run("--debug-logging", "1s")
}

// Under the read-only role each action is refused, and the refusal the
// on-call reads names the role that would allow it; bound to that role as
// well, the same actions reach the pod.
func TestActionsUnderTheReadOnlyRoleNameTheRoleToBind(t *testing.T) {
	l := sharedLab(t)
	s := loadScenario(t, "healthy")
	applyShared(t, l, s)
	const sa = "meshtriage-oncall"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bindClusterRole(ctx, t, l, live.ReadOnlyRole+".yaml", sa)
	waitAllowedIn(ctx, t, l, "meshtriage", sa, "create", "pods/portforward", s.Target.Namespace)
	kubeconfig := serviceAccountKubeconfigFor(ctx, t, l, sa)
	recorder := &execRecorder{}
	l.Kubelet.SetExec(recorder.run)
	defer l.Kubelet.SetExec(l.Kubelet.pilotAgent)
	args := targetArgs(s)

	mark := auditLen(t, l)
	testRequest, debugLogging := runActions(t, kubeconfig, args)
	for name, out := range map[string]string{"test request": testRequest, "debug logging": debugLogging} {
		for _, want := range []string{"forbidden", `"pods/exec"`, live.ExecRole, live.ReadOnlyRole} {
			if !strings.Contains(out, want) {
				t.Errorf("%s under the read-only role: %q lacks %q", name, out, want)
			}
		}
	}
	if n := recorder.count(); n != 0 {
		t.Errorf("%d commands reached a pod under the read-only role: %v", n, recorder.calls)
	}
	forbidden, writes, _ := auditOf(t, l, sa, mark)
	if len(forbidden) == 0 {
		t.Error("the audit log shows no refused request: the actions were not refused by the API server")
	}
	for _, f := range forbidden {
		if !strings.Contains(f, "pods/exec") {
			t.Errorf("refused: %s; only pods/exec should be", f)
		}
	}
	for _, w := range writes {
		if !strings.Contains(w, "pods/exec") || !strings.HasSuffix(w, "-> 403") {
			t.Errorf("audit: %s under the read-only role", w)
		}
	}

	bindClusterRole(ctx, t, l, live.ExecRole+".yaml", sa)
	waitAllowedIn(ctx, t, l, "meshtriage", sa, "create", "pods/exec", s.Target.Source.Namespace)
	testRequest, debugLogging = runActions(t, kubeconfig, args)
	if strings.Contains(testRequest+debugLogging, "forbidden") {
		t.Errorf("with %s bound the actions are still refused:\n%s%s", live.ExecRole, testRequest, debugLogging)
	}
	calls := strings.Join(recorder.calls, "\n")
	for _, want := range []string{"curl", "pilot-agent request POST logging"} {
		if !strings.Contains(calls, want) {
			t.Errorf("with %s bound no %q reached the pod; commands:\n%s", live.ExecRole, want, calls)
		}
	}
}

// platformRead is a read of the ambient platform checks in kube-system: the
// ConfigMap cilium-config, the aws-node pods.
func platformRead(e AuditEvent) bool {
	if e.ObjectRef == nil || e.ObjectRef.Namespace != "kube-system" {
		return false
	}
	return e.Verb == "get" && e.Resource() == "configmaps" && e.ObjectRef.Name == "cilium-config" ||
		e.Verb == "list" && e.Resource() == "pods" && strings.Contains(e.RequestURI, "k8s-app%3Daws-node")
}
