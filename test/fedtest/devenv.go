package fedtest

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/framework"
)

// ReadEnvFile reads a dev bed's DIR/env (NAME=value lines, the contract in
// docs/design.md) into a map.
func ReadEnvFile(t testing.TB, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			env[k] = v
		}
	}
	return env
}

// StartDevBed builds CoreDNS with kfed's plugins, kfed-healthcheck and the
// commands given (such as "./cmd/kfed") into a folder, and starts `kfed dev
// up`'s bed on them (devenv.StartDev): three members, federation dev, zone
// kfed.test, stopped when the test ends. It returns the bed and the folder.
func StartDevBed(t *testing.T, commands ...string) (*devenv.Dev, string) {
	t.Helper()
	bin := t.TempDir()
	build := exec.Command("go", append([]string{"build", "-o", bin + "/", "./cmd/coredns", "./cmd/kfed-healthcheck"}, commands...)...)
	build.Dir = framework.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the bed's binaries: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d, err := devenv.StartDev(ctx, devenv.DevOptions{
		Dir: t.TempDir(), BinDir: framework.BinDir(t), Members: 3, Federation: "dev", Domain: "kfed.test",
		LBBase: 16 + rand.IntN(200), CoreDNS: filepath.Join(bin, "coredns"), Checker: filepath.Join(bin, "kfed-healthcheck"),
		Log: logr.Discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d, bin
}
