package healthcheck

import (
	"context"
	"net/netip"
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

// probeAll probes the round's addresses together with p and returns the
// first pass, or the first address's failure if none passes. Each probe
// that counts is passed to observe.
func (r round) probeAll(ctx context.Context, p *prober, observe func(Result)) Result {
	if len(r.addrs) == 1 {
		res := p.probe(ctx, r.addrs[0], r.spec)
		observe(res)
		return res
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan indexed, len(r.addrs))
	for i, a := range r.addrs {
		go func() { results <- indexed{i, p.probe(ctx, a, r.spec)} }()
	}
	var first Result
	var pass *Result
	for range r.addrs {
		x := <-results
		if pass == nil {
			// Probes canceled after another passed are not failures.
			observe(x.r)
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
