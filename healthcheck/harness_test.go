package healthcheck

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// dueBy counts the rounds that start when the clock reaches t. If a
// target is due by t, Run wakes and walks its schedule in order, starting
// every round due within its coalescing window after t, up to the first
// that is not; if none is due, Run does not wake. With steps shorter than a
// target's interval, or any step thanks to Run's catch-up rule, each of
// them runs exactly one round. Counting fewer would leave a round running
// while the harness steps on, and its next turn skipped.
func (e *Engine) dueBy(t time.Time) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	next := slices.SortedFunc(slices.Values(e.sched.queue), func(a, b *target) int { return a.next.Compare(b.next) })
	if len(next) == 0 || next[0].next.After(t) {
		return 0
	}
	n := 0
	for _, tg := range next {
		if tg.next.After(t.Add(tg.window())) {
			break
		}
		n++
	}
	return n
}

func (e *Engine) earliest() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sched.queue[0].next
}

type doneRound struct {
	key string
	due time.Time
}

// harness runs an engine on a fake clock and steps it round by round; the
// probes themselves are real, against loopback servers.
type harness struct {
	t       *testing.T
	e       *Engine
	clock   *testingclock.FakeClock
	done    chan doneRound
	changes chan string // "key up" or "key down"
	degr    chan bool
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, clock: testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), done: make(chan doneRound, 10000),
		changes: make(chan string, 10000), degr: make(chan bool, 100)}
	opts.clock = h.clock
	opts.rand = rand.New(rand.NewPCG(1, 2))
	opts.roundDone = func(key string, due time.Time) { h.done <- doneRound{key, due} }
	opts.OnChange = func(key string, healthy bool) {
		if healthy {
			h.changes <- key + " up"
		} else {
			h.changes <- key + " down"
		}
	}
	opts.OnDegraded = func(d bool) { h.degr <- d }
	e, err := NewEngine(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.e = e
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return h
}

// advance moves the clock by d and waits for the rounds that come due.
func (h *harness) advance(d time.Duration) []doneRound {
	h.t.Helper()
	n := h.e.dueBy(h.clock.Now().Add(d))
	h.step(d)
	return h.collect(n)
}

// step moves the clock by d. Run reads the time and sets its wait, relative
// to that time, under the engine's lock; stepping under it too means a step
// never falls between the two, which would leave Run waiting from a time
// already past.
func (h *harness) step(d time.Duration) {
	h.e.mu.Lock()
	defer h.e.mu.Unlock()
	h.clock.Step(d)
}

// next moves the clock to the earliest due round and waits for it.
func (h *harness) next() []doneRound {
	h.t.Helper()
	return h.advance(h.e.earliest().Sub(h.clock.Now()))
}

func (h *harness) collect(n int) []doneRound {
	h.t.Helper()
	var got []doneRound
	deadline := time.After(20 * time.Second) // real time, for a loaded machine
	for len(got) < n {
		select {
		case r := <-h.done:
			got = append(got, r)
		case <-deadline:
			h.t.Fatalf("%d of %d rounds done after 20s", len(got), n)
		}
	}
	return got
}

// expect waits for the next callback of a kind, or fails.
func expect[T comparable](t *testing.T, c chan T, want T) {
	t.Helper()
	select {
	case got := <-c:
		if got != want {
			t.Fatalf("callback %v, want %v", got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no callback, want %v", want)
	}
}

// expectNone checks no callback is queued. Callbacks of recorded rounds are
// delivered asynchronously, so give them a moment first.
func expectNone[T any](t *testing.T, c chan T) {
	t.Helper()
	select {
	case got := <-c:
		t.Fatalf("unexpected callback %v", got)
	case <-time.After(50 * time.Millisecond):
	}
}

// switchable is a real HTTP server whose answer a test flips.
type switchable struct {
	status atomic.Int32
	addr   netip.AddrPort
}

func newSwitchable(t *testing.T) *switchable {
	t.Helper()
	s := &switchable{}
	s.status.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(s.status.Load()))
	}))
	t.Cleanup(srv.Close)
	s.addr = serverAddr(t, srv)
	return s
}

func (s *switchable) up()   { s.status.Store(http.StatusOK) }
func (s *switchable) down() { s.status.Store(http.StatusServiceUnavailable) }

func httpSpecEvery(interval time.Duration) Spec {
	s := Defaults()
	s.Kind, s.Path, s.StatusMin, s.StatusMax = KindHTTP, "/", 200, 399
	s.Interval, s.Timeout = interval, interval/4
	return s
}
