package cluster

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// AccessProblem turns an error from a Cluster read into the one line an on-call
// can act on: a missing RBAC verb and resource, an absent object, Istio CRDs not
// installed, an unreachable server or proxy. what names the read ("list pods in
// shop"), so the message stands on its own in the incident log.
func AccessProblem(what string, err error) string {
	var unreachable *UnreachableError
	switch {
	case err == nil:
		return ""
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("forbidden: cannot %s (RBAC: %s)", what, forbiddenDetail(err))
	case apierrors.IsNotFound(err):
		if IsMissingKind(err) {
			return fmt.Sprintf("cannot %s: the API server does not serve this kind (Istio CRDs not installed?)", what)
		}
		return fmt.Sprintf("cannot %s: not found", what)
	case errors.As(err, &unreachable):
		return fmt.Sprintf("cannot %s: %v", what, err)
	case errors.Is(err, ErrNotInInput):
		return fmt.Sprintf("cannot %s: %v", what, err)
	case errors.Is(err, ErrNotFound):
		return fmt.Sprintf("cannot %s: no data recorded", what)
	default:
		return fmt.Sprintf("cannot %s: %s", what, firstLine(err.Error()))
	}
}

// IsForbidden reports an RBAC refusal.
func IsForbidden(err error) bool { return apierrors.IsForbidden(err) }

func forbiddenDetail(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		// The API server's message already says: User "x" cannot list resource
		// "pods" in API group "" in the namespace "y".
		if msg := status.Status().Message; msg != "" {
			if i := strings.Index(msg, "User "); i >= 0 {
				return msg[i:]
			}
			return msg
		}
	}
	return firstLine(err.Error())
}

// IsMissingKind tells "the server could not find the requested resource" (no
// such resource type) from "dr \"x\" not found" (no such object).
func IsMissingKind(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		d := status.Status().Details
		return d == nil || d.Name == ""
	}
	return false
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
