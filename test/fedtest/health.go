package fedtest

import (
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

// BuildHealthcheck returns kfed-healthcheck (framework.BuildCommand).
func BuildHealthcheck(t testing.TB) string {
	t.Helper()
	return framework.BuildCommand(t, "kfed-healthcheck")
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
