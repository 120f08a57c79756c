package lab

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// AuditEvent is the part of an audit.k8s.io/v1 Event the lab checks: who did
// what to which resource, and the answer.
type AuditEvent struct {
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// Resource is "pods/portforward", "destinationrules.networking.istio.io",
// or the request URI of a non-resource request ("/version").
func (e AuditEvent) Resource() string {
	if e.ObjectRef == nil {
		return e.RequestURI
	}
	r := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		r += "/" + e.ObjectRef.Subresource
	}
	if e.ObjectRef.APIGroup != "" {
		r += "." + e.ObjectRef.APIGroup
	}
	return r
}

// Code is the response's HTTP status (0 when the stage has none).
func (e AuditEvent) Code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// ReadAudit reads the lab's audit log: one event per request and stage
// (RequestReceived is not logged), in the order the API server wrote them.
func ReadAudit(path string) ([]AuditEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
