package check

import (
	"testing"

	"github.com/kfed-io/kfed/test/fedtest"
)

// TestOnTheDevBed runs this package's tests one after another on one `kfed
// dev up` bed (its API servers and CoreDNS servers are most of the
// package's CPU), each a subtest under its former name: the renewal first,
// which keeps every answer; then check, which stops a CoreDNS and two
// checkers.
func TestOnTheDevBed(t *testing.T) {
	d, bin := fedtest.StartDevBedWithoutGateways(t, "./cmd/kfed")
	t.Run("RenewKeepsEveryRecordAndCopy", func(t *testing.T) { renewKeepsEveryRecordAndCopy(t, d, bin) })
	t.Run("CheckJudgesTheDevBed", func(t *testing.T) { checkJudgesTheDevBed(t, d, bin) })
}
