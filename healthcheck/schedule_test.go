package healthcheck

import (
	"container/heap"
	"fmt"
	"net/netip"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
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

// TestRoundsDueTogetherStartTogether: rounds due within a few milliseconds
// of each other start at one wake of the schedule, a hundredth of their
// interval early at most; the next wake is when the first round after
// that is due.
func TestRoundsDueTogetherStartTogether(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name     string
		interval time.Duration
		dueIn    []time.Duration // each target's next round, from now
		wantDue  int
		wantWait time.Duration
	}{
		{"due now and within 10 ms start together", 10 * time.Second, []time.Duration{0, 4 * ms, 10 * ms, 30 * ms}, 3, 30 * ms},
		{"none due: wait for the earliest", 10 * time.Second, []time.Duration{20 * ms, 25 * ms}, 0, 20 * ms},
		{"a 500-ms interval starts 5 ms early at most", 500 * ms, []time.Duration{0, 4 * ms, 9 * ms}, 2, 9 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			e, err := NewEngine(Options{clock: clock, shortIntervals: true})
			if err != nil {
				t.Fatal(err)
			}
			for i, d := range tt.dueIn {
				heap.Push(&e.sched.queue, &target{Target: Target{Key: fmt.Sprint(i), Spec: Spec{Interval: tt.interval}}, next: clock.Now().Add(d)})
			}
			due, wait := e.takeDue(nil)
			if len(due) != tt.wantDue {
				t.Errorf("%d rounds started, want %d", len(due), tt.wantDue)
			}
			clock.Step(tt.wantWait - 1)
			select {
			case <-wait:
				t.Fatalf("woke before %v", tt.wantWait)
			default:
			}
			clock.Step(1)
			select {
			case <-wait:
			default:
				t.Errorf("not woken at %v", tt.wantWait)
			}
		})
	}
}
