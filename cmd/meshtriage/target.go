package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// targetFlags are the parts of a target given as flags.
type targetFlags struct {
	port int
	from string
}

// parseTarget builds the target from `svc/NAME` (or `NAME`), --port and
// --from, in namespace ns. Every mistake is one line that shows the accepted
// form, since the on-call types this under pressure.
func parseTarget(ns string, args []string, f targetFlags) (cluster.Target, error) {
	if len(args) != 1 {
		return cluster.Target{}, fmt.Errorf("need exactly one target, svc/NAME (got %d arguments)", len(args))
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return cluster.Target{}, fmt.Errorf("namespace %q: %s", ns, errs[0])
	}
	name, err := parseService(args[0])
	if err != nil {
		return cluster.Target{}, err
	}
	t := cluster.Target{Namespace: ns, Service: name}
	if err := applyTargetFlags(&t, f); err != nil {
		return cluster.Target{}, err
	}
	return t, nil
}

// applyTargetFlags sets the port and source of t from flags that were given
// (a scenario's own target keeps what the flags leave out).
func applyTargetFlags(t *cluster.Target, f targetFlags) error {
	if f.port != 0 {
		if f.port < 1 || f.port > 65535 {
			return fmt.Errorf("--port %d: a service port is 1-65535", f.port)
		}
		t.Port = int32(f.port)
	}
	if f.from != "" {
		src, err := parseFrom(t.Namespace, f.from)
		if err != nil {
			return err
		}
		t.Source = src
	}
	return nil
}

// parseService accepts svc/NAME, service/NAME, services/NAME or NAME.
func parseService(arg string) (string, error) {
	name := arg
	if kind, rest, ok := strings.Cut(arg, "/"); ok {
		switch strings.ToLower(kind) {
		case "svc", "service", "services":
			name = rest
		default:
			return "", fmt.Errorf("target %q: only Services can be triaged, as svc/NAME", arg)
		}
	}
	if name == "" {
		return "", fmt.Errorf("target %q: no Service name (svc/NAME)", arg)
	}
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		return "", fmt.Errorf("target %q: %q is not a Service name: %s", arg, name, errs[0])
	}
	return name, nil
}

// parseFrom accepts pod/NAME (in ns), NS/pod/NAME, or NAME.
func parseFrom(ns, from string) (*cluster.PodRef, error) {
	parts := strings.Split(from, "/")
	ref := &cluster.PodRef{Namespace: ns}
	switch {
	case len(parts) == 1:
		ref.Name = parts[0]
	case len(parts) == 2 && isPodKind(parts[0]):
		ref.Name = parts[1]
	case len(parts) == 3 && isPodKind(parts[1]):
		ref.Namespace, ref.Name = parts[0], parts[2]
		if errs := validation.IsDNS1123Label(ref.Namespace); len(errs) > 0 {
			return nil, fmt.Errorf("--from %q: namespace %q: %s", from, ref.Namespace, errs[0])
		}
	default:
		return nil, fmt.Errorf("--from %q: want pod/NAME or NAMESPACE/pod/NAME", from)
	}
	if ref.Name == "" {
		return nil, fmt.Errorf("--from %q: no pod name (pod/NAME)", from)
	}
	if errs := validation.IsDNS1123Subdomain(ref.Name); len(errs) > 0 {
		return nil, fmt.Errorf("--from %q: %q is not a pod name: %s", from, ref.Name, errs[0])
	}
	return ref, nil
}

func isPodKind(s string) bool {
	switch strings.ToLower(s) {
	case "pod", "pods", "po":
		return true
	}
	return false
}
