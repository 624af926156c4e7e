package fedtest

import (
	"context"
	"os"
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

// StartDevBed takes CoreDNS with kfed's plugins, kfed-healthcheck and the
// commands given (such as "./cmd/kfed") from framework.Build, and starts `kfed dev
// up`'s bed on them (devenv.StartDev): three members, federation dev, zone
// kfed.test, stopped when the test ends. It returns the bed and the binaries' folder, which is
// shared: read it, never write to it.
func StartDevBed(t *testing.T, commands ...string) (*devenv.Dev, string) {
	t.Helper()
	return startDevBed(t, false, commands)
}

// StartDevBedWithoutGateways is StartDevBed with members that go without
// the Gateway API (devenv.DevOptions.NoGateways), for tests that federate
// no Gateway.
func StartDevBedWithoutGateways(t *testing.T, commands ...string) (*devenv.Dev, string) {
	t.Helper()
	return startDevBed(t, true, commands)
}

func startDevBed(t *testing.T, noGateways bool, commands []string) (*devenv.Dev, string) {
	t.Helper()
	bin, err := framework.Build(t, append([]string{"./cmd/coredns", "./cmd/kfed-healthcheck"}, commands...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d, err := devenv.StartDev(ctx, devenv.DevOptions{
		Dir: t.TempDir(), BinDir: framework.BinDir(t), Members: 3, Federation: "dev", Domain: "kfed.test",
		LBBase: framework.ClaimLBBase(t, 3), CoreDNS: filepath.Join(bin, "coredns"), Checker: filepath.Join(bin, "kfed-healthcheck"),
		Log: logr.Discard(), NoGateways: noGateways,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d, bin
}
