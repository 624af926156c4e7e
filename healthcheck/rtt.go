package healthcheck

import (
	"slices"
	"time"
)

// Round-trip times: the probes a checker makes anyway also say how far each
// cluster is from the checker's own, which orders clusters that labels do
// not tell apart (package proximity). Nothing is probed for it: each passing
// round's latency (the TCP handshake of a tcp check, the time to the
// response headers of an http or https one) is kept per target, and RTTs
// summarises them per cluster on demand.

// rttSamples is how many passing rounds a target keeps, and minSamples how
// many it needs before it counts: one round alone is not a measure.
const (
	rttSamples = 5
	minSamples = 3
)

// rttWindow is a target's latest passing rounds' latencies, a ring.
type rttWindow struct {
	d    [rttSamples]time.Duration
	n    int // samples held, up to rttSamples
	next int // where the next goes
}

func (w *rttWindow) add(d time.Duration) {
	w.d[w.next] = d
	w.next = (w.next + 1) % rttSamples
	w.n = min(w.n+1, rttSamples)
}

// median is the window's median, false with fewer than minSamples.
func (w *rttWindow) median() (time.Duration, bool) {
	if w.n < minSamples {
		return 0, false
	}
	s := w.d // a copy
	held := s[:w.n]
	slices.Sort(held)
	return held[w.n/2], true
}
