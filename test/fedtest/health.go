package fedtest

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/framework"
)

// Fast health settings for tests: a probe a second, two failures take an
// endpoint out, two passes bring it back, heartbeats fresh for 4 s.
const (
	HCInterval  = time.Second
	HCFall      = 2
	HCFreshness = 4 * time.Second
	// HCBound is the bound on detection: interval × fall + 2 s.
	HCBound = HCInterval*HCFall + 2*time.Second
)

// BuildHealthcheck builds ./cmd/kfed-healthcheck into the test's folder.
func BuildHealthcheck(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kfed-healthcheck")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kfed-healthcheck")
	build.Dir = framework.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kfed-healthcheck: %v\n%s", err, out)
	}
	return bin
}

// Steady checks for d that check passes every time it is asked.
func Steady(t *testing.T, d time.Duration, what string, check func() error) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if err := check(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}
