package lab

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/meshtriage/meshtriage/probes/cluster/live"
)

func readManifest(t *testing.T, name string) RBACManifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "assets", "rbac", name))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ReadRBACManifest(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// Each role ships as a ClusterRole and as a namespaced Role with the same
// rules and the name the product's messages tell an on-call to bind; the
// read-only one grants nothing that runs a command in a pod.
func TestShippedRolesComeInPairsUnderTheNamesTheProductCites(t *testing.T) {
	for _, role := range []string{live.ReadOnlyRole, live.ExecRole} {
		cluster := readManifest(t, role+".yaml")
		namespaced := readManifest(t, role+"-namespaced.yaml")
		if len(cluster.ClusterRoles) != 1 || len(cluster.ClusterRoleBindings) != 1 || len(cluster.Roles)+len(cluster.RoleBindings) != 0 {
			t.Fatalf("%s.yaml: want one ClusterRole and its ClusterRoleBinding, got %+v", role, cluster)
		}
		if len(namespaced.Roles) != 1 || len(namespaced.RoleBindings) != 1 || len(namespaced.ClusterRoles)+len(namespaced.ClusterRoleBindings) != 0 {
			t.Fatalf("%s-namespaced.yaml: want one Role and its RoleBinding, got %+v", role, namespaced)
		}
		cr, r := cluster.ClusterRoles[0], namespaced.Roles[0]
		if cr.Name != role || r.Name != role {
			t.Errorf("names %q and %q, want %q: the messages name it", cr.Name, r.Name, role)
		}
		if r.Namespace != "" {
			t.Errorf("the Role names namespace %q: it is applied with -n in each namespace", r.Namespace)
		}
		if !reflect.DeepEqual(namespacedRules(cr.Rules), r.Rules) {
			t.Errorf("%s: the ClusterRole and the Role grant different rules:\n%v\n%v", role, cr.Rules, r.Rules)
		}
		if ref := cluster.ClusterRoleBindings[0].RoleRef; ref.Kind != "ClusterRole" || ref.Name != role {
			t.Errorf("%s.yaml binds %s %s", role, ref.Kind, ref.Name)
		}
		if ref := namespaced.RoleBindings[0].RoleRef; ref.Kind != "Role" || ref.Name != role {
			t.Errorf("%s-namespaced.yaml binds %s %s", role, ref.Kind, ref.Name)
		}
	}
	readOnly := readManifest(t, live.ReadOnlyRole+".yaml").ClusterRoles[0]
	for _, rule := range readOnly.Rules {
		for _, res := range rule.Resources {
			if res == "pods/exec" || res == "pods/attach" || res == "pods/ephemeralcontainers" || res == "*" {
				t.Errorf("the read-only role grants %v on %s", rule.Verbs, res)
			}
		}
		for _, verb := range rule.Verbs {
			writes := []string{"update", "patch", "delete", "deletecollection", "*"}
			if slices.Contains(writes, verb) || verb == "create" && !slices.Equal(rule.Resources, []string{"pods/portforward"}) {
				t.Errorf("the read-only role grants %s on %v", verb, rule.Resources)
			}
		}
	}
	exec := readManifest(t, live.ExecRole+".yaml").ClusterRoles[0]
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"get", "create"}}}
	if !reflect.DeepEqual(exec.Rules, want) {
		t.Errorf("the exec role grants %v, want exactly pods/exec", exec.Rules)
	}
}

// clusterScoped are the resources only a ClusterRole can grant; the
// read-only ClusterRole has them on top of the Role's rules.
var clusterScoped = map[string]bool{"nodes": true, "gatewayclasses": true}

// namespacedRules are rules without their cluster-scoped resources.
func namespacedRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		var res []string
		for _, x := range r.Resources {
			if !clusterScoped[x] {
				res = append(res, x)
			}
		}
		if len(res) > 0 {
			r.Resources = res
			out = append(out, r)
		}
	}
	return out
}
