package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// KubeVersion is the k8s.io/kubernetes version lab/tools/kube-apiserver
// builds; the cached binary is named after it so a version bump rebuilds.
const KubeVersion = "v1.34.4"

// EtcdBinary is where Debian's etcd-server package installs etcd.
const EtcdBinary = "/usr/bin/etcd"

// Environment variables that point the lab at prebuilt binaries.
const (
	EnvAPIServer = "MESHLAB_KUBE_APISERVER"
	EnvEtcd      = "MESHLAB_ETCD"
	EnvCacheDir  = "MESHLAB_CACHE"
)

// ModuleRoot is the directory of the main module's go.mod, found through the
// go command so the lab works from any directory inside the repository.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the meshtriage module (go env GOMOD is empty)")
	}
	return filepath.Dir(gomod), nil
}

// CacheDir is where built binaries are kept between runs: $MESHLAB_CACHE, or
// lab/.cache in the repository (gitignored).
func CacheDir(ctx context.Context) (string, error) {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return d, nil
	}
	root, err := ModuleRoot(ctx)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "lab", ".cache"), nil
}

// APIServerBinary returns the path of a kube-apiserver of KubeVersion,
// building it from lab/tools/kube-apiserver the first time (minutes on a small
// machine; later runs find it in the cache). $MESHLAB_KUBE_APISERVER names a
// prebuilt binary instead.
func APIServerBinary(ctx context.Context) (string, error) {
	if p := os.Getenv(EnvAPIServer); p != "" {
		return p, nil
	}
	return cachedToolBuild(ctx, "kube-apiserver", "kube-apiserver-"+KubeVersion, versionLDFlags())
}

// cachedToolBuild returns CacheDir/name, building it first from
// lab/tools/<tool> (with ldflags, if any) when it is not there. A lock file
// makes two test processes starting at once build it once; the build goes
// to name.tmp and is renamed into place, so a build cut short is never
// taken for the binary. Every binary the lab builds comes through here.
func cachedToolBuild(ctx context.Context, tool, name, ldflags string) (string, error) {
	cache, err := CacheDir(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(cache, name)
	if isExecutable(bin) {
		return bin, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, bin+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if isExecutable(bin) {
		return bin, nil
	}
	root, err := ModuleRoot(ctx)
	if err != nil {
		return "", err
	}
	tmp := bin + ".tmp"
	args := []string{"build", "-trimpath"}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", tmp, ".")...)
	cmd.Dir = filepath.Join(root, "lab", "tools", tool)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build %s (lab/tools/%s): %w\n%s", name, tool, err, out.String())
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// versionLDFlags stamp the version into the binary as Kubernetes' own build
// does; without them /version reports v0.0.0-master and the versions probe
// would judge a cluster that does not exist.
func versionLDFlags() string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(KubeVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	pkg := "k8s.io/component-base/version"
	return strings.Join([]string{
		"-X", pkg + ".gitVersion=" + KubeVersion,
		"-X", pkg + ".gitMajor=" + major,
		"-X", pkg + ".gitMinor=" + minor,
		"-X", pkg + ".gitTreeState=clean",
	}, " ")
}

// EtcdPath returns $MESHLAB_ETCD, /usr/bin/etcd, or etcd on $PATH.
func EtcdPath() (string, error) {
	if p := os.Getenv(EnvEtcd); p != "" {
		return p, nil
	}
	if isExecutable(EtcdBinary) {
		return EtcdBinary, nil
	}
	p, err := exec.LookPath("etcd")
	if err != nil {
		return "", fmt.Errorf("etcd not found: install Debian's etcd-server (apt-get install -y etcd-server) or set %s", EnvEtcd)
	}
	return p, nil
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// lockFile takes an exclusive flock on path, giving up when ctx ends.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	locked := make(chan error, 1)
	go func() { locked <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-locked:
		if err != nil {
			f.Close()
			return nil, err
		}
		return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
	case <-ctx.Done():
		// Closing the file does not wake a blocked flock; the goroutine
		// ends when the holder releases it, with the descriptor then closed.
		go func() {
			if <-locked == nil {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			}
			f.Close()
		}()
		return nil, ctx.Err()
	}
}
