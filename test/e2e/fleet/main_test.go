package fleet

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/kfed-io/kfed/devenv/loopbacklb"
)

// TestMain lets this binary serve as the bed's load-balancer processes
// (devenv.DevOptions.LoadBalancerBinary): started with
// loopbacklb.EnvServe set, it serves until stopped instead of testing.
func TestMain(m *testing.M) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	served, err := loopbacklb.ServeFromEnv(ctx)
	stop()
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	case served:
		os.Exit(0)
	}
	os.Exit(m.Run())
}
