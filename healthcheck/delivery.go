package healthcheck

import "context"

// event is a change for the callbacks: a verdict flip, or with key "" a
// change of Degraded.
type event struct {
	key string
	up  bool
}

// notify queues ev for the callbacks; mu is held.
func (e *Engine) notify(ev event) {
	e.events = append(e.events, ev)
	signal(e.pending)
}

// deliver calls the callbacks for queued events, in order, until ctx ends,
// then once more for what is left.
func (e *Engine) deliver(ctx context.Context) {
	var batch []event
	for done := false; !done; {
		select {
		case <-e.pending:
		case <-ctx.Done():
			done = true
		}
		e.mu.Lock()
		batch, e.events = e.events, batch[:0]
		e.mu.Unlock()
		for _, ev := range batch {
			if ev.key == "" {
				e.opts.OnDegraded(ev.up)
			} else {
				e.opts.OnChange(ev.key, ev.up)
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
