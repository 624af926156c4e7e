package fleet

import (
	"os"
	"testing"

	"github.com/kfed-io/kfed/devenv/loopbacklb"
)

// TestMain lets this binary serve as the bed's load-balancer processes
// (devenv.DevOptions.LoadBalancerBinary): started with
// loopbacklb.EnvServe set, it serves until stopped instead of testing.
func TestMain(m *testing.M) {
	loopbacklb.ServeIfAsked()
	os.Exit(m.Run())
}
