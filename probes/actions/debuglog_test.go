package actions

import (
	"context"
	"strings"
	"testing"
	"time"
)

const proxyDebugLog = "2025-12-02T03:00:00.101000Z\tinfo\tEnvoy proxy is ready\n" +
	"2025-12-02T03:00:01.200000Z\tdebug\tenvoy connection external/envoy/source/common/network/connection_impl.cc:1017\t[C412] connecting to 10.244.1.17:8080\tthread=21\n" +
	"2025-12-02T03:00:01.201000Z\tdebug\tenvoy connection external/envoy/source/common/network/connection_impl.cc:750\t[C412] delayed connect error: 111\tthread=21\n" +
	"2025-12-02T03:00:01.201500Z\tdebug\tenvoy pool external/envoy/source/common/conn_pool/conn_pool_base.cc:484\t[C412] client disconnected, failure reason: delayed connect error: 111\tthread=21\n" +
	"[2025-12-02T03:00:01.202Z] \"GET /healthz HTTP/1.1\" 503 UF,URX upstream_reset_before_response_started{remote_connection_failure|delayed_connect_error:_111} - \"delayed connect error: 111\" 0 190 11 - \"-\" \"meshtriage-test-request\"\n"

func TestDebugLoggingSetsOneLoggerPerRequestAndReverts(t *testing.T) {
	envoy := newFakeEnvoy(t)
	envoy.levels["http"] = "trace" // already more verbose: left alone
	c := newFakeCluster()
	c.log = proxyDebugLog
	r := &fakeRunner{envoy: envoy}
	var recs records

	var seenDuring []string
	capture, err := RunDebugLogging(context.Background(), c, r, DebugLogging{Pod: webPod}, 50*time.Millisecond, recs.rec(), func(context.Context) {
		seenDuring = []string{envoy.level("connection"), envoy.level("upstream"), envoy.level("http")}
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seenDuring, " ") != "debug debug trace" {
		t.Errorf("levels during the window: %q", seenDuring)
	}
	if envoy.level("connection") != "info" || envoy.level("upstream") != "warning" || envoy.level("http") != "trace" {
		t.Errorf("not reverted: %v", envoy.levels)
	}
	// Listing, two changes, two reverts: one parameter each.
	want := []string{"", "connection=debug", "upstream=debug", "connection=info", "upstream=warning"}
	if strings.Join(envoy.posts, " ") != strings.Join(want, " ") {
		t.Errorf("posts = %q, want %q", envoy.posts, want)
	}
	if len(capture.Lines) != 5 || capture.DebugLines != 3 || capture.Restored["upstream"] != "warning" {
		t.Errorf("capture %+v", capture)
	}
	if len(c.logOpts) != 1 || c.logOpts[0].Container != "istio-proxy" || c.logOpts[0].Since < time.Second {
		t.Errorf("log read %+v", c.logOpts)
	}
	got := recs.all()
	if len(got) != 2 {
		t.Fatalf("records %+v", got)
	}
	if got[0].Reverted || !strings.Contains(got[0].Done, "connection, upstream to debug (were connection=info, upstream=warning)") ||
		!strings.Contains(got[0].Done, "left http=trace") || got[0].Undo != "istioctl proxy-config log web-1.web --level connection:info,upstream:warning" {
		t.Errorf("start record %+v", got[0])
	}
	if !got[1].Reverted || got[1].Error != "" || !strings.Contains(got[1].Done, "captured 5 log lines (3 at debug)") ||
		!strings.Contains(got[1].Output, "delayed connect error: 111") {
		t.Errorf("revert record %+v", got[1])
	}
}

func TestDebugLoggingRevertsWhenTheContextEnds(t *testing.T) {
	envoy := newFakeEnvoy(t)
	c := newFakeCluster()
	r := &fakeRunner{envoy: envoy}
	var recs records
	ctx, cancel := context.WithCancel(context.Background())
	s, err := StartDebugLogging(ctx, c, r, DebugLogging{Pod: webPod}, recs.rec())
	if err != nil {
		t.Fatal(err)
	}
	if envoy.level("connection") != "debug" {
		t.Fatal("not set")
	}
	cancel() // Ctrl-C, the step cancelled, the session closed
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("no revert after the context ended")
	}
	for _, l := range DefaultDebugLoggers {
		if lv := envoy.level(l); lv == "debug" {
			t.Errorf("%s still %s", l, lv)
		}
	}
	// A late Stop returns the same outcome and reverts nothing twice.
	posts := len(envoy.posts)
	if _, err := s.Stop(context.Background()); err != nil {
		t.Error(err)
	}
	if len(envoy.posts) != posts {
		t.Errorf("second stop posted again: %q", envoy.posts[posts:])
	}
	if got := recs.all(); len(got) != 2 || !got[1].Reverted {
		t.Errorf("records %+v", got)
	}

	// Cancelled in the middle of RunDebugLogging's window.
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err = RunDebugLogging(ctx, c, r, DebugLogging{Pod: webPod}, time.Minute, nil, nil)
	if err != nil || time.Since(start) > 10*time.Second || envoy.level("connection") != "info" {
		t.Errorf("cancelled window: %v after %s, connection=%s", err, time.Since(start), envoy.level("connection"))
	}
}

func TestDebugLoggingRevertsOnError(t *testing.T) {
	envoy := newFakeEnvoy(t)
	envoy.failOn = "upstream"
	c := newFakeCluster()
	r := &fakeRunner{envoy: envoy}
	var recs records
	_, err := StartDebugLogging(context.Background(), c, r, DebugLogging{Pod: webPod}, recs.rec())
	if err == nil || !strings.Contains(err.Error(), "set Envoy logger upstream to debug") {
		t.Fatalf("err = %v", err)
	}
	if envoy.level("connection") != "info" || envoy.level("http") != "info" {
		t.Errorf("loggers set before the failure were not reverted: %v", envoy.levels)
	}
	if got := recs.all(); len(got) != 1 || got[0].Error == "" {
		t.Errorf("records %+v", got)
	}

	// A panic in the window still reverts.
	envoy.failOn = ""
	func() {
		defer func() { _ = recover() }()
		_, _ = RunDebugLogging(context.Background(), c, r, DebugLogging{Pod: webPod}, time.Minute, nil, func(context.Context) { panic("boom") })
	}()
	if envoy.level("connection") != "info" {
		t.Error("a panic during the window left debug on")
	}
}

func TestDebugLoggingWhenTheRevertFailsSaysHowToUndo(t *testing.T) {
	envoy := newFakeEnvoy(t)
	c := newFakeCluster()
	c.logErr = context.DeadlineExceeded
	r := &fakeRunner{envoy: envoy}
	var recs records
	s, err := StartDebugLogging(context.Background(), c, r, DebugLogging{Pod: webPod, Loggers: []string{"connection"}}, recs.rec())
	if err != nil {
		t.Fatal(err)
	}
	envoy.mu.Lock()
	envoy.down = true // the pod went away, or the port-forward broke
	envoy.mu.Unlock()
	capture, err := s.Stop(context.Background())
	if err == nil {
		t.Fatal("a failed revert must be an error")
	}
	got := recs.all()
	last := got[len(got)-1]
	if last.Reverted || last.Error == "" || last.Undo != "istioctl proxy-config log web-1.web --level connection:info" {
		t.Errorf("record %+v", last)
	}
	if capture.LogProblem == "" || !strings.Contains(last.Done, "cannot read the istio-proxy log") {
		t.Errorf("log problem %q / %q", capture.LogProblem, last.Done)
	}
}

func TestDebugLoggingRefusesUnknownLoggersAndLongWindows(t *testing.T) {
	envoy := newFakeEnvoy(t)
	r := &fakeRunner{envoy: envoy}
	_, err := StartDebugLogging(context.Background(), newFakeCluster(), r, DebugLogging{Pod: webPod, Loggers: []string{"nope"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "has no logger nope") {
		t.Errorf("unknown logger: %v", err)
	}
	if _, err := RunDebugLogging(context.Background(), newFakeCluster(), r, DebugLogging{Pod: webPod}, time.Hour, nil, nil); err == nil {
		t.Error("an hour of debug logging accepted")
	}
	if len(envoy.posts) != 1 {
		t.Errorf("posts %q", envoy.posts)
	}
}

func TestParseLoggersReadsEnvoysList(t *testing.T) {
	got := parseLoggers([]byte("active loggers:\n  admin: info\n  connection: debug\n  ext_authz: warning\n  garbage line\n"))
	if len(got) != 3 || got["connection"] != "debug" || got["ext_authz"] != "warning" {
		t.Errorf("%v", got)
	}
}
