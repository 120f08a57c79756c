package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// KrewVersion is the sigs.k8s.io/krew version lab/tools/krew builds; the
// cached binary is named after it so a version bump rebuilds.
const KrewVersion = "v0.4.3"

// KrewBinary returns the path of a krew of KrewVersion, building it from
// lab/tools/krew the first time and caching it with the lab's other
// binaries.
func KrewBinary(ctx context.Context) (string, error) {
	cache, err := CacheDir(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(cache, "krew-"+KrewVersion)
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
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", tmp, ".")
	cmd.Dir = filepath.Join(root, "lab", "tools", "krew")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build krew %s: %w\n%s", KrewVersion, err, out.String())
	}
	return bin, os.Rename(tmp, bin)
}
