package envoy

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
)

// Listener is one listener of /listeners?format=json.
type Listener struct {
	Name    string
	Address string // ip:port
	IP      string
	Port    int32
}

// VirtualOutbound and VirtualInbound are the listeners Istio's iptables
// redirect lands on (15001, 15006); they hand connections to the listener
// of the original destination, or to PassthroughCluster/BlackHoleCluster
// when there is none.
const (
	VirtualOutbound = "virtualOutbound"
	VirtualInbound  = "virtualInbound"
)

// ParseListeners decodes /listeners?format=json.
func ParseListeners(data []byte) ([]Listener, error) {
	var ls adminv3.Listeners
	if err := tolerant(nil).Unmarshal(data, &ls); err != nil {
		return nil, fmt.Errorf("listeners?format=json: %w", err)
	}
	out := make([]Listener, 0, len(ls.GetListenerStatuses()))
	for _, l := range ls.GetListenerStatuses() {
		sa := l.GetLocalAddress().GetSocketAddress()
		out = append(out, Listener{
			Name:    l.GetName(),
			Address: AddressString(l.GetLocalAddress()),
			IP:      sa.GetAddress(),
			Port:    int32(sa.GetPortValue()),
		})
	}
	return out, nil
}

// CoversPort reports whether l captures outbound traffic to port of a service
// with the given cluster IPs: Istio names an HTTP (shared) listener
// 0.0.0.0_PORT and a TCP one VIP_PORT. With no VIPs known, any listener on
// the port counts, since it may be the service's, except one bound to
// loopback: that is an inbound listener in front of the local app (Kuma's
// inbound:127.0.0.1:8000), which no outbound connection reaches.
func (l Listener) CoversPort(port int32, vips []string) bool {
	if l.Name == VirtualOutbound || l.Name == VirtualInbound {
		return false
	}
	ip, p := l.IP, l.Port
	if nameIP, namePort, ok := splitListenerName(l.Name); ok && (ip == "" || p == 0) {
		ip, p = nameIP, namePort
	}
	if p != port {
		return false
	}
	if a := net.ParseIP(ip); a != nil && a.IsLoopback() {
		return false
	}
	if ip == "0.0.0.0" || ip == "::" || len(vips) == 0 {
		return true
	}
	for _, v := range vips {
		if ip == v {
			return true
		}
	}
	return false
}

// splitListenerName splits Istio's listener names, IP_PORT.
func splitListenerName(name string) (string, int32, bool) {
	i := strings.LastIndexByte(name, '_')
	if i <= 0 {
		return "", 0, false
	}
	port, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || net.ParseIP(name[:i]) == nil {
		return "", 0, false
	}
	return name[:i], int32(port), true
}
