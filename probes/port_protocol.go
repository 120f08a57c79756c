package probes

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/mesh"
	"github.com/meshtriage/meshtriage/probes/podfacts"
	"github.com/meshtriage/meshtriage/probes/proxylog"
	"github.com/meshtriage/meshtriage/probes/readgroup"
	"github.com/meshtriage/meshtriage/probes/wording"
)

// PortProtocolProbe reads whether a server that speaks first sits behind
// a port Istio reads as HTTP or sniffs. istiod reads a Service port's
// protocol from its appProtocol, else its name (pkg/config/kube
// ConvertProtocol); on an HTTP port the sidecars put an HTTP connection
// manager, on an unnamed one an http_inspector that waits for the
// client's first bytes (protocolDetectionTimeout, 0 by default: forever).
// A server-first protocol (MySQL's handshake, SMTP's and FTP's greeting,
// SSH's banner) sends the first bytes itself: the client waits for a
// greeting the sidecar never asks the server for, and gives up with no
// access-log line, since a connection without a request logs nothing
// (Istio's application requirements, "Server First Protocols"). istiod
// reads ports 25, 53, 3306 and 27017 as TCP only when nothing names
// them, so "http-mysql" on 3306 is HTTP. That the server speaks first is
// read from what the cluster shows: the port's number and the image of
// the container that declares it; the callers' own logs say the greeting
// never came.
type PortProtocolProbe struct{}

func (PortProtocolProbe) Meta() Meta {
	return Meta{
		ID:    "port-protocol",
		Title: "The port's protocol as istiod reads it, and whether its server speaks first",
		Reads: []string{"services", "pods", "pods/log (the caller's app containers)"},
		Facts: []FactSpec{
			{"portproto_ports", FactList, "the Service ports judged (the target port, or every port), as PORT NAME: PROTOCOL by WHAT (istiod's reading: appProtocol, the name's prefix, the port number, or sniffed)"},
			{"portproto_server_first", FactList, "ports Istio reads as HTTP or sniffs whose server speaks first, as PORT NAME: the reading and the signs (the port number of a server-first protocol, the image of the container that declares it)"},
			{"portproto_server_first_ports", FactList, "the numbers of those ports, for the fix"},
			{"portproto_client_errors", FactInt, "lines of the caller's app containers that say the server's greeting never came (MySQL's 'reading initial communication packet', SMTP's 'Greeting never received', ...)"},
			{"portproto_caller_logs_read", FactBool, "the caller's app-container logs were read (false when no caller is named or they could not be read)"},
		},
	}
}

// serverFirstPorts are the well-known ports of protocols whose server
// speaks first: istiod's own list (ConvertProtocol: 25, 3306, 27017; 53 is
// DNS, not judged here) and the greeting protocols of the application
// requirements (FTP, SSH, POP3, IMAP, SMTP submission, NATS).
var serverFirstPorts = map[int32]string{
	21: "FTP", 22: "SSH", 25: "SMTP", 110: "POP3", 143: "IMAP", 587: "SMTP", 3306: "MySQL", 4222: "NATS", 27017: "MongoDB",
}

// serverFirstImages are images (their repository's last path element)
// whose servers speak first.
var serverFirstImages = map[string]string{
	"mysql": "MySQL", "mariadb": "MySQL", "percona": "MySQL", "percona-server": "MySQL", "mysql-server": "MySQL",
	"mongo": "MongoDB", "mongodb": "MongoDB", "mongodb-community-server": "MongoDB",
	"postfix": "SMTP", "exim": "SMTP", "mailhog": "SMTP", "mailpit": "SMTP", "smtp": "SMTP",
	"nats": "NATS", "vsftpd": "FTP", "openssh-server": "SSH", "dovecot": "IMAP",
}

// greetingNeverCame are what clients of server-first protocols log when
// the server's first bytes never arrive.
var greetingNeverCame = regexp.MustCompile(`(?i)reading initial communication packet|lost connection to mysql server at 'handshake|communications link failure|greeting never received|timed out waiting for (?:the )?(?:server )?greeting|smtpserverdisconnected|nats: timeout`)

// callerAppLogBytes is how much of the caller's app containers' newest log
// is read for client errors.
const callerAppLogBytes = 64 << 10

type portProtocolInput struct {
	Service *corev1.Service
	Pods    []corev1.Pod
	// CallerLogs are the caller's app containers' newest logs; nil when
	// not read.
	CallerLogs     map[string][]byte
	CallerLogsRead bool
	Problems       []string
}

func (PortProtocolProbe) Run(ctx context.Context, c cluster.Cluster, t cluster.Target) Result {
	in, what, err := fetchPortProtocol(ctx, c, t)
	if err != nil {
		r := ErrorResult(what, err)
		r.Commands = portProtocolCommands(t)
		return r
	}
	r := evaluatePortProtocol(t, in)
	r.Commands = portProtocolCommands(t)
	return r
}

func fetchPortProtocol(ctx context.Context, c cluster.Cluster, t cluster.Target) (portProtocolInput, string, error) {
	var in portProtocolInput
	svc, err := c.GetService(ctx, t.Namespace, t.Service)
	if err != nil {
		return in, fmt.Sprintf("get service %s/%s", t.Namespace, t.Service), err
	}
	in.Service = svc
	var g readgroup.Group
	if len(svc.Spec.Selector) > 0 {
		g.Go(func() {
			pods, err := c.ListPods(ctx, t.Namespace, svc.Spec.Selector)
			if err != nil {
				in.Problems = append(in.Problems, cluster.AccessProblem(fmt.Sprintf("list pods in %s matching %s", t.Namespace, labels.SelectorFromSet(svc.Spec.Selector)), err))
				return
			}
			in.Pods = pods
		})
	}
	var caller *corev1.Pod
	if t.Source != nil {
		src := *t.Source
		g.Go(func() {
			pod, err := c.GetPod(ctx, src.Namespace, src.Name)
			if err != nil {
				return // the target step says the caller is not there
			}
			caller = pod
		})
	}
	g.Wait()
	// The caller's words matter only when a port is suspect: read its app
	// logs then alone, so a triage of any other port reads the same
	// (nothing) whether its source holds them or not.
	if caller == nil || !anyServerFirstSuspect(t, in) {
		return in, "", nil
	}
	src := *t.Source
	apps := mesh.AppContainers(caller)
	logs := make([][]byte, len(apps))
	var reads readgroup.Group
	for i, app := range apps {
		reads.Go(func() {
			logs[i], _ = proxylog.NewestLog(ctx, c, src, cluster.LogOptions{Container: app.Name, Since: proxylog.Window, LimitBytes: callerAppLogBytes})
		})
	}
	reads.Wait()
	in.CallerLogs = map[string][]byte{}
	for i, app := range apps {
		if logs[i] != nil {
			in.CallerLogs[app.Name] = logs[i]
			in.CallerLogsRead = true
		}
	}
	return in, "", nil
}

// anyServerFirstSuspect: a port judged is read as HTTP or sniffed and
// shows a sign of a server that speaks first.
func anyServerFirstSuspect(t cluster.Target, in portProtocolInput) bool {
	for _, sp := range in.Service.Spec.Ports {
		if t.Port != 0 && sp.Port != t.Port {
			continue
		}
		if envoyWaitsForClient(mesh.ReadPortProtocol(sp).Protocol) && len(serverFirstSigns(sp, in.Pods)) > 0 {
			return true
		}
	}
	return false
}

func evaluatePortProtocol(t cluster.Target, in portProtocolInput) Result {
	r := Result{Probe: "port-protocol"}
	r.Evidence.Columns = []string{"port", "name", "appProtocol", "istiod reads", "by", "server speaks first"}
	var ports, serverFirst, serverFirstPorts []string
	for _, sp := range in.Service.Spec.Ports {
		if t.Port != 0 && sp.Port != t.Port {
			continue
		}
		reading := mesh.ReadPortProtocol(sp)
		ports = append(ports, fmt.Sprintf("%d %s: %s by %s", sp.Port, wording.Dash(sp.Name), reading.Protocol, reading.DeclaredBy))
		app := "-"
		if sp.AppProtocol != nil {
			app = *sp.AppProtocol
		}
		signs := serverFirstSigns(sp, in.Pods)
		waits := envoyWaitsForClient(reading.Protocol)
		said := "no sign"
		if len(signs) > 0 {
			said = strings.Join(signs, "; ")
		}
		r.Evidence.Rows = append(r.Evidence.Rows, []string{strconv.Itoa(int(sp.Port)), wording.Dash(sp.Name), app, reading.Protocol, reading.DeclaredBy, said})
		if waits && len(signs) > 0 {
			serverFirst = append(serverFirst, fmt.Sprintf("%d %s: %s by %s; %s", sp.Port, wording.Dash(sp.Name), reading.Protocol, reading.DeclaredBy, strings.Join(signs, "; ")))
			serverFirstPorts = append(serverFirstPorts, strconv.Itoa(int(sp.Port)))
		}
	}
	clientErrors, sample := 0, ""
	for _, name := range callerLogNames(in.CallerLogs) {
		for _, l := range strings.Split(string(in.CallerLogs[name]), "\n") {
			if greetingNeverCame.MatchString(l) {
				clientErrors++
				if sample == "" {
					sample = name + ": " + strings.TrimSpace(l)
				}
			}
		}
	}
	r.Facts = Facts{
		"portproto_ports":              nonNil(ports),
		"portproto_server_first":       nonNil(serverFirst),
		"portproto_server_first_ports": nonNil(serverFirstPorts),
		"portproto_client_errors":      clientErrors,
		"portproto_caller_logs_read":   in.CallerLogsRead,
	}
	var problems, warnings []string
	if len(serverFirst) > 0 {
		problems = append(problems, "a server that speaks first behind a port the sidecars read as HTTP or sniff, so they wait for the client's bytes: "+strings.Join(serverFirst, "; "))
	}
	if clientErrors > 0 {
		warnings = append(warnings, fmt.Sprintf("the caller's app logged %s that the server's greeting never came (%s)", wording.CountNoun(clientErrors, "time"), sample))
	}
	warnings = append(warnings, in.Problems...)
	head := fmt.Sprintf("%s judged: %s", wording.CountNoun(len(ports), "port"), strings.Join(ports, ", "))
	r.Status, r.Summary = verdict{Head: head, Problems: problems, Warnings: warnings}.judge()
	return r
}

// envoyWaitsForClient: on an HTTP port the sidecar's HTTP connection
// manager, on a sniffed one its http_inspector, reads the client's bytes
// before anything goes to the server.
func envoyWaitsForClient(protocol string) bool {
	switch protocol {
	case "HTTP", "HTTP2", "GRPC", "GRPC-Web", "HTTP_PROXY", mesh.ProtocolSniffed:
		return true
	}
	return false
}

// serverFirstSigns are what the cluster shows of a server that speaks
// first on the Service port: the port's number (the Service's, or the
// container port it lands on) and the image of the container declaring it
// (every app container's when none declares it).
func serverFirstSigns(sp corev1.ServicePort, pods []corev1.Pod) []string {
	var signs []string
	if p, ok := serverFirstPorts[sp.Port]; ok {
		signs = append(signs, fmt.Sprintf("port %d is %s's", sp.Port, p))
	}
	for i := range pods {
		pod := &pods[i]
		cp := podfacts.TargetPortOn(&sp, pod)
		if p, ok := serverFirstPorts[cp]; ok && cp != sp.Port {
			signs = append(signs, fmt.Sprintf("container port %d is %s's", cp, p))
		}
		var declaring []corev1.Container
		for _, c := range mesh.AppContainers(pod) {
			for _, port := range c.Ports {
				if port.ContainerPort == cp {
					declaring = append(declaring, c)
				}
			}
		}
		if len(declaring) == 0 {
			declaring = mesh.AppContainers(pod)
		}
		for _, c := range declaring {
			if p, ok := serverFirstImages[imageName(c.Image)]; ok {
				signs = append(signs, fmt.Sprintf("container %s runs %s (%s)", c.Name, c.Image, p))
			}
		}
	}
	slices.Sort(signs)
	return slices.Compact(signs)
}

// imageName is an image reference's repository's last element, without
// tag or digest: "docker.io/library/mysql:8.0" is "mysql".
func imageName(ref string) string {
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	name := path.Base(ref)
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	return strings.ToLower(name)
}

func callerLogNames(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func portProtocolCommands(t cluster.Target) []string {
	cmds := []string{fmt.Sprintf("kubectl get service -n %s %s -o jsonpath='{range .spec.ports[*]}{.port} {.name} {.appProtocol}{\"\\n\"}{end}'", t.Namespace, t.Service)}
	if t.Source != nil {
		port := ""
		if t.Port != 0 {
			port = fmt.Sprintf(" --port %d", t.Port)
		}
		cmds = append(cmds, fmt.Sprintf("istioctl proxy-config listeners -n %s %s%s -o json | grep -E 'http_connection_manager|tcp_proxy|http_inspector'", t.Source.Namespace, t.Source.Name, port))
	}
	return cmds
}
