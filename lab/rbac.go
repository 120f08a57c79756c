package lab

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReadRBAC decodes a manifest of one ClusterRole and its ClusterRoleBinding
// (assets/rbac/meshtriage-readonly.yaml).
func ReadRBAC(data []byte) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, error) {
	m, err := ReadRBACManifest(data)
	if err != nil {
		return nil, nil, err
	}
	if len(m.Roles) > 0 {
		return nil, nil, errors.New("unexpected Role in the RBAC manifest")
	}
	if len(m.RoleBindings) > 0 {
		return nil, nil, errors.New("unexpected RoleBinding in the RBAC manifest")
	}
	if len(m.ClusterRoles) == 0 || len(m.ClusterRoleBindings) == 0 {
		return nil, nil, errors.New("the RBAC manifest needs a ClusterRole and a ClusterRoleBinding")
	}
	return m.ClusterRoles[len(m.ClusterRoles)-1], m.ClusterRoleBindings[len(m.ClusterRoleBindings)-1], nil
}

// ApplyRBAC creates or replaces a ClusterRole and its ClusterRoleBinding.
func (l *Lab) ApplyRBAC(ctx context.Context, role *rbacv1.ClusterRole, binding *rbacv1.ClusterRoleBinding) error {
	role, binding = role.DeepCopy(), binding.DeepCopy()
	if err := createOrUpdate(ctx, l.Kube.RbacV1().ClusterRoles(), role, "ClusterRole "+role.Name, replacing(role)); err != nil {
		return err
	}
	return createOrUpdate(ctx, l.Kube.RbacV1().ClusterRoleBindings(), binding, "ClusterRoleBinding "+binding.Name,
		func(cur *rbacv1.ClusterRoleBinding) *rbacv1.ClusterRoleBinding {
			cur.Subjects = binding.Subjects
			return cur
		})
}

// kindClient is the part of a typed client-go client of one kind
// (ClusterRoles(), RoleBindings(ns), ...) that createOrUpdate uses.
type kindClient[T metav1.Object] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
}

// createOrUpdate creates obj; when it exists already, it updates what
// update makes of the object the API server holds. what names obj in a
// create error.
func createOrUpdate[T metav1.Object](ctx context.Context, client kindClient[T], obj T, what string, update func(current T) T) error {
	_, err := client.Create(ctx, obj, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	cur, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	_, err = client.Update(ctx, update(cur), metav1.UpdateOptions{})
	return err
}

// replacing is the update of a role: obj as a whole, at the current
// resourceVersion. A binding's roleRef cannot change, so a binding is
// updated by its subjects instead.
func replacing[T metav1.Object](obj T) func(current T) T {
	return func(current T) T {
		obj.SetResourceVersion(current.GetResourceVersion())
		return obj
	}
}

// ServiceAccountToken creates ServiceAccount namespace/name (and its
// namespace) if absent and returns a token for it from the TokenRequest API.
func (l *Lab) ServiceAccountToken(ctx context.Context, namespace, name string) (string, error) {
	core := l.Kube.CoreV1()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	if _, err := core.ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	expiry := int64(3600)
	tr, err := core.ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// BindServiceAccount gives ServiceAccount namespace/name a ClusterRole of
// its own name holding rules, and returns a token for it once the API
// server's authorizer (which learns of RBAC changes through a cache) grants
// the first rule.
func (l *Lab) BindServiceAccount(ctx context.Context, namespace, name string, rules []rbacv1.PolicyRule) (string, error) {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
	}
	if err := l.ApplyRBAC(ctx, role, binding); err != nil {
		return "", err
	}
	token, err := l.ServiceAccountToken(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	if len(rules) > 0 {
		if err := l.WaitAllowed(ctx, namespace, name, rules[0]); err != nil {
			return "", err
		}
	}
	return token, nil
}

// ServiceAccountUser is the user name a ServiceAccount's token
// authenticates as, the name the audit log records.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// WaitAllowed waits until ServiceAccount namespace/name may do the first
// verb on the first resource of rule (in namespace "default").
func (l *Lab) WaitAllowed(ctx context.Context, namespace, name string, rule rbacv1.PolicyRule) error {
	if len(rule.Verbs) == 0 || len(rule.Resources) == 0 {
		return errors.New("WaitAllowed needs a rule with a verb and a resource")
	}
	user := ServiceAccountUser(namespace, name)
	group := ""
	if len(rule.APIGroups) > 0 {
		group = rule.APIGroups[0]
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: rule.Verbs[0], Group: group, Resource: rule.Resources[0], Namespace: "default",
		},
	}}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		res, err := l.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err == nil && res.Status.Allowed {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("RBAC never allowed %s to %s %s: %v", user, rule.Verbs[0], rule.Resources[0], err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
