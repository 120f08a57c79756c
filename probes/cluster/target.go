package cluster

import "fmt"

// Target is what the on-call is triaging: a Service and optionally the client
// pod whose sidecar reports the 503s.
type Target struct {
	Namespace string `json:"namespace"`
	Service   string `json:"service"`
	// Port is the service port; 0 means every port of the service.
	Port int32 `json:"port,omitempty"`
	// Source is the calling pod; nil when the on-call did not name one.
	Source *PodRef `json:"source,omitempty"`
}

// Host is the service's in-mesh FQDN as Envoy names it in cluster names.
func (t Target) Host() string {
	return fmt.Sprintf("%s.%s.svc.cluster.local", t.Service, t.Namespace)
}

func (t Target) String() string {
	s := fmt.Sprintf("svc/%s -n %s", t.Service, t.Namespace)
	if t.Port != 0 {
		s += fmt.Sprintf(" port %d", t.Port)
	}
	if t.Source != nil {
		s += " from " + t.Source.String()
	}
	return s
}

// PodRef names a pod.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (p PodRef) String() string { return p.Namespace + "/" + p.Name }
