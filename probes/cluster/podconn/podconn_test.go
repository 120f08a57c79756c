package podconn

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/httpstream"
	streamhttp "k8s.io/streaming/pkg/httpstream"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

func TestForbiddenFromRecognisesTheAPIServersRefusal(t *testing.T) {
	text := `error upgrading connection: unable to upgrade connection: pods "web-1" is forbidden: User "alice" cannot create resource "pods/portforward" in API group "" in the namespace "shop"`
	err := ForbiddenFrom(errors.New(text), "pods/portforward", "web-1")
	if !apierrors.IsForbidden(err) {
		t.Fatalf("not a Forbidden: %v", err)
	}
	got := cluster.AccessProblem("read Envoy admin of shop/web-1", err)
	want := `forbidden: cannot read Envoy admin of shop/web-1 (RBAC: User "alice" cannot create resource "pods/portforward" in API group "" in the namespace "shop")`
	if got != want {
		t.Errorf("AccessProblem =\n %q\nwant\n %q", got, want)
	}
	for _, other := range []error{
		errors.New("error upgrading connection: dial tcp 10.0.0.1:6443: i/o timeout"),
		&httpstream.UpgradeFailureError{Cause: errors.New("400 Bad Request")},
		nil,
	} {
		if ForbiddenFrom(other, "pods/portforward", "web-1") != nil {
			t.Errorf("%v taken for a Forbidden", other)
		}
	}
}

func TestShouldFallbackOnEitherUpgradeFailureType(t *testing.T) {
	for _, err := range []error{
		&httpstream.UpgradeFailureError{Cause: errors.New("400")},
		fmt.Errorf("dial: %w", &streamhttp.UpgradeFailureError{Cause: errors.New("403")}),
		errors.New("proxy: unknown scheme: https"),
	} {
		if !ShouldFallback(err) {
			t.Errorf("%v: no fallback", err)
		}
	}
	if ShouldFallback(errors.New("dial tcp: i/o timeout")) {
		t.Error("a network error is not an upgrade failure")
	}
}
