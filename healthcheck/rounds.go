package healthcheck

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// round is one target's round as it was when it came due.
type round struct {
	t     *target
	gen   uint64
	addrs []netip.AddrPort
	spec  Spec
	due   time.Time
}

// start runs each of due on a goroutine of its own once one of slots is
// free, so that at most cap(slots) rounds are in flight. If ctx ends first,
// it clears the in-flight mark of the rounds it did not start and returns
// false.
func (e *Engine) start(ctx context.Context, wg *sync.WaitGroup, slots chan struct{}, due []round) bool {
	for i, r := range due {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			e.abandon(due[i:])
			return false
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.run(ctx, r)
			<-slots
		}()
	}
	return true
}

// abandon clears the in-flight mark of rounds that never started.
func (e *Engine) abandon(rs []round) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range rs {
		r.t.inFlight = false
	}
}

// run probes a round's addresses and records the outcome.
func (e *Engine) run(ctx context.Context, r round) {
	res := e.probeAll(ctx, r)
	if ctx.Err() != nil {
		// Shutting down: a canceled probe says nothing of the endpoint.
		e.abandon([]round{r})
		return
	}
	e.record(r, res)
	if e.opts.roundDone != nil {
		e.opts.roundDone(r.t.Key, r.due)
	}
}

// probeAll probes the addresses together and returns the first pass, or
// the first address's failure if none passes.
func (e *Engine) probeAll(ctx context.Context, r round) Result {
	if len(r.addrs) == 1 {
		res := e.prober.probe(ctx, r.addrs[0], r.spec)
		e.metrics.observe(res)
		return res
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan indexed, len(r.addrs))
	for i, a := range r.addrs {
		go func() { results <- indexed{i, e.prober.probe(ctx, a, r.spec)} }()
	}
	var first Result
	var pass *Result
	for range r.addrs {
		x := <-results
		if pass == nil {
			// Probes canceled after another passed are not failures.
			e.metrics.observe(x.r)
		}
		switch {
		case x.r.OK && pass == nil:
			pass = &x.r
			cancel() // one passing address is enough
		case x.i == 0:
			first = x.r
		}
	}
	if pass != nil {
		return *pass
	}
	return first
}

// indexed is an address's result with the address's position.
type indexed struct {
	i int
	r Result
}
