package healthcheck

import (
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
// heap, no goroutine per target), starting the rounds due within 10 ms of
// each other at one wake; rounds run on goroutines bounded by
// MaxConcurrent. A target whose round is still running when it comes due
// again skips that turn (counted in kfed_healthcheck_rounds_skipped_total).
type Engine struct {
	opts    Options
	prober  *prober
	metrics *metrics
	wake    chan struct{}

	running sync.Mutex // held by Run

	mu        sync.Mutex
	targets   map[string]*target
	unhealthy int
	sched     scheduler
	self      selfCheck // the degraded self-check
	delivery  deliverer // queues its events under mu
}

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
	e := &Engine{
		opts:    opts,
		prober:  newProber(opts.Source),
		metrics: m,
		wake:    make(chan struct{}, 1),
		targets: map[string]*target{},
		sched:   scheduler{clock: opts.clock, rand: opts.rand, skipped: m.skipped},
		self:    newSelfCheck(opts.DegradedClusters),
	}
	e.delivery = newDeliverer(&e.mu, opts.OnChange, opts.OnDegraded)
	return e, nil
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
	minInterval, minTimeout := MinInterval, MinTimeout
	if e.opts.shortIntervals {
		minInterval, minTimeout = time.Millisecond, time.Millisecond
	}
	want, keep, err := screen(targets, minInterval, minTimeout)
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

// put adds nt, healthy, or updates the target of its key as Set says;
// mu is held.
func (e *Engine) put(now time.Time, nt Target) {
	nt.Addrs = slices.Clone(nt.Addrs)
	t, ok := e.targets[nt.Key]
	if !ok {
		t = &target{Target: nt, healthy: true}
		e.sched.add(now, t)
		e.targets[nt.Key] = t
		e.self.join(t)
		return
	}
	if t.Cluster != nt.Cluster {
		e.self.leave(t)
		t.Cluster = nt.Cluster
		e.self.join(t)
	}
	if t.Spec != nt.Spec || !slices.Equal(t.Addrs, nt.Addrs) {
		if t.Spec.Interval != nt.Spec.Interval {
			e.sched.restart(now, t, nt.Spec.Interval)
		}
		t.Spec, t.Addrs = nt.Spec, nt.Addrs
		t.streak = 0
		t.rtt = rttWindow{}    // another check times another thing
		t.load = loadAverage{} // and may read another figure
		t.gen++
	}
}

// remove forgets t; mu is held.
func (e *Engine) remove(t *target) {
	e.sched.remove(t)
	delete(e.targets, t.Key)
	e.self.leave(t)
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
	return e.self.degraded
}

// RTTs returns, for each cluster with a target measured enough, how long a
// round takes to pass there: the lowest of its targets' medians over their
// latest five passing rounds. The median of a target ignores a slow or
// lucky round; the lowest target is the one whose probe costs least (a tcp
// check, a quick health page), so a cluster's figure is its network's,
// mostly, and compares across clusters probed for the same Services.
func (e *Engine) RTTs() map[string]time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]time.Duration{}
	for _, t := range e.targets {
		if t.Cluster == "" {
			continue
		}
		m, ok := t.rtt.median()
		if !ok {
			continue
		}
		if cur, seen := out[t.Cluster]; !seen || m < cur {
			out[t.Cluster] = m
		}
	}
	return out
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
	go func() { e.delivery.deliver(stopDelivery); close(delivered) }()
	defer wg.Wait()
	slots := make(chan struct{}, e.opts.MaxConcurrent)
	var due []round
	for {
		var wait <-chan time.Time
		due, wait = e.takeDue(due)
		if !e.start(ctx, &wg, slots, due) {
			return nil
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

// takeDue takes the rounds due from the schedule, as scheduler.takeDue.
func (e *Engine) takeDue(due []round) ([]round, <-chan time.Time) {
	// Now and After are both read under mu, so a clock stepped under mu
	// (the tests' fake) cannot move between them and leave the wait
	// measured from a time already past.
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sched.takeDue(due)
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
	res := r.probeAll(ctx, e.prober, e.metrics.observe)
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
	e.self.account(t, -1)
	t.probed, t.lastOK, t.last = true, res.OK, res
	if res.OK {
		t.rtt.add(res.Latency)
	}
	if res.Loaded {
		t.load.add(e.opts.clock.Now(), res.Load)
	}
	if res.LoadErr != nil {
		e.metrics.loadUnreadable.Inc()
	}
	e.self.account(t, +1)
	if t.judge(res.OK) {
		if t.healthy {
			e.unhealthy--
		} else {
			e.unhealthy++
		}
		e.metrics.targets(len(e.targets), e.unhealthy)
		e.delivery.notify(event{key: t.Key, up: t.healthy})
	}
	e.updateDegraded()
}

// updateDegraded recomputes Degraded and queues an event if it changed;
// mu is held.
func (e *Engine) updateDegraded() {
	if !e.self.update() {
		return
	}
	e.metrics.setDegraded(e.self.degraded)
	e.delivery.notify(event{up: e.self.degraded})
}
