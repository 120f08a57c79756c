package podfacts

import (
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Where a server is told to listen.
const (
	BindLoopback = "loopback only"
	BindAll      = "all addresses"
)

// Bind is the address a container's spec tells its server to listen on
// for a port: a flag of its command or arguments, or an environment
// variable, found where a JSON patch can replace it.
type Bind struct {
	Where string // BindLoopback or BindAll
	// Field is "command", "args" or "env"; Index the element of that list
	// holding Value (an env entry's value).
	Field string
	Index int
	// Value is the element as written: "--bind=127.0.0.1:8080", the
	// "127.0.0.1" after "--host", an env value.
	Value string
	// Host is the address inside Value.
	Host string
	// Line says it as a reader finds it: "--host 127.0.0.1", "APP_HOST=localhost".
	Line string
}

// bindFlags are the flags with which servers are told their address
// (uvicorn, gunicorn, Flask, Rails, Next.js, most Go flag sets).
var bindFlags = []string{"--host", "--bind", "-b", "--address", "--addr", "--listen", "--listen-address", "--http-address", "-H", "--hostname"}

// bindEnv are the environment variables that do.
var bindEnv = regexp.MustCompile(`^(?:[A-Z0-9_]*_)?(?:HOST|BIND|ADDR|ADDRESS|LISTEN|LISTEN_ADDR(?:ESS)?|HOSTNAME)$`)

// SpecBind reads the container's command, arguments and environment for
// the address it is told to listen on for port: a host alone, or with
// that port (another port's address says nothing of this one).
func SpecBind(c corev1.Container, port int32) (Bind, bool) {
	for _, field := range []struct {
		name string
		list []string
	}{{"command", c.Command}, {"args", c.Args}} {
		for i, a := range field.list {
			flag, value, joined := strings.Cut(a, "=")
			at := i
			if !joined {
				if i+1 >= len(field.list) {
					continue
				}
				value, at = field.list[i+1], i+1
			}
			if !slices.Contains(bindFlags, flag) {
				continue
			}
			if where, host := bindValue(value, port); where != "" {
				return Bind{Where: where, Field: field.name, Index: at, Value: field.list[at], Host: host, Line: flag + " " + value}, true
			}
		}
	}
	for i, e := range c.Env {
		if !bindEnv.MatchString(e.Name) {
			continue
		}
		if where, host := bindValue(e.Value, port); where != "" {
			return Bind{Where: where, Field: "env", Index: i, Value: e.Value, Host: host, Line: e.Name + "=" + e.Value}, true
		}
	}
	return Bind{}, false
}

// bindValue says where a bind value (HOST, HOST:PORT, scheme://HOST:PORT)
// puts the server, and the host in it: "" when it names another port or
// no address.
func bindValue(v string, port int32) (string, string) {
	v = strings.TrimSpace(v)
	if _, rest, ok := strings.Cut(v, "://"); ok {
		v = rest
	}
	host := v
	if h, p, err := net.SplitHostPort(v); err == nil {
		if p != strconv.Itoa(int(port)) {
			return "", ""
		}
		host = h
	}
	switch {
	case LoopbackHost(host):
		return BindLoopback, host
	case host == "0.0.0.0" || host == "::" || host == "":
		return BindAll, host
	}
	return "", ""
}

// LoopbackHost: localhost, or an address of 127.0.0.0/8 or ::1 (bracketed
// or not).
func LoopbackHost(h string) bool {
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// AllAddresses is Value with its loopback host replaced by the wildcard
// of its family: 0.0.0.0, or :: for ::1.
func (b Bind) AllAddresses() string {
	wildcard := "0.0.0.0"
	if ip := net.ParseIP(b.Host); ip != nil && ip.To4() == nil {
		wildcard = "::"
	}
	return strings.Replace(b.Value, b.Host, wildcard, 1)
}
