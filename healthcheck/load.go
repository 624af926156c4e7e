package healthcheck

import (
	"time"
)

// Load: the figure an endpoint's answers give (orca.go) is kept per
// target as an exponentially weighted average of its rounds, as Envoy
// smooths a locality's utilisation, so that one busy answer does not move a
// share; the agent reads it every few seconds and publishes it in buckets
// (package policy/load).

const (
	// loadAlpha is the weight of a round's figure in the average: half,
	// so that a step is mostly seen after two rounds and wholly after
	// five.
	loadAlpha = 0.5
	// LoadExpiry is how long a figure counts without a round renewing it:
	// gRPC's weighted round robin's expiration period. An endpoint that
	// stops publishing its load is weighed as one that never did.
	LoadExpiry = 3 * time.Minute
	// maxLoad bounds a figure kept, so that one absurd answer does not take
	// the average out of reach for long.
	maxLoad = 100
)

// loadAverage is one target's smoothed figure.
type loadAverage struct {
	v   float64
	at  time.Time // when a round last gave a figure
	set bool
}

func (a *loadAverage) add(now time.Time, u float64) {
	u = min(u, maxLoad)
	if !a.set {
		a.v, a.set = u, true
	} else {
		a.v += loadAlpha * (u - a.v)
	}
	a.at = now
}

// Load is one target's load as the engine knows it.
type Load struct {
	// Utilization is the average of its rounds' figures: 1.0 is its target.
	Utilization float64
	// At is when a round last gave a figure.
	At time.Time
}

// Loads returns the load of every target whose answers gave one within
// LoadExpiry, by key.
func (e *Engine) Loads() map[string]Load {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.opts.clock.Now()
	out := map[string]Load{}
	for k, t := range e.targets {
		if t.load.set && now.Sub(t.load.at) < LoadExpiry {
			out[k] = Load{Utilization: t.load.v, At: t.load.at}
		}
	}
	return out
}
