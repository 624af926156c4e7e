package healthcheck

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
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

// Options configure an Engine. The zero value is usable.
type Options struct {
	// MaxConcurrent is the most rounds in flight at once (default 256). A
	// round probes one target's addresses together, so the connections open
	// at once are at most MaxConcurrent times the addresses of a target.
	// Rounds that come due while all slots are taken wait for one.
	MaxConcurrent int
	// DegradedClusters is how many clusters must be mostly failing at once
	// for the checker to call itself degraded (default 2); see Degraded.
	DegradedClusters int
	// OnChange is called when a target's local verdict flips. It is not
	// called for a new target (which starts healthy) nor a removed one.
	OnChange func(key string, healthy bool)
	// OnDegraded is called when Degraded changes.
	//
	// Callbacks are called while Run runs, one at a time and in the order of
	// the changes, on a goroutine of their own: a slow callback delays the
	// ones after it, never a probe. They may call any method of the Engine.
	OnDegraded func(degraded bool)
	// Registerer receives the engine's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Source, if valid, is the local address probes are sent from: a
	// checker with an address of its own can be told apart on the network
	// (and, in tests, cut off from it).
	Source netip.Addr

	// Seams for tests.
	clock clock.Clock
	rand  *rand.Rand
	// shortIntervals lets Set take intervals and timeouts of milliseconds.
	shortIntervals bool
	// roundDone, if set, is called after each round's result is recorded
	// (or dropped, for a target removed or changed meanwhile), with the time
	// the round was due.
	roundDone func(key string, due time.Time)
}

// Engine is one checker: it probes a changing set of targets, forever, and
// keeps a local verdict per target with HAProxy's rise and fall: a new
// target starts healthy, Fall consecutive failed rounds turn it unhealthy
// and Rise consecutive passing rounds turn it healthy again.
//
// Each target has its own schedule: the first round at a random offset
// within its interval, then every interval ±10 %, so that probes of many
// targets never arrive in bursts. One goroutine keeps the schedule (a timer
// heap, no goroutine per target); rounds run on goroutines bounded by
// MaxConcurrent. A target whose round is still running when it comes due
// again skips that turn (counted in kfed_healthcheck_rounds_skipped_total).
type Engine struct {
	opts    Options
	prober  *prober
	metrics *metrics
	wake    chan struct{}

	running sync.Mutex    // held by Run
	pending chan struct{} // signals events to deliver

	mu        sync.Mutex
	targets   map[string]*target
	queue     schedule
	clusters  map[string]*clusterCount
	failing   int // clusters where most probed targets failed their latest round
	degraded  bool
	unhealthy int
	events    []event // changes not yet given to the callbacks, in order
}

// event is a change for the callbacks: a verdict flip, or with key "" a
// change of Degraded.
type event struct {
	key string
	up  bool
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
}

// clusterCount is, for one cluster, its targets' latest rounds.
type clusterCount struct {
	targets, probed, failed int
}

func (c *clusterCount) failing() bool { return c.probed > 0 && 2*c.failed > c.probed }

// NewEngine returns an engine with no targets; Set gives it some and Run
// probes them.
func NewEngine(opts Options) (*Engine, error) {
	if opts.MaxConcurrent < 0 {
		return nil, fmt.Errorf("health-check engine: MaxConcurrent %d: must not be negative", opts.MaxConcurrent)
	}
	if opts.DegradedClusters < 0 {
		return nil, fmt.Errorf("health-check engine: DegradedClusters %d: must not be negative", opts.DegradedClusters)
	}
	if opts.MaxConcurrent == 0 {
		opts.MaxConcurrent = 256
	}
	if opts.DegradedClusters == 0 {
		opts.DegradedClusters = 2
	}
	if opts.clock == nil {
		opts.clock = clock.RealClock{}
	}
	if opts.rand == nil {
		opts.rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("health-check engine: %w", err)
	}
	return &Engine{
		opts:     opts,
		prober:   newProber(opts.Source),
		metrics:  m,
		wake:     make(chan struct{}, 1),
		pending:  make(chan struct{}, 1),
		targets:  map[string]*target{},
		clusters: map[string]*clusterCount{},
	}, nil
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
	var errs []error
	want := make(map[string]Target, len(targets))
	keep := map[string]bool{}
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

	e.mu.Lock()
	now := e.opts.clock.Now()
	for key, t := range e.targets {
		if _, ok := want[key]; !ok && !keep[key] {
			e.remove(t)
		}
	}
	for key, nt := range want {
		nt.Addrs = slices.Clone(nt.Addrs)
		t, ok := e.targets[key]
		if !ok {
			t = &target{Target: nt, healthy: true}
			t.next = now.Add(e.offset(nt.Spec.Interval))
			e.targets[key] = t
			heap.Push(&e.queue, t)
			e.cluster(t.Cluster).targets++
			continue
		}
		if t.Cluster != nt.Cluster {
			e.account(t, -1)
			e.cluster(t.Cluster).targets--
			e.dropCluster(t.Cluster)
			t.Cluster = nt.Cluster
			e.cluster(t.Cluster).targets++
			e.account(t, +1)
		}
		if t.Spec != nt.Spec || !slices.Equal(t.Addrs, nt.Addrs) {
			if t.Spec.Interval != nt.Spec.Interval {
				t.next = now.Add(e.offset(nt.Spec.Interval))
				heap.Fix(&e.queue, t.index)
			}
			t.Spec, t.Addrs = nt.Spec, nt.Addrs
			t.streak = 0
			t.gen++
		}
	}
	e.metrics.targets(len(e.targets), e.unhealthy)
	e.updateDegraded()
	e.mu.Unlock()
	signal(e.wake) // the earliest round may have changed
	return errors.Join(errs...)
}

// remove forgets t; mu is held.
func (e *Engine) remove(t *target) {
	heap.Remove(&e.queue, t.index)
	delete(e.targets, t.Key)
	e.account(t, -1)
	e.cluster(t.Cluster).targets--
	e.dropCluster(t.Cluster)
	if !t.healthy {
		e.unhealthy--
	}
}

// State returns the local verdict of every target: true for healthy.
func (e *Engine) State() map[string]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := make(map[string]bool, len(e.targets))
	for k, t := range e.targets {
		s[k] = t.healthy
	}
	return s
}

// Last returns the result of key's latest round (for a message saying why
// it is down), and false if the target is unknown or has not completed a
// round since it was added. After a change of Addrs or Spec it is the last
// round under the old settings until one under the new completes.
func (e *Engine) Last(key string) (Result, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.targets[key]
	if !ok || !t.probed {
		return Result{}, false
	}
	return t.last, true
}

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

// Run probes the targets until ctx ends, then waits for the rounds in flight
// (their probes are canceled) and returns nil. Only one Run may be active.
func (e *Engine) Run(ctx context.Context) error {
	if !e.running.TryLock() {
		return errors.New("health-check engine: Run called while already running")
	}
	defer e.running.Unlock()
	var wg sync.WaitGroup
	// Deferred calls run last-in first-out: rounds finish, then their
	// events are delivered.
	delivered := make(chan struct{})
	defer func() { <-delivered }()
	stopDelivery, stop := context.WithCancel(context.Background())
	defer stop()
	go func() { e.deliver(stopDelivery); close(delivered) }()
	defer wg.Wait()
	slots := make(chan struct{}, e.opts.MaxConcurrent)
	var due []round
	for {
		// Now and After are both read under mu, so a clock stepped under mu
		// (the tests' fake) cannot move between them and leave the wait
		// measured from a time already past.
		e.mu.Lock()
		now := e.opts.clock.Now()
		var wait <-chan time.Time
		for len(e.queue) > 0 {
			t := e.queue[0]
			if t.next.After(now) {
				wait = e.opts.clock.After(t.next.Sub(now))
				break
			}
			// Keep the schedule's phase: the next round is an interval after
			// this one was due, unless the engine fell behind by more.
			dueAt := t.next
			t.next = t.next.Add(e.jittered(t.Spec.Interval))
			if !t.next.After(now) {
				t.next = now.Add(e.jittered(t.Spec.Interval))
			}
			heap.Fix(&e.queue, 0)
			if t.inFlight {
				e.metrics.skipped.Inc()
				continue
			}
			t.inFlight = true
			due = append(due, round{t: t, gen: t.gen, addrs: t.Addrs, spec: t.Spec, due: dueAt})
		}
		e.mu.Unlock()

		for i, r := range due {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				e.abandon(due[i:])
				return nil
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				e.run(ctx, r)
				<-slots
			}()
		}
		clear(due) // let removed targets be collected
		due = due[:0]

		select {
		case <-ctx.Done():
			return nil
		case <-e.wake:
		case <-wait:
		}
	}
}

// round is one target's round as it was when it came due.
type round struct {
	t     *target
	gen   uint64
	addrs []netip.AddrPort
	spec  Spec
	due   time.Time
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

type indexed struct {
	i int
	r Result
}

// record applies a round's result to its target's verdict, and calls the
// callbacks for what changed.
func (e *Engine) record(r round, res Result) {
	e.mu.Lock()
	t := r.t
	t.inFlight = false
	if e.targets[t.Key] != t || t.gen != r.gen {
		e.mu.Unlock()
		return // removed or changed meanwhile
	}
	e.account(t, -1)
	t.probed, t.lastOK, t.last = true, res.OK, res
	e.account(t, +1)

	flipped := false
	if res.OK == t.healthy {
		t.streak = 0
	} else {
		t.streak++
		if (t.healthy && t.streak >= t.Spec.Fall) || (!t.healthy && t.streak >= t.Spec.Rise) {
			t.healthy, t.streak, flipped = !t.healthy, 0, true
			if t.healthy {
				e.unhealthy--
			} else {
				e.unhealthy++
			}
			e.metrics.targets(len(e.targets), e.unhealthy)
		}
	}
	if flipped && e.opts.OnChange != nil {
		e.events = append(e.events, event{key: t.Key, up: t.healthy})
		signal(e.pending)
	}
	e.updateDegraded()
	e.mu.Unlock()
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
		e.events = append(e.events, event{up: d})
		signal(e.pending)
	}
}

// offset is a first round's delay: anywhere within the interval.
func (e *Engine) offset(interval time.Duration) time.Duration {
	return time.Duration(e.opts.rand.Int64N(int64(interval)))
}

// jittered is an interval ±10 %.
func (e *Engine) jittered(interval time.Duration) time.Duration {
	return interval*9/10 + time.Duration(e.opts.rand.Int64N(int64(interval)/5+1))
}

// schedule is a min-heap of targets by next round.
type schedule []*target

func (s schedule) Len() int           { return len(s) }
func (s schedule) Less(i, j int) bool { return s[i].next.Before(s[j].next) }
func (s schedule) Swap(i, j int) {
	s[i], s[j] = s[j], s[i]
	s[i].index, s[j].index = i, j
}
func (s *schedule) Push(x any) {
	t := x.(*target)
	t.index = len(*s)
	*s = append(*s, t)
}
func (s *schedule) Pop() any {
	old := *s
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*s = old[:len(old)-1]
	t.index = -1
	return t
}
