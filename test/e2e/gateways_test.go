package e2e

import (
	"testing"

	"github.com/kfed-io/kfed/test/framework"
)

// TestGatewayAPICRDs: the test bed installs the Gateway API standard CRDs
// in the control plane and every member.
func TestGatewayAPICRDs(t *testing.T) {
	f := framework.Start(t, framework.Members(1))
	f.InstallGatewayAPI("federation", "cluster-1")
}
