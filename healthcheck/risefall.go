package healthcheck

// record applies a round's result to its target's verdict and to the
// degraded self-check, and queues the callbacks for what changed.
func (e *Engine) record(r round, res Result) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := r.t
	t.inFlight = false
	if e.targets[t.Key] != t || t.gen != r.gen {
		return // removed or changed meanwhile
	}
	e.account(t, -1)
	t.probed, t.lastOK, t.last = true, res.OK, res
	if res.OK {
		t.rtt.add(res.Latency)
	}
	e.account(t, +1)
	if t.judge(res.OK) {
		if t.healthy {
			e.unhealthy--
		} else {
			e.unhealthy++
		}
		e.metrics.targets(len(e.targets), e.unhealthy)
		if e.opts.OnChange != nil {
			e.notify(event{key: t.Key, up: t.healthy})
		}
	}
	e.updateDegraded()
}

// judge counts a round's outcome toward flipping t's verdict, HAProxy's
// rise and fall: Fall failures in a row turn a healthy target unhealthy,
// Rise passes in a row turn it healthy again, and a round that agrees with
// the verdict starts the count again. It reports whether the verdict
// flipped.
func (t *target) judge(ok bool) (flipped bool) {
	if ok == t.healthy {
		t.streak = 0
		return false
	}
	t.streak++
	if (t.healthy && t.streak >= t.Spec.Fall) || (!t.healthy && t.streak >= t.Spec.Rise) {
		t.healthy, t.streak = !t.healthy, 0
		return true
	}
	return false
}
