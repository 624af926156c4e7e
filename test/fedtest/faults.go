package fedtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/test/framework"
)

// DropFrom cuts src off from the address blocks with an nftables rule on
// loopback (a table of its own), checks that a connection from src to
// probe:8080 now goes nowhere, and returns the function that removes the
// rule; the test's cleanup removes it too. It needs root and nft
// (hack/install-nftables.sh).
func DropFrom(t *testing.T, src netip.Addr, blocks []string, probe string) func() {
	t.Helper()
	table := fmt.Sprintf("kfed_e2e_%d", rand.IntN(1<<30))
	script := fmt.Sprintf("add table inet %[1]s\nadd chain inet %[1]s out { type filter hook output priority 0; }\n"+
		"add rule inet %[1]s out ip saddr %[2]s ip daddr { %[3]s } drop\n", table, src, strings.Join(blocks, ", "))
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft (hack/install-nftables.sh installs it; the test needs root): %v\n%s", err, out)
	}
	removed := false
	remove := func() {
		if !removed {
			removed = true
			if out, err := exec.Command("nft", "delete", "table", "inet", table).CombinedOutput(); err != nil {
				t.Errorf("removing nftables table %s: %v\n%s", table, err, out)
			}
		}
	}
	t.Cleanup(remove)
	// The cut is real: a connection from src to a load balancer goes nowhere.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src.AsSlice()}, Timeout: 300 * time.Millisecond}
	if c, err := d.Dial("tcp", net.JoinHostPort(probe, "8080")); err == nil {
		c.Close()
		t.Fatal("the nftables rule lets a probe through")
	}
	return remove
}

// SetFailure switches the loopback load balancer of Service namespace/name
// in the cluster c reaches to mode (loopbacklb.FailureAnnotation; "" back
// to serving), through the cluster's API as a user would.
func SetFailure(t *testing.T, c client.Client, namespace, name, mode string) {
	t.Helper()
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		var s corev1.Service
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
			return err
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		if mode == "" {
			delete(s.Annotations, loopbacklb.FailureAnnotation)
		} else {
			s.Annotations[loopbacklb.FailureAnnotation] = mode
		}
		return c.Update(ctx, &s)
	})
}
