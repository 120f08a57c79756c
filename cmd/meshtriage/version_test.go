package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"debug/buildinfo"
)

// buildInfo parses build information in the text form `go version -m`
// prints, the form the go command itself writes.
func buildInfo(t *testing.T, text string) *debug.BuildInfo {
	t.Helper()
	info, err := debug.ParseBuildInfo(text)
	if err != nil {
		t.Fatalf("ParseBuildInfo: %v", err)
	}
	return info
}

func TestVersionFromBuildInfo(t *testing.T) {
	const rev = "526bca4a1b2c0d9e8f7a6b5c4d3e2f1a0b9c8d7e"
	cases := []struct {
		name string
		info string // `go version -m` text; empty: no build information at all
		want string
	}{
		{
			name: "no build information",
			want: "devel",
		},
		{
			name: "go install ...@v1.4.0 from the module proxy",
			info: "path\tgithub.com/meshtriage/meshtriage/cmd/meshtriage\n" +
				"mod\tgithub.com/meshtriage/meshtriage\tv1.4.0\th1:abc=\n" +
				"build\t-trimpath=true\n",
			want: "v1.4.0",
		},
		{
			name: "go install ...@main: a pseudo-version naming the commit",
			info: "path\tgithub.com/meshtriage/meshtriage/cmd/meshtriage\n" +
				"mod\tgithub.com/meshtriage/meshtriage\tv0.0.0-20261203041500-526bca4a1b2c\th1:abc=\n",
			want: "v0.0.0-20261203041500-526bca4a1b2c",
		},
		{
			name: "go build in a clean checkout at a tag",
			info: "path\tgithub.com/meshtriage/meshtriage/cmd/meshtriage\n" +
				"mod\tgithub.com/meshtriage/meshtriage\tv1.4.0\t\n" +
				"build\tvcs=git\nbuild\tvcs.revision=" + rev + "\nbuild\tvcs.modified=false\n",
			want: "v1.4.0",
		},
		{
			name: "go build in a checkout with uncommitted changes, after a tag",
			info: "path\tgithub.com/meshtriage/meshtriage/cmd/meshtriage\n" +
				"mod\tgithub.com/meshtriage/meshtriage\tv1.4.1-0.20261203041500-526bca4a1b2c+dirty\t\n" +
				"build\tvcs=git\nbuild\tvcs.revision=" + rev + "\nbuild\tvcs.modified=true\n",
			want: "v1.4.1-0.20261203041500-526bca4a1b2c+dirty",
		},
		{
			name: "no version derived, but the commit is known and modified",
			info: "path\tgithub.com/meshtriage/meshtriage/cmd/meshtriage\n" +
				"mod\tgithub.com/meshtriage/meshtriage\t(devel)\t\n" +
				"build\tvcs=git\nbuild\tvcs.revision=" + rev + "\nbuild\tvcs.modified=true\n",
			want: "devel-526bca4a1b2c+dirty",
		},
		{
			name: "a module version without the dirty suffix its VCS state calls for",
			info: "path\tgithub.com/meshtriage/meshtriage/cmd/meshtriage\n" +
				"mod\tgithub.com/meshtriage/meshtriage\tv1.4.0\t\n" +
				"build\tvcs=git\nbuild\tvcs.revision=" + rev + "\nbuild\tvcs.modified=true\n",
			want: "v1.4.0+dirty",
		},
		{
			name: "go run: no version, no VCS",
			info: "path\tcommand-line-arguments\n" +
				"mod\tgithub.com/meshtriage/meshtriage\t(devel)\t\n",
			want: "devel",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var info *debug.BuildInfo
			if c.info != "" {
				info = buildInfo(t, c.info)
			}
			if got := versionFromBuildInfo(info); got != c.want {
				t.Errorf("versionFromBuildInfo = %q, want %q", got, c.want)
			}
		})
	}
}

func TestLDFlagsVersionWins(t *testing.T) {
	if got := resolveVersion("v2.0.0"); got != "v2.0.0" {
		t.Errorf("resolveVersion(v2.0.0) = %q: a version set by -ldflags must stand", got)
	}
	info, _ := debug.ReadBuildInfo()
	if got, want := resolveVersion(""), versionFromBuildInfo(info); got != want {
		t.Errorf("resolveVersion(\"\") = %q, want the build information's %q", got, want)
	}
}

// TestBuiltBinaryReportsItsVersion builds the real binary as a user's `go
// build` or `go install` would (no -ldflags) and checks that --version, `version --client`
// and the incident log's session_started all carry the version the go
// command stamped into it: the commit it was built from, dirty or not.
func TestBuiltBinaryReportsItsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "meshtriage")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	// -buildvcs=auto as the go command defaults to, whatever GOFLAGS say, so
	// a checkout's build carries its commit.
	build := exec.CommandContext(ctx, "go", "build", "-buildvcs=auto", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("read the binary's build information: %v", err)
	}
	want := versionFromBuildInfo(info)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		// Built in a checkout: the version names the commit, or is a tag
		// on it, and says whether the tree was dirty.
		plain := strings.TrimSuffix(want, "+dirty")
		tags, _ := exec.CommandContext(ctx, "git", "tag", "--points-at", rev).Output()
		if !strings.Contains(want, rev[:12]) && !slices.Contains(strings.Fields(string(tags)), plain) {
			t.Errorf("version %q names neither commit %s nor a tag on it", want, rev[:12])
		}
		if dirty := settings["vcs.modified"] == "true"; dirty != strings.HasSuffix(want, "+dirty") {
			t.Errorf("version %q, but vcs.modified=%s", want, settings["vcs.modified"])
		}
	}

	for _, args := range [][]string{{"--version"}, {"version", "--client"}} {
		out, err := exec.CommandContext(ctx, bin, args...).Output()
		if err != nil {
			t.Fatalf("meshtriage %v: %v", args, err)
		}
		if got := string(out); got != "meshtriage "+want+"\n" {
			t.Errorf("meshtriage %v printed %q, want %q", args, got, "meshtriage "+want+"\n")
		}
	}

	logPath := filepath.Join(t.TempDir(), "incident.jsonl")
	check := exec.CommandContext(ctx, bin, "check", "--scenario", "healthy", "--log", logPath, "-o", "json")
	check.Env = append(os.Environ(), "KUBECONFIG=", "HOME="+t.TempDir())
	if out, err := check.CombinedOutput(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFindings {
			t.Fatalf("meshtriage check --scenario healthy: %v\n%s", err, out)
		}
	}
	if got := loggedToolVersion(t, logPath); got != want {
		t.Errorf("incident log session_started tool_version = %q, want %q", got, want)
	}
}

// loggedToolVersion reads the tool version from an incident log's
// session_started event.
func loggedToolVersion(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Kind    string `json:"kind"`
			Started *struct {
				Tool string `json:"tool_version"`
			} `json:"started"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if ev.Kind == "session_started" && ev.Started != nil {
			return ev.Started.Tool
		}
	}
	t.Fatalf("%s has no session_started event (scan: %v)", path, sc.Err())
	return ""
}
