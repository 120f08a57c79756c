// Package live is the probes.Cluster of a real cluster: object reads through
// client-go and the Istio clientset, Envoy admin through a port-forward to the
// sidecar (or exec of pilot-agent when port-forward is refused), container
// logs through pods/log, and istiod's debug endpoints through a port-forward
// to its monitoring port. Every call is a read; nothing is ever written.
package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	istioclient "istio.io/client-go/pkg/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meshtriage/meshtriage/probes/cluster"
	"github.com/meshtriage/meshtriage/probes/cluster/clientset"
	"github.com/meshtriage/meshtriage/probes/cluster/podconn"
)

// Options tune a live Cluster; the zero value is ready to use.
type Options struct {
	// ControlPlaneNamespace is where istiod and the mesh config live
	// (default istio-system).
	ControlPlaneNamespace string
	// RequestTimeout bounds each API request and each Envoy admin / istiod
	// read when the kubeconfig and --request-timeout set none (default 30 s).
	// A triage never waits without a bound, so an explicit --request-timeout=0
	// also gets this default.
	RequestTimeout time.Duration
	// MaxResponseBytes caps one Envoy admin or istiod response (default
	// 256 MiB: a config_dump of a large mesh runs to ~100 MB).
	MaxResponseBytes int64
	// UserAgent names meshtriage in the API server's audit log.
	UserAgent string
	// Warmup, for a client made for one triage, is what triage.Live
	// starts opening alongside its reachability check (Cluster.Warm);
	// nil opens nothing before it is asked for.
	Warmup *Warmup
}

const (
	DefaultRequestTimeout   = 30 * time.Second
	DefaultMaxResponseBytes = 256 << 20

	// Probes of one wave run in parallel and each makes a handful of reads;
	// client-go's default of 5 QPS would serialise them for seconds.
	clientQPS   = 50
	clientBurst = 100

	// inClusterContext names the session when meshtriage runs in a pod with
	// its service account and no kubeconfig.
	inClusterContext = "in-cluster"
	// noContext names a session whose kubeconfig has no current context
	// (--server given on the command line).
	noContext = "(none)"
)

// ErrNoKubeconfig says no kubeconfig was found (KUBECONFIG, --kubeconfig,
// ~/.kube/config) and meshtriage is not running inside a cluster.
var ErrNoKubeconfig = errors.New("no kubeconfig")

// ContextNotFoundError says --context names a context the kubeconfig lacks.
type ContextNotFoundError struct {
	Name      string
	Available []string
	// Flag names the flag that gave the context when it is not --context
	// (--remote-contexts), so the on-call knows which one to correct.
	Flag string
}

func (e *ContextNotFoundError) Error() string {
	prefix := ""
	if e.Flag != "" {
		prefix = e.Flag + ": "
	}
	if len(e.Available) == 0 {
		return fmt.Sprintf("%scontext %q not found: the kubeconfig has no contexts", prefix, e.Name)
	}
	return fmt.Sprintf("%scontext %q not found in kubeconfig (contexts: %s)", prefix, e.Name, strings.Join(e.Available, ", "))
}

// Cluster reads a real cluster. It is safe for concurrent use.
type Cluster struct {
	clientset.Reader
	info     cluster.ClusterInfo
	config   *rest.Config
	timeout  time.Duration
	maxBytes int64

	// conn reaches into pods; New sets the client-go implementation, and
	// the package's tests replace it to drive the fallback and error paths
	// without a kubelet.
	conn podconn.Dialer

	// pods, when set by NewCache, is the cache the probes read through:
	// the admin and istiod reads then reuse the pods the probes have just
	// read instead of fetching them again for every admin path.
	pods podReader
	// tunnels, when set by NewCache, are the session's port-forwards, one
	// per pod port, shared by its admin and istiod reads. Without it each
	// read opens and closes a tunnel of its own.
	tunnels *tunnelPool

	// version is the last /version answer, shared by the copies NewCache
	// makes.
	version *versionMemo

	// warmed is what Warm started, for the first session to adopt;
	// istiodWarm, in that session's copy, hands it Warm's istiod list.
	warmed     *warmState
	istiodWarm *istiodHandoff
	warmup     *Warmup

	// remotes are the other clusters of the mesh (--remote-contexts),
	// each read through its own client; NewCache's copies share them.
	remotes []cluster.Remote
}

// SetRemotes gives the client the remote clusters of its triage.
func (c *Cluster) SetRemotes(remotes []cluster.Remote) { c.remotes = remotes }

// RemoteClusters are the clusters given with --remote-contexts; none
// given says so, never "no other cluster".
func (c *Cluster) RemoteClusters() ([]cluster.Remote, string) {
	if len(c.remotes) == 0 {
		return nil, cluster.RemotesNotRecorded
	}
	return c.remotes, ""
}

// Warmup is the Options.Warmup the client was made with.
func (c *Cluster) Warmup() *Warmup { return c.warmup }

type podReader interface {
	cluster.PodGetter
	ListPods(ctx context.Context, namespace string, selector map[string]string) ([]corev1.Pod, error)
}

// SessionCache is one triage's view of a live cluster: the probes' read
// cache, through which the Envoy admin and istiod reads find their pods
// too, and the port-forwards those reads share, one per pod port. Reset
// forgets the reads and lets the port-forwards go (each closes when the
// reads using it are done); Close does the same when the triage ends.
type SessionCache struct {
	*cluster.Cache
	tunnels *tunnelPool
}

// NewCache wraps c in the read cache the probes of one session share.
// c itself is left as it was: the session reads through a copy of it.
func NewCache(c *Cluster) *SessionCache {
	session := *c
	session.tunnels = newTunnelPool(c.conn, c.timeout)
	if w := c.warmed; w != nil && w.adopt() {
		session.tunnels = w.tunnels
		session.istiodWarm = &istiodHandoff{w: w}
	}
	cache := cluster.NewCache(&session)
	session.pods = cache
	return &SessionCache{Cache: cache, tunnels: session.tunnels}
}

// Reset forgets every read and lets the open port-forwards go: a re-run
// sees the cluster, and the pods, as they are now.
func (s *SessionCache) Reset() {
	s.Cache.Reset()
	s.tunnels.reset()
}

// Close lets the session's port-forwards go: each closes once the reads
// using it are done, and later reads open their own.
func (s *SessionCache) Close() error {
	s.tunnels.close()
	return nil
}

// OpenEnvoyAdmin starts opening the port-forward to pod's Envoy admin
// without waiting for it, so that the first admin read finds it open: the
// caller's pod is known before any probe runs, and the port-forward is the
// longest chain of round trips of a triage.
func (s *SessionCache) OpenEnvoyAdmin(pod cluster.PodRef) {
	s.tunnels.start(pod, cluster.EnvoyAdminPort)
}

// podsForReads is where the admin and istiod reads find their pods: the
// probes' cache when there is one.
func (c *Cluster) podsForReads() podReader {
	if c.pods != nil {
		return c.pods
	}
	return c
}

var _ cluster.Cluster = (*Cluster)(nil)

// New connects to the cluster that flags select, exactly as kubectl would
// (KUBECONFIG, --kubeconfig, --context, --request-timeout, ...). It does not
// contact the API server; ServerVersion is the cheap reachability check.
func New(flags *ConfigFlags, opts Options) (*Cluster, error) {
	loader := flags.ToRawKubeConfigLoader()
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, configError(flags, loader, err)
	}
	if noKubeconfig(flags, loader, cfg) {
		return nil, ErrNoKubeconfig
	}
	cfg = rest.CopyConfig(cfg)
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = opts.RequestTimeout
		if timeout <= 0 {
			timeout = DefaultRequestTimeout
		}
		cfg.Timeout = timeout
	}
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	// API deprecation warnings would be printed by klog over the terminal UI;
	// they say nothing about the incident.
	cfg.WarningHandler = rest.NoWarnings{}
	if opts.UserAgent != "" {
		cfg.UserAgent = opts.UserAgent
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	istio, err := istioclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("istio client: %w", err)
	}
	c := newCluster(clientset.Reader{Kube: kube, Istio: istio}, cfg, opts)
	c.warmup = opts.Warmup
	c.info.Context = contextName(flags, loader)
	c.conn = podconn.New(kube, cfg)
	return c, nil
}

// newCluster holds what New and the tests share.
func newCluster(r clientset.Reader, cfg *rest.Config, opts Options) *Cluster {
	ns := opts.ControlPlaneNamespace
	if ns == "" {
		ns = cluster.DefaultControlPlane
	}
	max := opts.MaxResponseBytes
	if max <= 0 {
		max = DefaultMaxResponseBytes
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	return &Cluster{
		Reader:   r,
		info:     cluster.ClusterInfo{Server: cfg.Host, ControlPlaneNamespace: ns},
		config:   cfg,
		timeout:  timeout,
		maxBytes: max,
		version:  &versionMemo{},
	}
}

func (c *Cluster) Info() cluster.ClusterInfo { return c.info }

// PodConn is how this client reaches into pods, for the confirm-first
// actions (probes/actions), which write through the same transport the
// reads use. The client itself only reads through it.
func (c *Cluster) PodConn() podconn.Dialer { return c.conn }

// ServerVersion GETs /version with ctx, unlike client-go's discovery call,
// which takes no context. An answer from the last few seconds is reused:
// the reachability check, the session's start and the versions probe all
// ask within a second, and each answer would cost a round trip.
func (c *Cluster) ServerVersion(ctx context.Context) (string, error) {
	if v, ok := c.version.recent(time.Now()); ok {
		return v, nil
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	raw, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", err
	}
	var v version.Info
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("/version: %w", err)
	}
	c.version.remember(v.GitVersion, time.Now())
	return v.GitVersion, nil
}

// versionMemo is the last /version answer and when it came.
type versionMemo struct {
	mu sync.Mutex
	v  string
	at time.Time
}

// versionReuse is how long a /version answer is reused.
const versionReuse = 10 * time.Second

func (m *versionMemo) recent(now time.Time) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.v == "" || now.Sub(m.at) > versionReuse || now.Before(m.at) {
		return "", false
	}
	return m.v, true
}

func (m *versionMemo) remember(v string, at time.Time) {
	m.mu.Lock()
	m.v, m.at = v, at
	m.mu.Unlock()
}

// bound applies the request timeout to calls that do not go through the
// REST client (port-forward, exec), so --request-timeout bounds them too.
// RequestTimeout bounds each call to the API server.
func (c *Cluster) RequestTimeout() time.Duration { return c.timeout }

func (c *Cluster) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

func contextName(flags *ConfigFlags, loader clientcmd.ClientConfig) string {
	if flags.Context != nil && *flags.Context != "" {
		return *flags.Context
	}
	raw, err := loader.RawConfig()
	if err == nil && raw.CurrentContext != "" {
		return raw.CurrentContext
	}
	if inCluster() {
		return inClusterContext
	}
	return noContext
}

// noKubeconfig tells an empty kubeconfig from a real one: client-go then
// silently falls back to kubectl's historical default server
// (localhost:8080), which only ever yields a confusing "connection refused".
func noKubeconfig(flags *ConfigFlags, loader clientcmd.ClientConfig, cfg *rest.Config) bool {
	if flags.APIServer != nil && *flags.APIServer != "" {
		return false
	}
	if inCluster() || cfg.Host != clientcmd.ClusterDefaults.Server {
		return false
	}
	raw, err := loader.RawConfig()
	return err == nil && len(raw.Clusters) == 0
}

// inCluster is client-go's own test for a pod's service-account config.
func inCluster() bool {
	return os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBERNETES_SERVICE_PORT") != ""
}

// configError turns clientcmd's loading errors into ones a CLI can explain.
func configError(flags *ConfigFlags, loader clientcmd.ClientConfig, err error) error {
	switch {
	case clientcmd.IsEmptyConfig(err):
		return ErrNoKubeconfig
	case clientcmd.IsContextNotFound(err) || isMissingContext(err):
		name := ""
		if flags.Context != nil {
			name = *flags.Context
		}
		var available []string
		if raw, rerr := loader.RawConfig(); rerr == nil {
			for n := range raw.Contexts {
				available = append(available, n)
			}
			if name == "" {
				name = raw.CurrentContext
			}
		}
		sort.Strings(available)
		return &ContextNotFoundError{Name: name, Available: available}
	case errors.Is(err, fs.ErrNotExist) && flags.KubeConfig != nil && *flags.KubeConfig != "":
		return fmt.Errorf("kubeconfig %s does not exist", *flags.KubeConfig)
	}
	return fmt.Errorf("kubeconfig: %w", err)
}

// isMissingContext matches clientcmd's `context "x" does not exist`, which
// it returns for --context instead of its typed not-found error.
func isMissingContext(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, `context "`) && strings.HasSuffix(msg, `" does not exist`)
}
