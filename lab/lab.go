// Package lab runs real control-plane parts on one machine for integration
// tests: etcd (Debian's etcd-server), a kube-apiserver built from the Go module
// proxy (lab/tools/kube-apiserver), the Istio CRDs from the istio.io/api
// module, and a fake kubelet that serves pods/log, pods/portforward and
// pods/exec for the pods a scenario records. Nothing else runs: no scheduler,
// no controllers, so Apply creates what they would have (default
// ServiceAccounts, EndpointSlices, pod status) itself.
package lab

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options configure Start.
type Options struct {
	// Dir holds etcd's data, certificates, process logs, the audit log and
	// the kubeconfig. Empty: a new temporary directory that Stop removes.
	Dir string
	// Logf reports progress (nil: quiet).
	Logf func(format string, args ...any)
	// SkipIstioCRDs leaves the API server without the Istio kinds, as a
	// cluster without Istio would be.
	SkipIstioCRDs bool
}

// Lab is a running etcd + kube-apiserver + fake kubelet.
type Lab struct {
	Dir        string
	Server     string // https://127.0.0.1:PORT
	Kubeconfig string // admin kubeconfig (context "meshlab")
	AuditLog   string
	// Config is the admin's (system:masters) client config.
	Config  *rest.Config
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Kubelet *Kubelet

	caPEM      []byte
	adminToken string
	etcdURL    string
	removeDir  bool
	etcd       *process
	apiserver  *process
	logf       func(string, ...any)
	stopOnce   sync.Once
}

// Well-known identities of the lab.
const (
	AdminUser   = "meshlab-admin"
	ContextName = "meshlab"
	NodeName    = "meshlab-node"
)

// Start brings the lab up. On error everything already started is stopped.
func Start(ctx context.Context, opts Options) (_ *Lab, err error) {
	l := &Lab{logf: opts.Logf}
	if l.logf == nil {
		l.logf = func(string, ...any) {}
	}
	defer func() {
		if err != nil {
			l.Stop()
		}
	}()
	if opts.Dir == "" {
		d, err := os.MkdirTemp("", "meshlab-")
		if err != nil {
			return nil, err
		}
		opts.Dir, l.removeDir = d, true
	}
	l.Dir = opts.Dir
	if err := os.MkdirAll(filepath.Join(l.Dir, "certs"), 0o700); err != nil {
		return nil, err
	}

	apiserverBin, err := APIServerBinary(ctx)
	if err != nil {
		return nil, err
	}
	etcdBin, err := EtcdPath()
	if err != nil {
		return nil, err
	}

	if l.etcdURL, err = l.startEtcd(ctx, etcdBin); err != nil {
		return nil, err
	}
	if err := l.startAPIServer(ctx, apiserverBin, l.etcdURL); err != nil {
		return nil, err
	}
	if err := l.writeKubeconfig(); err != nil {
		return nil, err
	}
	l.Config = l.RESTConfig(l.adminToken)
	if l.Kube, err = kubernetes.NewForConfig(l.Config); err != nil {
		return nil, err
	}
	if l.Dynamic, err = dynamic.NewForConfig(l.Config); err != nil {
		return nil, err
	}
	if l.Kubelet, err = StartKubelet(); err != nil {
		return nil, err
	}
	if err := l.RegisterNode(ctx, NodeName); err != nil {
		return nil, err
	}
	if !opts.SkipIstioCRDs {
		start := time.Now()
		if err := ApplyIstioCRDs(ctx, l.Dynamic, l.Kube.Discovery()); err != nil {
			return nil, err
		}
		l.logf("Istio CRDs served (%s)", time.Since(start).Round(time.Millisecond))
		// A waypoint is a Gateway API Gateway: an ambient mesh has the kind.
		start = time.Now()
		if err := ApplyGatewayAPICRDs(ctx, l.Dynamic, l.Kube.Discovery()); err != nil {
			return nil, err
		}
		l.logf("Gateway API CRDs served (%s)", time.Since(start).Round(time.Millisecond))
	}
	return l, nil
}

// StartT starts a lab for a test and stops it when the test ends, printing
// the API server's log tail if the test failed.
func StartT(t testing.TB, opts Options) *Lab {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("start lab: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-apiserver log tail:\n%s", tail(filepath.Join(l.Dir, "kube-apiserver.log"), 40))
		}
		l.Stop()
	})
	return l
}

// Stop ends the kubelet, the API server and etcd, and removes a temporary Dir.
// It is safe to call more than once.
func (l *Lab) Stop() {
	l.stopOnce.Do(func() {
		if l.Kubelet != nil {
			l.Kubelet.Close()
		}
		if l.apiserver != nil {
			l.apiserver.stop(15 * time.Second)
		}
		if l.etcd != nil {
			l.etcd.stop(10 * time.Second)
		}
		if l.removeDir {
			os.RemoveAll(l.Dir)
		}
	})
}

// KillAPIServer ends the API server abruptly, as a crash or a network cut
// would, while the rest of the lab keeps running.
func (l *Lab) KillAPIServer() { l.apiserver.kill() }

// RESTConfig is a client config for the lab's server authenticating with
// token.
func (l *Lab) RESTConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            l.Server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: l.caPEM},
		QPS:             200,
		Burst:           400,
	}
}

// WriteKubeconfig writes a kubeconfig for token to path, with context
// "meshlab" and namespace as its default.
func (l *Lab) WriteKubeconfig(path, user, token, namespace string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ContextName] = &clientcmdapi.Cluster{Server: l.Server, CertificateAuthorityData: l.caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[ContextName] = &clientcmdapi.Context{Cluster: ContextName, AuthInfo: user, Namespace: namespace}
	cfg.CurrentContext = ContextName
	return clientcmd.WriteToFile(*cfg, path)
}

func (l *Lab) writeKubeconfig() error {
	l.Kubeconfig = filepath.Join(l.Dir, "kubeconfig")
	return l.WriteKubeconfig(l.Kubeconfig, AdminUser, l.adminToken, "default")
}

func (l *Lab) startEtcd(ctx context.Context, bin string) (string, error) {
	var lastErr error
	for attempt := range 3 {
		ports, err := freePorts(2)
		if err != nil {
			return "", err
		}
		client, peer := "http://"+loopback(ports[0]), "http://"+loopback(ports[1])
		dataDir := filepath.Join(l.Dir, fmt.Sprintf("etcd-%d", attempt))
		p, err := startProcess("etcd", filepath.Join(l.Dir, "etcd.log"), bin,
			"--name=meshlab",
			"--data-dir="+dataDir,
			"--listen-client-urls="+client,
			"--advertise-client-urls="+client,
			"--listen-peer-urls="+peer,
			"--initial-advertise-peer-urls="+peer,
			"--initial-cluster=meshlab="+peer,
			"--log-level=warn",
		)
		if err != nil {
			return "", err
		}
		start := time.Now()
		err = waitHTTP(ctx, p, 30*time.Second, http.DefaultClient, client+"/health", nil)
		if err == nil {
			l.etcd = p
			l.logf("etcd ready at %s (%s)", client, time.Since(start).Round(time.Millisecond))
			return client, nil
		}
		p.stop(5 * time.Second)
		lastErr = fmt.Errorf("etcd: %w\n%s", err, tail(filepath.Join(l.Dir, "etcd.log"), 20))
		if ctx.Err() != nil {
			break
		}
	}
	return "", lastErr
}

func (l *Lab) startAPIServer(ctx context.Context, bin, etcdURL string) error {
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return err
	}
	l.adminToken = hex.EncodeToString(token)
	tokens := filepath.Join(l.Dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", l.adminToken, AdminUser, AdminUser)), 0o600); err != nil {
		return err
	}
	saKey := filepath.Join(l.Dir, "sa.key")
	if err := writeSigningKey(saKey); err != nil {
		return err
	}
	policy := filepath.Join(l.Dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	l.AuditLog = filepath.Join(l.Dir, "audit.log")
	certDir := filepath.Join(l.Dir, "certs")

	var lastErr error
	for range 3 {
		ports, err := freePorts(1)
		if err != nil {
			return err
		}
		p, err := startProcess("kube-apiserver", filepath.Join(l.Dir, "kube-apiserver.log"), bin,
			"--etcd-servers="+etcdURL,
			fmt.Sprintf("--secure-port=%d", ports[0]),
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--cert-dir="+certDir,
			"--token-auth-file="+tokens,
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file="+saKey,
			"--service-account-signing-key-file="+saKey,
			"--authorization-mode=RBAC",
			"--service-cluster-ip-range="+ServiceCIDR,
			"--audit-log-path="+l.AuditLog,
			"--audit-policy-file="+policy,
			// The fake kubelet listens on the Node's InternalIP, 127.0.0.1;
			// with no kubelet CA configured the API server does not verify
			// its self-signed serving certificate.
			"--kubelet-preferred-address-types=InternalIP",
			// JSON in etcd lets Apply restore the creation and deletion
			// times a scenario recorded, which no API request can set.
			"--storage-media-type=application/json",
			"--enable-priority-and-fairness=false",
			"--profiling=false",
		)
		if err != nil {
			return err
		}
		l.Server = "https://" + loopback(ports[0])
		start := time.Now()
		err = l.waitAPIServer(ctx, p, certDir)
		if err == nil {
			l.apiserver = p
			l.logf("kube-apiserver %s ready at %s (%s)", KubeVersion, l.Server, time.Since(start).Round(time.Millisecond))
			return nil
		}
		p.stop(5 * time.Second)
		lastErr = fmt.Errorf("kube-apiserver: %w\n%s", err, tail(filepath.Join(l.Dir, "kube-apiserver.log"), 30))
		if ctx.Err() != nil {
			break
		}
	}
	return lastErr
}

// ServiceCIDR is the lab's service IP range: kubeadm's default, so ClusterIPs
// recorded from typical clusters can be kept as recorded.
const ServiceCIDR = "10.96.0.0/12"

// auditPolicy records every request's metadata (user, verb, resource), which
// is what proves a run read-only.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// waitAPIServer waits for the self-signed serving certificate the API server
// writes into certDir, then for /readyz.
func (l *Lab) waitAPIServer(ctx context.Context, p *process, certDir string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	certFile := filepath.Join(certDir, "apiserver.crt")
	for {
		if pemBytes, err := os.ReadFile(certFile); err == nil && len(pemBytes) > 0 {
			l.caPEM = pemBytes
			break
		}
		if done, err := p.exited(); done {
			return fmt.Errorf("%w: %v", errExited, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no serving certificate in %s: %w", certDir, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(l.caPEM) {
		return fmt.Errorf("%s holds no certificate", certFile)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	return waitHTTP(ctx, p, 2*time.Minute, client, l.Server+"/readyz", http.Header{"Authorization": {"Bearer " + l.adminToken}})
}

// waitHTTP polls url until it answers 200, p exits or the timeout passes.
func waitHTTP(ctx context.Context, p *process, timeout time.Duration, client *http.Client, url string, header http.Header) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		if done, err := p.exited(); done {
			return fmt.Errorf("%w: %v", errExited, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %s", url, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// writeSigningKey writes the service-account token signing key (ECDSA P-256:
// cheap to generate, and the API server derives the public key from it).
func writeSigningKey(path string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
