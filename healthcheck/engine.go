package healthcheck

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
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
