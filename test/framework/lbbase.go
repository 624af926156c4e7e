package framework

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// ClaimLBBase returns a second octet b such that no other test on this
// machine holds any of 127.b.0.0/16 … 127.(b+n-1).0.0/16, the load-balancer
// blocks of n members (loopbacklb.Block), until the test ends. A block is
// held by an flock on a file of its own under the temporary directory, so
// test packages running side by side (go test -p) never share one, and a
// test that dies lets go of its blocks with its process. Picked at random
// among 16 to 215, two packages' beds had collided now and then: a member's
// load balancer could not bind its address ("address already in use").
func ClaimLBBase(t testing.TB, n int) int {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "kfed-lb-blocks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("claiming load-balancer blocks: %v", err)
	}
	const lo, hi = 16, 216
	for range 100 {
		base := lo + rand.IntN(hi-lo-n+1)
		held, err := lockAll(dir, base, n)
		if err != nil {
			t.Fatalf("claiming load-balancer blocks: %v", err)
		}
		if held != nil {
			t.Cleanup(func() {
				for _, f := range held {
					f.Close() // closing lets go of the lock
				}
			})
			return base
		}
	}
	t.Fatalf("claiming load-balancer blocks: no %d free blocks in 127.%d–%d after 100 tries", n, lo, hi-1)
	return 0
}

// lockAll locks the files of blocks base … base+n-1, or none: nil when one
// is held by another test.
func lockAll(dir string, base, n int) ([]*os.File, error) {
	held := make([]*os.File, 0, n) // not nil: a bed of no members holds none
	release := func() {
		for _, f := range held {
			f.Close()
		}
	}
	for b := base; b < base+n; b++ {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(b)), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			release()
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			release()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, nil
			}
			return nil, fmt.Errorf("locking block %d: %w", b, err)
		}
		held = append(held, f)
	}
	return held, nil
}
