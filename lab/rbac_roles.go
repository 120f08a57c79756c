package lab

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// RBACManifest is what one of assets/rbac's files holds: a ClusterRole and
// its ClusterRoleBinding, or a Role and its RoleBinding.
type RBACManifest struct {
	ClusterRoles        []*rbacv1.ClusterRole
	ClusterRoleBindings []*rbacv1.ClusterRoleBinding
	Roles               []*rbacv1.Role
	RoleBindings        []*rbacv1.RoleBinding
}

// ReadRBACManifest decodes every RBAC document of data, strictly: a field
// the API would drop is an error.
func ReadRBACManifest(data []byte) (RBACManifest, error) {
	var m RBACManifest
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			return m, err
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return m, err
		}
		var obj any
		switch meta.Kind {
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			m.ClusterRoles, obj = append(m.ClusterRoles, r), r
		case "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			m.ClusterRoleBindings, obj = append(m.ClusterRoleBindings, b), b
		case "Role":
			r := &rbacv1.Role{}
			m.Roles, obj = append(m.Roles, r), r
		case "RoleBinding":
			b := &rbacv1.RoleBinding{}
			m.RoleBindings, obj = append(m.RoleBindings, b), b
		case "":
			continue
		default:
			return m, fmt.Errorf("unexpected %s in an RBAC manifest", meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return m, fmt.Errorf("%s: %w", meta.Kind, err)
		}
	}
}

// ApplyRole creates or replaces a Role and its RoleBinding in namespace,
// as `kubectl apply -n NAMESPACE` of a manifest without namespaces does.
func (l *Lab) ApplyRole(ctx context.Context, namespace string, role *rbacv1.Role, binding *rbacv1.RoleBinding) error {
	role, binding = role.DeepCopy(), binding.DeepCopy()
	role.Namespace, binding.Namespace = namespace, namespace
	if err := createOrUpdate(ctx, l.Kube.RbacV1().Roles(namespace), role, "Role "+namespace+"/"+role.Name, replacing(role)); err != nil {
		return err
	}
	return createOrUpdate(ctx, l.Kube.RbacV1().RoleBindings(namespace), binding, "RoleBinding "+namespace+"/"+binding.Name,
		func(cur *rbacv1.RoleBinding) *rbacv1.RoleBinding { cur.Subjects = binding.Subjects; return cur })
}
