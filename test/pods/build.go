package pods

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// BuildImages builds the named images of kfed (all three when none are
// named) for this machine's platform with hack/images, as `make images`
// does, into OCI layouts under out, and returns each image's layout folder
// by name (kfed-controller, kfed-healthcheck, kfed-coredns).
func BuildImages(ctx context.Context, repoRoot, out, version string, names ...string) (map[string]string, error) {
	args := []string{"run", "./hack/images", "-version", version, "-revision", "test",
		"-platforms", "linux/" + runtime.GOARCH, "-out", out}
	if len(names) > 0 {
		args = append(args, "-images", strings.Join(names, ","))
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = repoRoot
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	layouts := map[string]string{}
	for line := range strings.Lines(stdout.String()) {
		// registry/name:version@digest<TAB>dir
		_, dir, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok {
			continue
		}
		layouts[filepath.Base(dir)] = dir
	}
	if len(layouts) == 0 {
		return nil, fmt.Errorf("hack/images built nothing:\n%s%s", stdout.String(), stderr.String())
	}
	return layouts, nil
}
