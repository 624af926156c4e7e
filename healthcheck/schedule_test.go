package healthcheck

import (
	"net/netip"
	"testing"
	"time"
)

func TestEngineSchedulesEachTargetWithJitter(t *testing.T) {
	const targets, interval = 200, 10 * time.Second
	h := newHarness(t, Options{})
	addr := addrOf(t, listen(t).Addr())
	var ts []Target
	for i := range targets {
		ts = append(ts, Target{Key: "k" + string(rune('A'+i%26)) + string(rune('0'+i/26)), Cluster: "c", Addrs: []netip.AddrPort{addr}, Spec: Defaults()})
	}
	if err := h.e.Set(ts); err != nil {
		t.Fatal(err)
	}
	start := h.clock.Now()
	dues := map[string][]time.Time{}
	perSecond := map[int]int{}
	for range 60 { // a minute in steps of a second
		for _, r := range h.advance(time.Second) {
			dues[r.key] = append(dues[r.key], r.due)
			if len(dues[r.key]) == 1 {
				perSecond[int(r.due.Sub(start)/time.Second)]++
			}
		}
	}
	if len(dues) != targets {
		t.Fatalf("%d targets probed, want %d", len(dues), targets)
	}
	for key, d := range dues {
		if first := d[0].Sub(start); first < 0 || first >= interval {
			t.Errorf("%s: first round at %v, want within the first interval", key, first)
		}
		for i := 1; i < len(d); i++ {
			if gap := d[i].Sub(d[i-1]); gap < interval*9/10 || gap > interval*11/10 {
				t.Errorf("%s: rounds %v apart, want %v ±10%%", key, gap, interval)
			}
		}
		if len(d) < 5 || len(d) > 7 {
			t.Errorf("%s: %d rounds in a minute, want about 6", key, len(d))
		}
	}
	// 200 first rounds over 10 one-second slots: about 20 each; a burst
	// would put most in one.
	for sec, n := range perSecond {
		if n > 40 {
			t.Errorf("%d first rounds in second %d, want them spread (about 20 a second)", n, sec)
		}
	}
}
