package recorded

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// Failure is a read that failed when a recording was made, kept so that it
// fails the same way on replay: an on-call without the right to list pods
// must not be told, from the recording, that the Service selects none.
type Failure struct {
	// Read names the read (readKey): "list pods shop app=web".
	Read string `json:"read"`
	// Code, Reason and the details are the API server's status for a
	// refused read (403 Forbidden, 404 of a kind not served); Code is 0 for
	// an error that did not come from the API server.
	Code   int32  `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	Group  string `json:"group,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Name   string `json:"name,omitempty"`
	// Unreachable names the Envoy admin or istiod that could not be
	// reached.
	Unreachable string `json:"unreachable,omitempty"`
	// NotRecorded marks an absent recording (cluster.ErrNotFound).
	NotRecorded bool   `json:"notRecorded,omitempty"`
	Message     string `json:"message"`
}

// failureOf keeps what err says and how callers tell it apart.
func failureOf(read string, err error) Failure {
	f := Failure{Read: read, Message: err.Error()}
	var status apierrors.APIStatus
	var unreachable *cluster.UnreachableError
	switch {
	case errors.As(err, &status):
		st := status.Status()
		f.Code, f.Reason, f.Message = st.Code, string(st.Reason), st.Message
		if d := st.Details; d != nil {
			f.Group, f.Kind, f.Name = d.Group, d.Kind, d.Name
		}
	case errors.As(err, &unreachable):
		f.Unreachable, f.Message = unreachable.What, unreachable.Err.Error()
		f.NotRecorded = errors.Is(unreachable.Err, cluster.ErrNotFound)
	default:
		f.NotRecorded = errors.Is(err, cluster.ErrNotFound)
	}
	return f
}

// Err is the error the read gave, rebuilt with the type callers test for.
func (f Failure) Err() error {
	msg := errors.New(f.Message)
	if f.NotRecorded {
		msg = notRecordedError(f.Message)
	}
	switch {
	case f.Code != 0:
		st := metav1.Status{Status: metav1.StatusFailure, Code: f.Code, Reason: metav1.StatusReason(f.Reason), Message: f.Message}
		if f.Group != "" || f.Kind != "" || f.Name != "" {
			st.Details = &metav1.StatusDetails{Group: f.Group, Kind: f.Kind, Name: f.Name}
		}
		return &apierrors.StatusError{ErrStatus: st}
	case f.Unreachable != "":
		return &cluster.UnreachableError{What: f.Unreachable, Err: msg}
	}
	return msg
}

// notRecordedError is a recorded "not found" as the live read worded it:
// errors.Is finds cluster.ErrNotFound, and its text is the live one, with
// nothing added, so that a fact or summary that quotes it reads the same
// replayed as live (one triage).
type notRecordedError string

func (e notRecordedError) Error() string { return string(e) }
func (e notRecordedError) Unwrap() error { return cluster.ErrNotFound }

// The keys of the reads a Cluster serves, as recordings name them.
func readVersion() string                  { return "version" }
func readNamespace(name string) string     { return "get namespace " + name }
func readService(ns, name string) string   { return "get service " + ns + "/" + name }
func readPod(ns, name string) string       { return "get pod " + ns + "/" + name }
func readSlices(ns, svc string) string     { return "list endpointslices " + ns + " of service " + svc }
func readConfigMap(ns, n string) string    { return "get configmap " + ns + "/" + n }
func readIstioList(kind, ns string) string { return "list " + kind + " " + ns }

func readNode(name string) string   { return "get node " + name }
func readNetworkGateways() string   { return "list services labelled topology.istio.io/network" }
func readPodsByIP(ip string) string { return "list pods with IP " + ip }
func readPodsWithIP(ns, ip string) string {
	return "list pods in " + ns + " with IP " + ip
}

func readPods(ns string, selector map[string]string) string {
	return "list pods " + ns + " " + labels.Set(selector).String()
}

func readEnvoy(pod cluster.PodRef, path string, n int) string {
	return fmt.Sprintf("envoy %s GET %s #%d", pod, path, n)
}

func readLogs(pod cluster.PodRef, o cluster.LogOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "logs %s container %s", pod, o.Container)
	if o.Previous {
		b.WriteString(" previous")
	}
	if o.Since > 0 {
		fmt.Fprintf(&b, " since %s", o.Since)
	}
	if o.TailLines > 0 {
		fmt.Fprintf(&b, " tail %d", o.TailLines)
	}
	if o.LimitBytes > 0 {
		fmt.Fprintf(&b, " limit %d", o.LimitBytes)
	}
	return b.String()
}

func readIstiod(replica, path string) string {
	if replica == "" {
		replica = "(any replica)"
	}
	return "istiod " + replica + " GET " + path
}

// failed is the recorded failure of read, nil when there is none.
func (c *Cluster) failed(read string) error {
	if f, ok := c.s.Failures[read]; ok {
		return f.Err()
	}
	return nil
}
