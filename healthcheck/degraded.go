package healthcheck

// selfCheck is the state of the degraded self-check: per cluster, its
// targets' latest rounds, and how many clusters are mostly failing. The
// engine's lock guards it.
type selfCheck struct {
	threshold int                      // clusters mostly failing at once that make the checker degraded
	clusters  map[string]*clusterCount // by name
	failing   int                      // clusters where most probed targets failed their latest round
	degraded  bool
}

// clusterCount is, for one cluster, its targets' latest rounds.
type clusterCount struct {
	targets, probed, failed int
}

func (c *clusterCount) failing() bool { return c.probed > 0 && 2*c.failed > c.probed }

func newSelfCheck(threshold int) selfCheck {
	return selfCheck{threshold: threshold, clusters: map[string]*clusterCount{}}
}

// join counts t in its cluster.
func (s *selfCheck) join(t *target) {
	s.cluster(t.Cluster).targets++
	s.account(t, +1)
}

// leave takes t out of its cluster's counts, and forgets a cluster left
// without targets.
func (s *selfCheck) leave(t *target) {
	s.account(t, -1)
	s.cluster(t.Cluster).targets--
	s.dropCluster(t.Cluster)
}

// account adds (sign +1) or takes away (-1) t's latest round from its
// cluster's count.
func (s *selfCheck) account(t *target, sign int) {
	if !t.probed {
		return
	}
	c := s.cluster(t.Cluster)
	was := c.failing()
	c.probed += sign
	if !t.lastOK {
		c.failed += sign
	}
	switch now := c.failing(); {
	case now && !was:
		s.failing++
	case was && !now:
		s.failing--
	}
}

func (s *selfCheck) cluster(name string) *clusterCount {
	c, ok := s.clusters[name]
	if !ok {
		c = &clusterCount{}
		s.clusters[name] = c
	}
	return c
}

func (s *selfCheck) dropCluster(name string) {
	if c := s.clusters[name]; c != nil && c.targets == 0 {
		delete(s.clusters, name)
	}
}

// update recomputes degraded from the counts and reports whether it
// changed.
func (s *selfCheck) update() (changed bool) {
	d := s.failing >= s.threshold
	if d == s.degraded {
		return false
	}
	s.degraded = d
	return true
}
