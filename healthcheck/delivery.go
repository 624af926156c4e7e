package healthcheck

import (
	"context"
	"sync"
)

// event is a change for the callbacks: a verdict flip, or with key "" a
// change of Degraded.
type event struct {
	key string
	up  bool
}

// deliverer hands the changes to the callbacks, in order, on a goroutine of
// its own: a slow callback delays the ones after it, never a probe.
type deliverer struct {
	// mu is the engine's lock (as a sync.Cond's L is its owner's): the
	// changes are queued under it, so events are in the order they
	// happened.
	mu         *sync.Mutex
	events     []event       // changes not yet given to the callbacks, in order
	pending    chan struct{} // signals events to deliver
	onChange   func(key string, healthy bool)
	onDegraded func(degraded bool)
}

func newDeliverer(mu *sync.Mutex, onChange func(key string, healthy bool), onDegraded func(degraded bool)) deliverer {
	return deliverer{mu: mu, pending: make(chan struct{}, 1), onChange: onChange, onDegraded: onDegraded}
}

// notify queues ev for its callback, if there is one; mu is held.
func (d *deliverer) notify(ev event) {
	if ev.key == "" && d.onDegraded == nil || ev.key != "" && d.onChange == nil {
		return
	}
	d.events = append(d.events, ev)
	signal(d.pending)
}

// deliver calls the callbacks for queued events, in order, until ctx ends,
// then once more for what is left.
func (d *deliverer) deliver(ctx context.Context) {
	var batch []event
	for done := false; !done; {
		select {
		case <-d.pending:
		case <-ctx.Done():
			done = true
		}
		d.mu.Lock()
		batch, d.events = d.events, batch[:0]
		d.mu.Unlock()
		for _, ev := range batch {
			if ev.key == "" {
				d.onDegraded(ev.up)
			} else {
				d.onChange(ev.key, ev.up)
			}
		}
		clear(batch)
	}
}

// signal wakes whoever waits on c, without blocking.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
