package fedtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kfed-io/kfed/test/framework"
)

// ChartDir is the Helm chart, relative to the repository root.
const ChartDir = "deploy/chart/kfed"

// Helm returns the helm binary hack/helm.sh built, which hack/test.sh and
// CI pass in KFED_HELM.
func Helm(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("KFED_HELM")
	if bin == "" {
		t.Skip("KFED_HELM is not set, so the chart is not tested: run KFED_HELM=$(hack/helm.sh | tail -n 1) go test ... (hack/test.sh and CI set it)")
	}
	return bin
}

// RunHelm runs helm in the repository root and returns its stdout.
func RunHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(Helm(t), args...)
	cmd.Dir = framework.RepoRoot(t)
	// Helm's own state goes to the test's folder, not the user's home.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), nil
}

// LoopbackCorefile applies the replacements, each of which must match.
func LoopbackCorefile(t *testing.T, corefile string, repl map[string]string) string {
	t.Helper()
	for old, nw := range repl {
		if !strings.Contains(corefile, old) {
			t.Fatalf("the chart's Corefile has no %q:\n%s", old, corefile)
		}
		corefile = strings.ReplaceAll(corefile, old, nw)
	}
	if regexp.MustCompile(`:(53|5353|8080|8181|9153)\b`).MatchString(corefile) {
		t.Fatalf("a port left unmoved to loopback:\n%s", corefile)
	}
	return corefile
}

// Port is the port of a HOST:PORT address.
func Port(addr string) string { _, p, _ := strings.Cut(addr, ":"); return p }

// WriteFile writes data to dir/name and returns the path.
func WriteFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
