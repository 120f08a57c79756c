package proxylog

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/parse/accesslog"
)

// BlackholeWindow is how far back a caller's proxy log is read for the
// hosts it refused to route (the service-entry probe's read, which the
// fixes' BlackholedHosts makes again).
const BlackholeWindow = 30 * time.Minute

// Blackholed is one destination the source's proxy refused to route.
type Blackholed struct {
	Host   string // authority or SNI without port, or the original destination IP
	Ports  []int  // original destination ports seen
	Count  int
	Sample string
}

// ParseBlackholed collects the destinations of entries Istio refused to
// route: TCP/TLS sent to BlackHoleCluster, and HTTP answered 502 by the
// block_all route that REGISTRY_ONLY puts on outbound HTTP ports. Lines
// are read by the mesh's access-log formats, then the built-in layouts.
func ParseBlackholed(log []byte, formats accesslog.Formats) ([]Blackholed, int) {
	byHost := map[string]*Blackholed{}
	entries := 0
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), accesslog.MaxLine)
	for sc.Scan() {
		e, ok := formats.ParseLine(sc.Text())
		if !ok {
			continue
		}
		entries++
		if !e.BlackHole() && e.RouteName != "block_all" {
			continue
		}
		host := hostWithoutPort(e.Destination())
		if host == "" {
			continue
		}
		b := byHost[host]
		if b == nil {
			b = &Blackholed{Host: host, Sample: sc.Text()}
			byHost[host] = b
		}
		b.Count++
		if _, port, err := net.SplitHostPort(e.DownstreamLocalAddress); err == nil {
			if n, err := strconv.Atoi(port); err == nil && !slices.Contains(b.Ports, n) {
				b.Ports = append(b.Ports, n)
			}
		}
	}
	out := make([]Blackholed, 0, len(byHost))
	for _, b := range byHost {
		sort.Ints(b.Ports)
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out, entries
}

// hostWithoutPort is s without its port, an IPv6 address without brackets.
func hostWithoutPort(s string) string {
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return strings.Trim(s, "[]")
}

// BlackholedHost is an external host the caller's sidecar sent to
// BlackHoleCluster (or answered from block_all), with the original
// destination ports and whether it came as TLS (SNI on a TCP entry).
type BlackholedHost struct {
	Host  string
	Ports []int
	TLS   bool
	Count int
}

// BlackholedHosts reads the caller's istio-proxy log as the service-entry
// probe does and lists the hosts it refused to route: for probes/remedies,
// which compute fixes from what the probes saw. It is the probe's own
// read, so the session's read cache answers it with what the probe judged;
// formats are the mesh's access-log formats (istioconfig.ReadAccessLogFormats).
func BlackholedHosts(ctx context.Context, c cluster.Cluster, src cluster.PodRef, formats accesslog.Formats) ([]BlackholedHost, error) {
	log, err := NewestLog(ctx, c, src, ProxyOptions(BlackholeWindow, AccessLogTailLines))
	if err != nil {
		return nil, err
	}
	hosts, _ := ParseBlackholed(log, formats)
	out := make([]BlackholedHost, 0, len(hosts))
	for _, h := range hosts {
		e, _ := formats.ParseLine(h.Sample)
		out = append(out, BlackholedHost{Host: h.Host, Ports: h.Ports, TLS: e.TCP && e.RequestedServerName != "", Count: h.Count})
	}
	return out, nil
}
