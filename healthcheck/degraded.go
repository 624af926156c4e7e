package healthcheck

// clusterCount is, for one cluster, its targets' latest rounds.
type clusterCount struct {
	targets, probed, failed int
}

func (c *clusterCount) failing() bool { return c.probed > 0 && 2*c.failed > c.probed }

// Degraded reports whether this checker doubts its own view: in the latest
// round of each target, more than half of the probed targets of each of at
// least DegradedClusters clusters failed. A checker cut off from the
// network sees exactly that, while real outages seldom take most endpoints
// of several clusters at once; so a degraded checker keeps probing and
// reporting, but its reports abstain from the quorum (see Verdict). Targets
// not yet probed are not counted, and a federation with fewer clusters than
// DegradedClusters never makes its checkers degraded.
func (e *Engine) Degraded() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.degraded
}

// join counts t in its cluster; mu is held.
func (e *Engine) join(t *target) {
	e.cluster(t.Cluster).targets++
	e.account(t, +1)
}

// leave takes t out of its cluster's counts, and forgets a cluster left
// without targets; mu is held.
func (e *Engine) leave(t *target) {
	e.account(t, -1)
	e.cluster(t.Cluster).targets--
	e.dropCluster(t.Cluster)
}

// account adds (sign +1) or takes away (-1) t's latest round from its
// cluster's count; mu is held.
func (e *Engine) account(t *target, sign int) {
	if !t.probed {
		return
	}
	c := e.cluster(t.Cluster)
	was := c.failing()
	c.probed += sign
	if !t.lastOK {
		c.failed += sign
	}
	switch now := c.failing(); {
	case now && !was:
		e.failing++
	case was && !now:
		e.failing--
	}
}

func (e *Engine) cluster(name string) *clusterCount {
	c, ok := e.clusters[name]
	if !ok {
		c = &clusterCount{}
		e.clusters[name] = c
	}
	return c
}

func (e *Engine) dropCluster(name string) {
	if c := e.clusters[name]; c != nil && c.targets == 0 {
		delete(e.clusters, name)
	}
}

// updateDegraded recomputes Degraded and queues an event if it changed;
// mu is held.
func (e *Engine) updateDegraded() {
	d := e.failing >= e.opts.DegradedClusters
	if d == e.degraded {
		return
	}
	e.degraded = d
	e.metrics.setDegraded(d)
	if e.opts.OnDegraded != nil {
		e.notify(event{up: d})
	}
}
