package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// AppLine is one app log line, after seconds past a start time.
type AppLine struct {
	After          float64
	Level, Message string
}

// appLines renders lines as the shop's apps log: "TIME LEVEL message".
func appLines(start time.Time, lines []AppLine) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = fmt.Sprintf("%s %-5s %s", accessLogTime(start.Add(seconds(l.After))), l.Level, l.Message)
	}
	return out
}

// agentStartup is pilot-agent's and Envoy's first lines, up to "Envoy
// proxy is ready" readyAfter seconds after start.
func agentStartup(p *Pod, start time.Time, readyAfter float64) []string {
	const concurrency = 2
	t := start.Add(118 * time.Millisecond)
	var lines []string
	log := func(afterMs float64, level, msg string) {
		t = t.Add(millis(afterMs))
		lines = append(lines, agentTime(t)+"\t"+level+"\t"+msg)
	}
	log(0, "info", `FLAG: --concurrency="0"`)
	log(1, "info", fmt.Sprintf(`FLAG: --domain="%s.svc.cluster.local"`, p.Namespace))
	log(0, "info", `FLAG: --log_output_level="default:info"`)
	log(0, "info", `FLAG: --proxyComponentLogLevel="misc:error"`)
	log(0, "info", `FLAG: --proxyLogLevel="warning"`)
	log(3, "info", "Version "+p.ProxyVersion+"-f4ed5a1d8fe1f3f2d1c9d5d8b6c58a1f0cfbf33c-Clean")
	log(1, "info", "Maximum file descriptors (ulimit -n): 1048576")
	log(0, "info", fmt.Sprintf("Proxy role\tips=[%s] type=sidecar id=%s domain=%s.svc.cluster.local", p.IP, p.ProxyID(), p.Namespace))
	log(0, "info", "Apply proxy config from env {}")
	log(3, "info", fmt.Sprintf("cpu limit detected as %d, setting concurrency", concurrency))
	log(1, "info", "JWT policy is third-party-jwt")
	log(0, "info", "using credential fetcher of JWT type in "+meshDomain+" trust domain")
	log(198, "info", "Workload SDS socket not found. Starting Istio SDS Server")
	log(0, "info", "CA Endpoint istiod.istio-system.svc:15012, provider Citadel")
	log(0, "info", "Opened SDS socket: ./var/run/secrets/workload-spiffe-uds/socket")
	log(0, "info", "Using CA istiod.istio-system.svc:15012 cert with certs: var/run/secrets/istio/root-cert.pem")
	log(1, "info", `xdsproxy	Initializing with upstream address "istiod.istio-system.svc:15012" and cluster "Kubernetes"`)
	log(2, "info", "Pilot SAN: [istiod.istio-system.svc]")
	log(1, "info", "Starting proxy agent")
	log(0, "info", fmt.Sprintf("Envoy command: [-c etc/istio/proxy/envoy-rev.json --drain-time-s 45 --drain-strategy immediate --local-address-ip-version v4 "+
		"--file-flush-interval-msec 1000 --disable-hot-restart --allow-unknown-static-fields -l warning --component-log-level misc:error --concurrency %d]", concurrency))
	log(171, "info", "cache\tgenerated new workload certificate\tresourceName=default latency=171.73ms ttl=23h59m59.48s")
	log(0, "info", "cache\tRoot cert has changed, start rotating root cert")
	log(0, "info", "cache\treturned workload trust anchor from cache\tttl=23h59m59.48s")
	log(100, "info", "xdsproxy\tconnected to delta upstream XDS server: istiod.istio-system.svc:15012\tid=1")
	log(92, "info", "ads\tADS: new connection for node:"+p.ProxyID()+"-1")
	log(0, "info", "ads\tADS: new connection for node:"+p.ProxyID()+"-2")
	// Ready readyAfter after the start, or 5 ms after the last line.
	rest := max(seconds(readyAfter)-t.Sub(start), 5*time.Millisecond)
	log(float64(rest)/float64(time.Millisecond), "info", fmt.Sprintf("Readiness succeeded in %.3fms", readyAfter*1000+3.5))
	log(0, "info", "Envoy proxy is ready")
	return lines
}

// agentDrain is a classic sidecar's shutdown without drain settings:
// pilot-agent waits terminationDrainDuration (5 s by default), then kills
// Envoy.
func agentDrain(start time.Time) []string {
	const drainSeconds = 5
	end := start.Add(drainSeconds * time.Second)
	us := func(t time.Time, micros int) string {
		return agentTime(t.Add(time.Duration(micros) * time.Microsecond))
	}
	return []string{
		us(start, 212) + "\tinfo\tStatus server has successfully terminated",
		us(start, 377) + "\tinfo\tAgent draining Proxy for termination",
		us(start, 1021) + fmt.Sprintf("\tinfo\tGraceful termination period is %ds, starting...", drainSeconds),
		us(end, 1590) + "\tinfo\tGraceful termination period complete, terminating remaining proxies.",
		us(end, 1711) + "\twarn\tAborting proxy",
		us(end, 9340) + "\tinfo\tEnvoy aborted normally",
		us(end, 9422) + "\twarn\tAborted proxy instance",
		us(end, 9501) + "\tinfo\tAgent has successfully terminated",
	}
}

// AccessEntry is one access-log line in Istio's default TEXT format.
// Empty strings print as Envoy's "-" (UserAgent and Route have their own
// defaults); Method "-" is a TCP connection.
type AccessEntry struct {
	Start                                        time.Time
	Method, Path                                 string
	Code                                         int
	Flags, Details                               string
	UpstreamHost, Cluster                        string
	DownstreamLocal, DownstreamRemote            string
	Authority                                    string
	UpstreamLocal, Termination, TransportFailure string
	RxBytes, TxBytes, DurationMs                 int
	// UpstreamTime "" means: "-" for a failed 0/502/503, else duration-1.
	UpstreamTime                     string
	UserAgent, RequestID, SNI, Route string
	Protocol, ForwardedFor           string
}

// Line renders the entry in the field order of Istio's default format,
// the one the access-log probe parses.
func (e AccessEntry) Line() string {
	dash := func(s string) string { return firstNonEmpty(s, "-") }
	flags := dash(e.Flags)
	upstreamTime := e.UpstreamTime
	if upstreamTime == "" {
		if (e.Code == 0 || e.Code == 503 || e.Code == 502) && flags != "-" {
			upstreamTime = "-"
		} else {
			upstreamTime = strconv.Itoa(max(e.DurationMs-1, 1))
		}
	}
	requestID := e.RequestID
	if requestID == "" {
		requestID = stableUID("rid", accessLogTime(e.Start), e.Path, e.UpstreamHost, e.DownstreamRemote)
	}
	request := fmt.Sprintf(`"%s %s %s"`, e.Method, e.Path, firstNonEmpty(e.Protocol, "HTTP/1.1"))
	userAgent, authority := firstNonEmpty(e.UserAgent, "Go-http-client/1.1"), e.Authority
	if e.Method == "-" {
		request, userAgent, requestID, authority = `"- - -"`, "-", "-", "-"
	}
	quote := func(s string) string { return `"` + s + `"` }
	return strings.Join([]string{
		"[" + accessLogTime(e.Start) + "]", request, strconv.Itoa(e.Code), flags, dash(e.Details), dash(e.Termination),
		quote(dash(e.TransportFailure)), strconv.Itoa(e.RxBytes), strconv.Itoa(e.TxBytes), strconv.Itoa(e.DurationMs), upstreamTime,
		quote(dash(e.ForwardedFor)), quote(userAgent), quote(requestID), quote(authority),
		quote(dash(e.UpstreamHost)), dash(e.Cluster), dash(e.UpstreamLocal), e.DownstreamLocal, e.DownstreamRemote, dash(e.SNI),
		firstNonEmpty(e.Route, "default"),
	}, " ")
}

// logLineTime is the sort key of a log line: its timestamp, whichever of
// the formats the line uses, padded to microseconds.
func logLineTime(line string) string {
	if strings.HasPrefix(line, "{") {
		// A JSON access-log entry: its start_time.
		if _, rest, ok := strings.Cut(line, `"start_time":"`); ok {
			line, _, _ = strings.Cut(rest, `"`)
		}
	}
	s := strings.TrimPrefix(line, "[")
	if len(s) > 27 {
		s = s[:27]
	}
	s = strings.Split(s, "]")[0]
	s = strings.Split(s, "\t")[0]
	s = strings.Split(s, " ")[0]
	s = strings.TrimRight(s, "Z")
	if len(s) < 26 {
		s += strings.Repeat("0", 26-len(s))
	}
	return s
}
