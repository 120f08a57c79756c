package live

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshtriage/meshtriage/probes/cluster"
)

// Within a session every admin read of a pod goes through one port-forward,
// and sequential reads through one kept-alive connection in it: each read
// after the first costs a round trip, not a new tunnel.
func TestSessionSharesOnePortForwardPerPodPort(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1"))
	a.listen("shop", "web-1", 15000, envoyAdmin(t))
	session := NewCache(newLive(t, a, Options{}))
	defer session.Close()
	ctx := context.Background()

	for range 3 {
		// Uncached: the read cache would answer a repeated path itself.
		body, err := cluster.Uncached(session).EnvoyAdmin(ctx, webPod, "/clusters?format=json")
		if err != nil || string(body) != clustersJSON {
			t.Fatalf("EnvoyAdmin = %q, %v", body, err)
		}
	}
	if got := a.count("portforward shop/web-1"); got != 1 {
		t.Errorf("%d port-forwards for 3 sequential reads, want 1", got)
	}
	if got := a.connections("shop", "web-1", 15000); got != 1 {
		t.Errorf("%d connections through the tunnel for 3 sequential reads, want 1 kept alive", got)
	}

	// A wave's probes read the same pod at once: still one port-forward.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, err := cluster.Uncached(session).EnvoyAdmin(ctx, webPod, "/clusters?format=json")
			if err == nil && string(body) != clustersJSON {
				err = errors.New("wrong body " + string(body))
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := a.count("portforward shop/web-1"); got != 1 {
		t.Errorf("%d port-forwards after 8 concurrent reads, want still 1", got)
	}

	// A direct read, outside any session, opens and closes its own.
	direct := newLive(t, a, Options{})
	if _, err := direct.EnvoyAdmin(ctx, webPod, "/clusters?format=json"); err != nil {
		t.Fatal(err)
	}
	if got := a.count("portforward shop/web-1"); got != 2 {
		t.Errorf("a read outside the session used the session's tunnel (%d port-forwards)", got)
	}
}

// The caller's Envoy admin tunnel opens as soon as the session is told of
// it, before any read, and the first read uses it.
func TestOpenEnvoyAdminOpensTheTunnelBeforeTheFirstRead(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1"))
	a.listen("shop", "web-1", 15000, envoyAdmin(t))
	session := NewCache(newLive(t, a, Options{}))
	defer session.Close()

	session.OpenEnvoyAdmin(webPod)
	deadline := time.Now().Add(5 * time.Second)
	for a.count("portforward shop/web-1") == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if a.count("portforward shop/web-1") != 1 {
		t.Fatal("OpenEnvoyAdmin opened no port-forward")
	}
	if a.count("get shop/web-1") != 0 {
		t.Error("opening the tunnel waited for a pod read")
	}
	if _, err := session.EnvoyAdmin(context.Background(), webPod, "/clusters?format=json"); err != nil {
		t.Fatal(err)
	}
	if got := a.count("portforward shop/web-1"); got != 1 {
		t.Errorf("%d port-forwards, want the one opened ahead", got)
	}
}

// blockingAdmin answers /block once release is closed.
func blockingAdmin(release <-chan struct{}, started chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			started <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	})
}

// Reset and Close let the session's tunnels go, but never under a read
// still using one: it closes when that read is done.
func TestSessionResetAndCloseNeverCloseATunnelUnderARead(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{}, 1)
	srv := httptest.NewServer(blockingAdmin(release, started))
	defer srv.Close()
	ft := &fakeTunnel{addr: srv.Listener.Addr().String()}
	session := NewCache(seamCluster(t, ft, noExec(t), Options{}))
	ctx := context.Background()
	uncached := cluster.Uncached(session)

	if _, err := uncached.EnvoyAdmin(ctx, webPod, "/clusters"); err != nil {
		t.Fatal(err)
	}
	session.Reset()
	if ft.closed.Load() != 1 {
		t.Fatalf("Reset closed %d idle tunnels, want 1", ft.closed.Load())
	}

	done := make(chan error, 1)
	go func() {
		_, err := uncached.EnvoyAdmin(ctx, webPod, "/block")
		done <- err
	}()
	<-started
	if ft.opened.Load() != 2 {
		t.Fatalf("after Reset a read opened %d tunnels in all, want a new one (2)", ft.opened.Load())
	}
	session.Reset()
	if err := session.Close(); err != nil {
		t.Fatal(err)
	}
	if ft.closed.Load() != 1 {
		t.Fatal("Reset/Close closed a tunnel a read was using")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the read under Reset and Close failed: %v", err)
	}
	if ft.closed.Load() != 2 {
		t.Errorf("the tunnel was not closed when its read ended (closed %d)", ft.closed.Load())
	}

	// After Close each read has a tunnel of its own, closed after it.
	if _, err := uncached.EnvoyAdmin(ctx, webPod, "/clusters"); err != nil {
		t.Fatal(err)
	}
	if ft.opened.Load() != 3 || ft.closed.Load() != 3 {
		t.Errorf("after Close: opened %d, closed %d, want 3 and 3", ft.opened.Load(), ft.closed.Load())
	}
}

// A kept tunnel that ended between reads (the API server restarted) is not
// reused: the next read opens a new one instead of failing.
func TestSessionReopensATunnelThatEnded(t *testing.T) {
	srv := httptest.NewServer(envoyAdmin(t))
	defer srv.Close()
	ft := &fakeTunnel{addr: srv.Listener.Addr().String(), done: make(chan struct{})}
	session := NewCache(seamCluster(t, ft, noExec(t), Options{}))
	defer session.Close()
	uncached := cluster.Uncached(session)
	ctx := context.Background()

	if _, err := uncached.EnvoyAdmin(ctx, webPod, "/clusters?format=json"); err != nil {
		t.Fatal(err)
	}
	close(ft.done)
	ft.done = make(chan struct{})
	if _, err := uncached.EnvoyAdmin(ctx, webPod, "/clusters?format=json"); err != nil {
		t.Fatalf("read after the tunnel ended: %v", err)
	}
	if ft.opened.Load() != 2 {
		t.Errorf("opened %d tunnels, want a second after the first ended", ft.opened.Load())
	}
}

// A session that is closed leaves nothing of its port-forwards running,
// even after a Reset in its middle and reads that failed.
func TestNoGoroutineOutlivesAClosedSession(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1"))
	a.addPod(meshedPod("shop", "web-2"))
	a.listen("shop", "web-1", 15000, envoyAdmin(t))
	istiod := meshedPod("istio-system", "istiod-abc")
	istiod.Labels = map[string]string{"app": "istiod"}
	a.addPod(istiod)
	a.listen("istio-system", "istiod-abc", 15014, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "[]")
	}))
	session := NewCache(newLive(t, a, Options{}))
	ctx := context.Background()
	session.OpenEnvoyAdmin(webPod)
	for round := range 3 {
		_, _ = session.EnvoyAdmin(ctx, webPod, "/clusters?format=json")
		_, _ = session.EnvoyAdmin(ctx, cluster.PodRef{Namespace: "shop", Name: "web-2"}, "/x") // refused
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, _ = cluster.Uncached(session).EnvoyAdmin(short, webPod, "/slow") // deadline
		cancel()
		_, _ = session.Istiod(ctx, "istiod-abc", "/debug/syncz")
		if round == 1 {
			session.Reset()
		}
	}
	if err := session.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	left := streamingGoroutines()
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		left = streamingGoroutines()
	}
	if len(left) > 0 {
		t.Errorf("%d port-forward goroutines outlived the closed session:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// An API server that refuses the WebSocket upgrade (this one, like servers
// before 1.35 for a role without "get pods/portforward") is asked once: the
// next port-forwards go straight to SPDY.
func TestARefusedWebSocketUpgradeIsNotRetried(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1"))
	a.listen("shop", "web-1", 15000, envoyAdmin(t))
	c := newLive(t, a, Options{})
	for range 3 {
		if _, err := c.EnvoyAdmin(context.Background(), webPod, "/clusters?format=json"); err != nil {
			t.Fatal(err)
		}
	}
	if ws, spdy := a.count("portforward-ws shop/web-1"), a.count("portforward shop/web-1"); ws != 1 || spdy != 3 {
		t.Errorf("WebSocket attempts %d, SPDY port-forwards %d: want 1 and 3", ws, spdy)
	}
}

// The reachability check, the session's start and the versions probe each
// ask for the server's version within a second: one request answers them.
func TestServerVersionIsAskedOnceForAQuickSuccession(t *testing.T) {
	a := newFakeAPI(t)
	c := newLive(t, a, Options{})
	session := NewCache(c)
	defer session.Close()
	ctx := context.Background()
	for _, read := range []func(context.Context) (string, error){c.ServerVersion, c.ServerVersion, session.ServerVersion} {
		if v, err := read(ctx); err != nil || v != "v1.31.2" {
			t.Fatalf("ServerVersion = %q, %v", v, err)
		}
	}
	if got := a.count("version"); got != 1 {
		t.Errorf("%d /version requests, want 1", got)
	}
	now := time.Now()
	if _, ok := c.version.recent(now.Add(versionReuse + time.Second)); ok {
		t.Error("a version older than versionReuse is still reused")
	}
}

func istiodLab(t *testing.T, a *fakeAPI) {
	t.Helper()
	istiod := meshedPod("istio-system", "istiod-abc")
	istiod.Labels = map[string]string{"app": "istiod"}
	a.addPod(istiod)
	a.listen("istio-system", "istiod-abc", 15014, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "[]")
	}))
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Warm lists istiod's pods and opens the port-forwards to the caller's
// Envoy admin and to istiod before any session asks; the first session
// reads through them without a request of its own, a later one does not
// get them.
func TestWarmOpensWhatTheFirstSessionReadsThrough(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1"))
	a.listen("shop", "web-1", 15000, envoyAdmin(t))
	istiodLab(t, a)
	c := newLive(t, a, Options{})
	caller := webPod
	c.Warm(Warmup{Caller: &caller})
	waitFor(t, "both port-forwards open", func() bool {
		return a.count("portforward shop/web-1") == 1 && a.count("portforward istio-system/istiod-abc") == 1
	})
	if got := a.count("list istio-system app=istiod"); got != 1 {
		t.Fatalf("Warm listed istiod %d times, want 1", got)
	}

	session := NewCache(c)
	defer session.Close()
	ctx := context.Background()
	pods, err := session.ListPods(ctx, "istio-system", map[string]string{"app": "istiod"})
	if err != nil || len(pods) != 1 || pods[0].Name != "istiod-abc" {
		t.Fatalf("ListPods = %v, %v", pods, err)
	}
	if _, err := session.EnvoyAdmin(ctx, webPod, "/clusters?format=json"); err != nil {
		t.Fatal(err)
	}
	if _, err := session.Istiod(ctx, "istiod-abc", "/debug/syncz"); err != nil {
		t.Fatal(err)
	}
	if l, pf, ipf := a.count("list istio-system app=istiod"), a.count("portforward shop/web-1"), a.count("portforward istio-system/istiod-abc"); l != 1 || pf != 1 || ipf != 1 {
		t.Errorf("the first session made requests of its own: %d istiod lists, %d and %d port-forwards, want 1 each", l, pf, ipf)
	}

	later := NewCache(c)
	defer later.Close()
	if _, err := later.ListPods(ctx, "istio-system", map[string]string{"app": "istiod"}); err != nil {
		t.Fatal(err)
	}
	if _, err := later.EnvoyAdmin(ctx, webPod, "/clusters?format=json"); err != nil {
		t.Fatal(err)
	}
	if l, pf := a.count("list istio-system app=istiod"), a.count("portforward shop/web-1"); l != 2 || pf != 2 {
		t.Errorf("a later session reused the first one's warm-up (%d lists, %d port-forwards)", l, pf)
	}
}

// What Warm opened and no session adopted (the reachability check failed)
// is closed by Close, and leaves nothing running.
func TestWarmUnadoptedClosesOnClose(t *testing.T) {
	a := newFakeAPI(t)
	a.addPod(meshedPod("shop", "web-1"))
	a.listen("shop", "web-1", 15000, envoyAdmin(t))
	istiodLab(t, a)
	c := newLive(t, a, Options{})
	caller := webPod
	c.Warm(Warmup{Caller: &caller})
	waitFor(t, "both port-forwards open", func() bool {
		return a.count("portforward shop/web-1") == 1 && a.count("portforward istio-system/istiod-abc") == 1
	})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "no port-forward goroutine left", func() bool { return len(streamingGoroutines()) == 0 })
	// A session made after Close opens its own.
	session := NewCache(c)
	defer session.Close()
	if _, err := session.EnvoyAdmin(context.Background(), webPod, "/clusters?format=json"); err != nil {
		t.Fatal(err)
	}
	if got := a.count("portforward shop/web-1"); got != 2 {
		t.Errorf("%d port-forwards, want a new one after Close", got)
	}
}
