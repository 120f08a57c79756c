package actions

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
)

// TestRequestAction names the action in the incident log.
const TestRequestAction = "test-request"

// DefaultRequestTimeout is curl's --max-time: longer than Envoy's 15 s
// default route timeout, so a hung upstream shows as the sidecar's 504 UT
// rather than as curl giving up.
const DefaultRequestTimeout = 20 * time.Second

// maxBody caps what curl downloads: Envoy's local replies are one line, and
// a large upstream body says nothing about the 503.
const maxBody = 64 << 10

// writeOutMarker starts curl's -w line, after the headers and the body.
const writeOutMarker = "@@meshtriage@@"

// TestRequest is one request sent from the source pod through its sidecar.
type TestRequest struct {
	Source cluster.PodRef
	// Container runs curl: an app container of Source by default. Never
	// istio-proxy by default: its own traffic (UID 1337) is excluded from
	// interception, so a request from there bypasses the sidecar.
	Container string
	URL       string
	Timeout   time.Duration
}

// TestResponse is what came back, as the on-call needs to read it.
type TestResponse struct {
	URL       string
	Container string
	// ThroughSidecar: the request left from a container whose traffic the
	// sidecar intercepts.
	ThroughSidecar bool
	// Status is the HTTP status; 0 when no response came (curl failed).
	Status  int
	Proto   string
	Headers http.Header
	// Body is the start of the response body (Envoy's local reply text).
	Body string
	// Flags are the Envoy response flags the reply shows ("UF", "UH,URX"),
	// empty when it shows none; LocalReply says Envoy itself answered
	// rather than the upstream app.
	Flags      string
	LocalReply bool
	// Reason explains the reply: Envoy's reset reason and transport
	// failure, or curl's error.
	Reason string
	// Timing as curl measured it.
	DNS, Connect, FirstByte, Total time.Duration
	RemoteIP                       string
	// CurlExit is curl's exit status (0 on any HTTP answer).
	CurlExit int
}

// Summary is the one line the checklist and the incident log show.
func (r TestResponse) Summary() string {
	var b strings.Builder
	if r.Status == 0 {
		fmt.Fprintf(&b, "no response")
	} else {
		fmt.Fprintf(&b, "HTTP %d", r.Status)
	}
	if r.Flags != "" {
		b.WriteString(" " + r.Flags)
	}
	if r.Status != 0 {
		if r.LocalReply {
			b.WriteString(" from the sidecar (local reply)")
		} else {
			b.WriteString(" from the upstream")
		}
	}
	if r.Reason != "" {
		b.WriteString(": " + r.Reason)
	}
	if r.Total > 0 {
		fmt.Fprintf(&b, " in %s", r.Total.Round(time.Millisecond))
	}
	if !r.ThroughSidecar {
		b.WriteString(" [not through a sidecar]")
	}
	return b.String()
}

// TestURL is the URL of the target's Service: its FQDN and the given port, or
// the Service's only port.
func TestURL(ctx context.Context, c cluster.Cluster, t cluster.Target, path string) (string, error) {
	if path == "" {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("test request path %q: want an absolute path such as /healthz", path)
	}
	if strings.ContainsAny(path, " \t\r\n") {
		return "", fmt.Errorf("test request path %q: spaces must be %%-encoded", path)
	}
	port := t.Port
	if port == 0 {
		svc, err := c.GetService(ctx, t.Namespace, t.Service)
		if err != nil {
			return "", errors.New(cluster.AccessProblem(fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err))
		}
		if len(svc.Spec.Ports) != 1 {
			return "", fmt.Errorf("service %s/%s has %d ports: give --port", t.Namespace, t.Service, len(svc.Spec.Ports))
		}
		port = svc.Spec.Ports[0].Port
	}
	u := fmt.Sprintf("http://%s:%d%s", t.Host(), port, path)
	if _, err := url.ParseRequestURI(u); err != nil {
		return "", fmt.Errorf("test request path %q: %v", path, err)
	}
	return u, nil
}

// CurlCommand is the one curl invocation: headers, the start of the body and
// a -w line with the status and timing, all on stdout.
func CurlCommand(rawURL string, timeout time.Duration) []string {
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	w := "\n" + writeOutMarker + " code=%{http_code} dns=%{time_namelookup} connect=%{time_connect}" +
		" ttfb=%{time_starttransfer} total=%{time_total} ip=%{remote_ip}\n"
	return []string{"curl", "-sS", "--max-time", strconv.Itoa(int(timeout.Seconds())), "--max-filesize", strconv.Itoa(maxBody),
		"-H", "User-Agent: meshtriage-test-request", "-D", "-", "-o", "-", "-w", w, rawURL}
}

// SendTestRequest runs curl in the source pod and records the request in the
// incident log. The request is the only thing it changes: one more request
// to the target.
func SendTestRequest(ctx context.Context, c cluster.Cluster, r Runner, req TestRequest, rec Recorder) (TestResponse, error) {
	resp := TestResponse{URL: req.URL}
	target := req.Source.String() + " -> " + req.URL
	fail := func(err error) (TestResponse, error) {
		rec.record(Record{Name: TestRequestAction, Target: target, Done: "GET " + req.URL, Error: err.Error()})
		return resp, err
	}
	pod, err := c.GetPod(ctx, req.Source.Namespace, req.Source.Name)
	if err != nil {
		return fail(errors.New(cluster.AccessProblem("get pod "+req.Source.String(), err)))
	}
	container := req.Container
	if container == "" {
		apps := mesh.AppContainers(pod)
		if len(apps) == 0 {
			return fail(fmt.Errorf("pod %s has no app container to send from", req.Source))
		}
		container = apps[0].Name
	}
	resp.Container = container
	resp.ThroughSidecar = mesh.PodSidecar(pod) != mesh.SidecarNone && container != mesh.ProxyContainer
	cmd := CurlCommand(req.URL, req.Timeout)
	stdout, stderr, err := r.Exec(ctx, req.Source, container, cmd)
	if err != nil && len(stdout) == 0 {
		return fail(execProblem(req.Source, container, req.URL, err, stderr))
	}
	parseCurl(&resp, stdout, stderr)
	if resp.Status == 0 && resp.Reason == "" && err != nil {
		return fail(execProblem(req.Source, container, req.URL, err, stderr))
	}
	done := "GET " + req.URL + " from container " + container + ": " + resp.Summary()
	rec.record(Record{Name: TestRequestAction, Target: target, Done: done, Output: resp.Transcript()})
	return resp, nil
}

// execProblem explains an exec that did not run curl at all.
func execProblem(pod cluster.PodRef, container, url string, err error, stderr []byte) error {
	msg := err.Error() + " " + string(stderr)
	switch {
	case strings.Contains(msg, "executable file not found") || strings.Contains(msg, "no such file or directory") && strings.Contains(msg, "curl"):
		return fmt.Errorf("container %s of %s has no curl (a distroless image?): send the request from a debug container that shares the pod's network, e.g. kubectl debug -n %s %s -it --image=curlimages/curl -- curl -sv %s",
			container, pod, pod.Namespace, pod.Name, shellQuote(url))
	case cluster.IsForbidden(err):
		return errors.New(cluster.AccessProblem("exec into "+pod.String()+" "+container, err))
	}
	line := strings.TrimSpace(string(stderr))
	if line == "" {
		line = err.Error()
	}
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	return fmt.Errorf("exec curl in %s %s: %s", pod, container, line)
}

// parseCurl reads CurlCommand's output: header blocks (one per response,
// e.g. after a 100 Continue), the body, then the -w line.
func parseCurl(resp *TestResponse, stdout, stderr []byte) {
	out := string(stdout)
	trailer := ""
	if i := strings.LastIndex(out, "\n"+writeOutMarker+" "); i >= 0 {
		trailer = strings.TrimSpace(out[i+len(writeOutMarker)+2:])
		out = out[:i]
	}
	for _, f := range strings.Fields(trailer) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "code":
			resp.Status, _ = strconv.Atoi(v)
		case "dns":
			resp.DNS = seconds(v)
		case "connect":
			resp.Connect = seconds(v)
		case "ttfb":
			resp.FirstByte = seconds(v)
		case "total":
			resp.Total = seconds(v)
		case "ip":
			resp.RemoteIP = v
		}
	}
	// The last header block is the final response's.
	for strings.HasPrefix(out, "HTTP/") {
		end := strings.Index(out, "\r\n\r\n")
		sep := 4
		if end < 0 {
			if end = strings.Index(out, "\n\n"); end < 0 {
				end, sep = len(out), 0
			} else {
				sep = 2
			}
		}
		block := out[:end]
		out = out[end+sep:]
		status, headers := parseHeaderBlock(block)
		if status != 0 {
			resp.Proto, resp.Headers = strings.Fields(block)[0], headers
			if resp.Status == 0 {
				resp.Status = status
			}
		}
	}
	resp.Body = out
	if len(resp.Body) > 2048 {
		resp.Body = resp.Body[:2048]
	}
	if resp.Headers == nil {
		resp.Headers = http.Header{}
	}
	if resp.Status == 0 {
		resp.Reason = curlError(stderr)
		return
	}
	resp.Flags, resp.Reason, resp.LocalReply = judgeReply(resp.Status, resp.Headers, resp.Body)
}

func parseHeaderBlock(block string) (int, http.Header) {
	rd := textproto.NewReader(bufio.NewReader(strings.NewReader(block + "\r\n\r\n")))
	line, err := rd.ReadLine()
	if err != nil {
		return 0, nil
	}
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return 0, nil
	}
	status, err := strconv.Atoi(fields[1])
	if err != nil {
		return 0, nil
	}
	h, _ := rd.ReadMIMEHeader()
	return status, http.Header(h)
}

func seconds(v string) time.Duration {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// curlError is curl's own message ("curl: (7) Failed to connect ...").
func curlError(stderr []byte) string {
	for _, line := range strings.Split(string(stderr), "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "curl: (") {
			return line
		}
	}
	return strings.TrimSpace(string(stderr))
}

// resetFlags maps the reset reason in Envoy's local reply ("upstream connect
// error or disconnect/reset before headers. reset reason: overflow") to the
// response flag the access log would show, as Envoy's router does.
var resetFlags = []struct{ reason, flag string }{
	{"local connection failure", "UF"},
	{"remote connection failure", "UF"},
	{"connection failure", "UF"},
	{"connection timeout", "UF"},
	{"connection termination", "UC"},
	{"local refused stream reset", "LR"},
	{"local reset", "LR"},
	{"overflow", "UO"},
	{"remote refused stream reset", "UR"},
	{"remote reset", "UR"},
	{"remote error with connect request", "UR"},
	{"protocol error", "UPE"},
	{"overload manager reset", "OM"},
}

// judgeReply tells a reply Envoy made up itself from the upstream's own, and
// names the flag Envoy's local reply body gives away. The upstream's reply
// carries x-envoy-upstream-service-time; Envoy's own does not.
func judgeReply(status int, h http.Header, body string) (flags, reason string, local bool) {
	text := strings.TrimSpace(body)
	lower := strings.ToLower(text)
	local = h.Get("X-Envoy-Upstream-Service-Time") == "" && isEnvoyServer(h)
	switch {
	case strings.Contains(lower, "no healthy upstream"):
		return "UH", "no healthy upstream", true
	case strings.Contains(lower, "upstream request timeout"):
		return "UT", "upstream request timeout", true
	case strings.Contains(lower, "upstream connect error or disconnect/reset before headers"):
		flag := ""
		if i := strings.Index(lower, "reset reason: "); i >= 0 {
			r := lower[i+len("reset reason: "):]
			for _, rf := range resetFlags {
				if strings.HasPrefix(r, rf.reason) {
					flag = rf.flag
					break
				}
			}
		}
		if strings.Contains(lower, "retried and the latest reset reason") {
			flag = joinFlags(flag, "URX")
		}
		if h.Get("X-Envoy-Overloaded") != "" && flag == "" {
			flag = "UO"
		}
		reason = text
		if i := strings.Index(lower, "reset reason: "); i >= 0 {
			reason = text[i:]
		}
		return flag, reason, true
	case h.Get("X-Envoy-Overloaded") != "":
		return "UO", "x-envoy-overloaded: circuit breaker or pending request limit", true
	case status == http.StatusNotFound && local && text == "":
		return "NR", "no route for this host/path in the source sidecar", true
	case local && status >= 500:
		return "", firstLine(text), true
	}
	return "", "", false
}

func isEnvoyServer(h http.Header) bool {
	s := strings.ToLower(h.Get("Server"))
	return s == "envoy" || s == "istio-envoy"
}

func joinFlags(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Transcript is the response as curl -v would show its essentials: status
// line, headers, body start and timing, for the incident log.
func (r TestResponse) Transcript() string {
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s (from container %s)\n", r.URL, r.Container)
	if r.Status != 0 {
		fmt.Fprintf(&b, "%s %d\n", r.Proto, r.Status)
		for _, k := range sortedKeys(r.Headers) {
			for _, v := range r.Headers[k] {
				fmt.Fprintf(&b, "%s: %s\n", strings.ToLower(k), v)
			}
		}
		if body := strings.TrimSpace(r.Body); body != "" {
			b.WriteString("\n" + body + "\n")
		}
	} else if r.Reason != "" {
		b.WriteString(r.Reason + "\n")
	}
	fmt.Fprintf(&b, "\ntiming: dns %s, connect %s, first byte %s, total %s", ms(r.DNS), ms(r.Connect), ms(r.FirstByte), ms(r.Total))
	if r.RemoteIP != "" {
		fmt.Fprintf(&b, ", remote %s", r.RemoteIP)
	}
	b.WriteString("\n")
	return b.String()
}

func ms(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }

func sortedKeys(h http.Header) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// shellQuote quotes s for a shell command line the on-call pastes.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
