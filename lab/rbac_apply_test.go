package lab

import (
	"context"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func rules(resource string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{resource}, Verbs: []string{"get"}}}
}

func subjects(name string) []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ops", Name: name}}
}

// Applying again replaces a role's rules and a binding's subjects, the
// binding keeping its roleRef (which the API server would refuse to change),
// for ClusterRoles and namespaced Roles alike.
func TestApplyRBACAndApplyRoleCreateThenUpdate(t *testing.T) {
	ctx := context.Background()
	l := &Lab{Kube: fake.NewClientset()}
	meta := metav1.ObjectMeta{Name: "meshtriage-readonly"}
	for i, step := range []struct{ resource, subject string }{{"pods", "first"}, {"services", "second"}} {
		cr := &rbacv1.ClusterRole{ObjectMeta: meta, Rules: rules(step.resource)}
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: meta, Subjects: subjects(step.subject),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: meta.Name}}
		if err := l.ApplyRBAC(ctx, cr, crb); err != nil {
			t.Fatalf("apply %d: %v", i, err)
		}
		r := &rbacv1.Role{ObjectMeta: meta, Rules: rules(step.resource)}
		rb := &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subjects(step.subject),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name}}
		if err := l.ApplyRole(ctx, "shop", r, rb); err != nil {
			t.Fatalf("apply role %d: %v", i, err)
		}
		if r.Namespace != "" || cr.ResourceVersion != "" {
			t.Errorf("apply %d changed the caller's objects", i)
		}
		rbac := l.Kube.RbacV1()
		gotCR, err := rbac.ClusterRoles().Get(ctx, meta.Name, metav1.GetOptions{})
		if err != nil || !reflect.DeepEqual(gotCR.Rules, rules(step.resource)) {
			t.Errorf("apply %d: ClusterRole %+v, %v", i, gotCR, err)
		}
		gotCRB, err := rbac.ClusterRoleBindings().Get(ctx, meta.Name, metav1.GetOptions{})
		if err != nil || !reflect.DeepEqual(gotCRB.Subjects, subjects(step.subject)) || gotCRB.RoleRef.Kind != "ClusterRole" {
			t.Errorf("apply %d: ClusterRoleBinding %+v, %v", i, gotCRB, err)
		}
		gotR, err := rbac.Roles("shop").Get(ctx, meta.Name, metav1.GetOptions{})
		if err != nil || !reflect.DeepEqual(gotR.Rules, rules(step.resource)) {
			t.Errorf("apply %d: Role %+v, %v", i, gotR, err)
		}
		gotRB, err := rbac.RoleBindings("shop").Get(ctx, meta.Name, metav1.GetOptions{})
		if err != nil || !reflect.DeepEqual(gotRB.Subjects, subjects(step.subject)) || gotRB.RoleRef.Kind != "Role" {
			t.Errorf("apply %d: RoleBinding %+v, %v", i, gotRB, err)
		}
	}
}

// ReadRBAC takes a ClusterRole and its binding, and nothing namespaced.
func TestReadRBACWantsAClusterRoleAndItsBinding(t *testing.T) {
	const role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: r\n"
	const binding = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: r\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: r\n"
	const namespaced = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: r\n"
	if r, b, err := ReadRBAC([]byte(role + "---\n" + binding)); err != nil || r.Name != "r" || b.RoleRef.Name != "r" {
		t.Errorf("ReadRBAC = %v, %v, %v", r, b, err)
	}
	for _, bad := range []string{role, binding, role + "---\n" + binding + "---\n" + namespaced, role + "---\n" + binding + "---\nkind: ConfigMap\n"} {
		if _, _, err := ReadRBAC([]byte(bad)); err == nil {
			t.Errorf("ReadRBAC took %q", bad)
		}
	}
}
