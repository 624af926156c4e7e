package healthcheck

import (
	"container/heap"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// Target is one endpoint to probe.
type Target struct {
	// Key identifies the endpoint, e.g. "namespace/service/cluster".
	Key string
	// Cluster is the cluster the endpoint is in; the degraded self-check
	// counts failures per cluster.
	Cluster string
	// Addrs are the endpoint's addresses. The endpoint is up in this
	// checker's view while any of them passes: a round probes them all
	// together and passes when one does.
	Addrs []netip.AddrPort
	// Spec is how the endpoint is probed and judged.
	Spec Spec
}

// target is a Target with its schedule and verdict state.
type target struct {
	Target
	next     time.Time // when the next round is due
	index    int       // position in the queue
	gen      uint64    // bumped when Addrs or Spec change; older rounds' results are dropped
	inFlight bool

	healthy bool   // the local verdict
	streak  int    // consecutive rounds disagreeing with the verdict
	probed  bool   // a round has completed, so last is meaningful
	lastOK  bool   // the latest round's outcome
	last    Result // the latest round's result
	rtt     rttWindow
}

// Set makes targets the engine's targets: new keys are added (healthy,
// first round at a random offset within their interval), missing keys are
// removed (a round in flight for one is forgotten), and the others updated.
//
// An updated target keeps its verdict. If its Addrs or Spec changed, the
// rounds counted toward flipping the verdict start again under the new
// settings, and a round in flight under the old ones is dropped; if its
// interval changed, its next round comes at a random offset within the new
// interval.
//
// A target with an empty key, no addresses, an invalid Spec or a key seen
// earlier in targets is refused: the error names each, and such a key keeps
// whatever the engine had for it, so bad input loses nothing.
func (e *Engine) Set(targets []Target) error {
	want, keep, err := e.check(targets)
	e.mu.Lock()
	now := e.opts.clock.Now()
	for key, t := range e.targets {
		if _, ok := want[key]; !ok && !keep[key] {
			e.remove(t)
		}
	}
	for _, nt := range want {
		e.put(now, nt)
	}
	e.metrics.targets(len(e.targets), e.unhealthy)
	e.updateDegraded()
	e.mu.Unlock()
	signal(e.wake) // the earliest round may have changed
	return err
}

// check sorts targets into those to set, by key, and the keys of refused
// ones, which keep what the engine has for them; the error names each
// refusal.
func (e *Engine) check(targets []Target) (want map[string]Target, keep map[string]bool, err error) {
	var errs []error
	want = make(map[string]Target, len(targets))
	keep = map[string]bool{}
	for i, t := range targets {
		var err error
		switch _, dup := want[t.Key]; {
		case t.Key == "":
			err = errors.New("empty key")
		case dup || keep[t.Key]:
			err = errors.New("key repeated; the first one counts")
		case len(t.Addrs) == 0:
			err = errors.New("no addresses")
		default:
			minInterval, minTimeout := MinInterval, MinTimeout
			if e.opts.shortIntervals {
				minInterval, minTimeout = time.Millisecond, time.Millisecond
			}
			if verr := t.Spec.validate(minInterval, minTimeout); verr != nil {
				err = verr
			} else if j := slices.IndexFunc(t.Addrs, func(a netip.AddrPort) bool { return !a.IsValid() || a.Port() == 0 && t.Spec.Port == 0 }); j >= 0 {
				err = fmt.Errorf("address %d (%v): not an address with a port", j, t.Addrs[j])
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("target %d %q: %w", i, t.Key, err))
			if t.Key != "" {
				if _, dup := want[t.Key]; !dup {
					keep[t.Key] = true
				}
			}
			continue
		}
		want[t.Key] = t
	}
	return want, keep, errors.Join(errs...)
}

// put adds nt, healthy, or updates the target of its key as Set says;
// mu is held.
func (e *Engine) put(now time.Time, nt Target) {
	nt.Addrs = slices.Clone(nt.Addrs)
	t, ok := e.targets[nt.Key]
	if !ok {
		t = &target{Target: nt, healthy: true}
		t.next = now.Add(e.offset(nt.Spec.Interval))
		e.targets[nt.Key] = t
		heap.Push(&e.queue, t)
		e.join(t)
		return
	}
	if t.Cluster != nt.Cluster {
		e.leave(t)
		t.Cluster = nt.Cluster
		e.join(t)
	}
	if t.Spec != nt.Spec || !slices.Equal(t.Addrs, nt.Addrs) {
		if t.Spec.Interval != nt.Spec.Interval {
			t.next = now.Add(e.offset(nt.Spec.Interval))
			heap.Fix(&e.queue, t.index)
		}
		t.Spec, t.Addrs = nt.Spec, nt.Addrs
		t.streak = 0
		t.rtt = rttWindow{} // another check times another thing
		t.gen++
	}
}

// remove forgets t; mu is held.
func (e *Engine) remove(t *target) {
	heap.Remove(&e.queue, t.index)
	delete(e.targets, t.Key)
	e.leave(t)
	if !t.healthy {
		e.unhealthy--
	}
}
