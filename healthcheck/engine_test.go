package healthcheck

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	testingclock "k8s.io/utils/clock/testing"
)

// dueBy counts the targets whose next round is due by t; with steps shorter
// than a target's interval, or any step thanks to Run's catch-up rule, each
// of them runs exactly one round when the clock reaches t.
func (e *Engine) dueBy(t time.Time) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, tg := range e.targets {
		if !tg.next.After(t) {
			n++
		}
	}
	return n
}

func (e *Engine) earliest() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.queue[0].next
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

func TestEngineSchedulesEachTargetWithJitter(t *testing.T) {
	const targets, interval = 200, 10 * time.Second
	h := newHarness(t, Options{})
	addr := addrOf(t, listen(t).Addr())
	var ts []Target
	for i := range targets {
		ts = append(ts, Target{Key: "k" + string(rune('A'+i%26)) + string(rune('0'+i/26)), Cluster: "c", Addrs: []netip.AddrPort{addr}, Spec: Defaults()})
	}
	if err := h.e.Set(ts); err != nil {
		t.Fatal(err)
	}
	start := h.clock.Now()
	dues := map[string][]time.Time{}
	perSecond := map[int]int{}
	for range 60 { // a minute in steps of a second
		for _, r := range h.advance(time.Second) {
			dues[r.key] = append(dues[r.key], r.due)
			if len(dues[r.key]) == 1 {
				perSecond[int(r.due.Sub(start)/time.Second)]++
			}
		}
	}
	if len(dues) != targets {
		t.Fatalf("%d targets probed, want %d", len(dues), targets)
	}
	for key, d := range dues {
		if first := d[0].Sub(start); first < 0 || first >= interval {
			t.Errorf("%s: first round at %v, want within the first interval", key, first)
		}
		for i := 1; i < len(d); i++ {
			if gap := d[i].Sub(d[i-1]); gap < interval*9/10 || gap > interval*11/10 {
				t.Errorf("%s: rounds %v apart, want %v ±10%%", key, gap, interval)
			}
		}
		if len(d) < 5 || len(d) > 7 {
			t.Errorf("%s: %d rounds in a minute, want about 6", key, len(d))
		}
	}
	// 200 first rounds over 10 one-second slots: about 20 each; a burst
	// would put most in one.
	for sec, n := range perSecond {
		if n > 40 {
			t.Errorf("%d first rounds in second %d, want them spread (about 20 a second)", n, sec)
		}
	}
}

func TestEngineRiseAndFall(t *testing.T) {
	srv := newSwitchable(t)
	h := newHarness(t, Options{})
	spec := httpSpecEvery(10 * time.Second) // rise 2, fall 3
	if err := h.e.Set([]Target{{Key: "web", Cluster: "c1", Addrs: []netip.AddrPort{srv.addr}, Spec: spec}}); err != nil {
		t.Fatal(err)
	}
	state := func() bool { return h.e.State()["web"] }
	if !state() {
		t.Fatal("a new target does not start healthy")
	}
	h.next()
	if r, ok := h.e.Last("web"); !ok || !r.OK || r.Reason != "status 200" {
		t.Errorf("Last = %+v, %v", r, ok)
	}

	srv.down()
	for i := 1; i < spec.Fall; i++ {
		h.next()
		if !state() {
			t.Fatalf("unhealthy after %d failed rounds, fall is %d", i, spec.Fall)
		}
	}
	h.next()
	if state() {
		t.Fatalf("healthy after %d failed rounds", spec.Fall)
	}
	expect(t, h.changes, "web down")
	if r, _ := h.e.Last("web"); r.Reason != "status 503" {
		t.Errorf("Last reason %q", r.Reason)
	}

	srv.up()
	h.next()
	if state() {
		t.Fatal("healthy after one passing round, rise is 2")
	}
	srv.down()
	h.next() // a failure resets the count toward rising
	srv.up()
	h.next()
	if state() {
		t.Fatal("healthy after passes that were not consecutive")
	}
	h.next()
	if !state() {
		t.Fatal("unhealthy after 2 consecutive passing rounds")
	}
	expect(t, h.changes, "web up")
	expectNone(t, h.changes)
}

func TestEngineSpecChangeKeepsVerdictAndRestartsCount(t *testing.T) {
	srv := newSwitchable(t)
	h := newHarness(t, Options{})
	spec := httpSpecEvery(10 * time.Second)
	set := func(s Spec) {
		if err := h.e.Set([]Target{{Key: "web", Cluster: "c1", Addrs: []netip.AddrPort{srv.addr}, Spec: s}}); err != nil {
			t.Fatal(err)
		}
	}
	set(spec)
	srv.down()
	h.next()
	h.next() // two failures of three

	spec.Timeout = 3 * time.Second
	set(spec)
	h.next()
	h.next()
	if !h.e.State()["web"] {
		t.Fatal("turned unhealthy counting failures from before the Spec changed")
	}
	h.next()
	if h.e.State()["web"] {
		t.Fatal("still healthy after fall failures under the new Spec")
	}
	expect(t, h.changes, "web down")

	spec.Path = "/other"
	set(spec)
	if h.e.State()["web"] {
		t.Fatal("a Spec change reset the verdict")
	}
}

func TestEngineDegraded(t *testing.T) {
	servers := map[string]*switchable{"a": newSwitchable(t), "b": newSwitchable(t), "c": newSwitchable(t)}
	h := newHarness(t, Options{})
	var ts []Target
	for _, cluster := range []string{"a", "b", "c"} {
		srv := servers[cluster]
		for i := range 3 {
			ts = append(ts, Target{Key: cluster + string(rune('0'+i)), Cluster: cluster,
				Addrs: []netip.AddrPort{srv.addr}, Spec: httpSpecEvery(10 * time.Second)})
		}
	}
	// Most, not all, of a cluster's targets: one of a's three stays up.
	ts[0].Addrs = []netip.AddrPort{servers["c"].addr}
	if err := h.e.Set(ts); err != nil {
		t.Fatal(err)
	}
	round := func() { h.advance(11 * time.Second) } // every target once

	round()
	if h.e.Degraded() {
		t.Fatal("degraded with every endpoint up")
	}
	servers["a"].down()
	round()
	if h.e.Degraded() {
		t.Fatal("degraded with one cluster failing: that is an outage, not this checker")
	}
	servers["b"].down()
	round()
	if !h.e.Degraded() {
		t.Fatal("not degraded with most endpoints of two clusters failing at once")
	}
	expect(t, h.degr, true)
	servers["a"].up()
	round()
	if h.e.Degraded() {
		t.Fatal("still degraded once only one cluster fails")
	}
	expect(t, h.degr, false)

	// Removing c's targets leaves a and b: with b failing and a up, one
	// failing cluster is still not enough.
	if err := h.e.Set(ts[:6]); err != nil {
		t.Fatal(err)
	}
	if h.e.Degraded() {
		t.Fatal("degraded after removing targets")
	}
	expectNone(t, h.degr)
}

func TestEngineDegradedThreshold(t *testing.T) {
	down := newSwitchable(t)
	down.down()
	h := newHarness(t, Options{DegradedClusters: 3})
	var ts []Target
	for _, c := range []string{"a", "b"} {
		ts = append(ts, Target{Key: c, Cluster: c, Addrs: []netip.AddrPort{down.addr}, Spec: httpSpecEvery(10 * time.Second)})
	}
	if err := h.e.Set(ts); err != nil {
		t.Fatal(err)
	}
	h.advance(11 * time.Second)
	if h.e.Degraded() {
		t.Fatal("degraded with two failing clusters when three are needed")
	}
	ts = append(ts, Target{Key: "c", Cluster: "c", Addrs: []netip.AddrPort{down.addr}, Spec: httpSpecEvery(10 * time.Second)})
	if err := h.e.Set(ts); err != nil {
		t.Fatal(err)
	}
	h.advance(11 * time.Second)
	if !h.e.Degraded() {
		t.Fatal("not degraded with three failing clusters")
	}
}

func TestEngineAnyAddressPasses(t *testing.T) {
	up := addrOf(t, listen(t).Addr())
	refused := refusedAddr(t)
	h := newHarness(t, Options{})
	spec := Defaults()
	spec.Fall = 1
	if err := h.e.Set([]Target{
		{Key: "one-up", Cluster: "c", Addrs: []netip.AddrPort{refused, up}, Spec: spec},
		{Key: "none-up", Cluster: "c", Addrs: []netip.AddrPort{refused, refused}, Spec: spec},
	}); err != nil {
		t.Fatal(err)
	}
	h.advance(11 * time.Second)
	if s := h.e.State(); !s["one-up"] || s["none-up"] {
		t.Errorf("state %v: want one-up healthy (one address passes), none-up unhealthy", s)
	}
	if r, _ := h.e.Last("none-up"); r.Reason != "connection refused" {
		t.Errorf("reason %q", r.Reason)
	}
}

func TestEngineForgetsTargetRemovedMidProbe(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	defer close(release)
	h := newHarness(t, Options{})
	spec := httpSpecEvery(10 * time.Second)
	spec.Fall = 1
	target := Target{Key: "web", Cluster: "c", Addrs: []netip.AddrPort{serverAddr(t, srv)}, Spec: spec}
	if err := h.e.Set([]Target{target}); err != nil {
		t.Fatal(err)
	}
	h.step(10 * time.Second)
	<-entered // the round is in flight
	if err := h.e.Set(nil); err != nil {
		t.Fatal(err)
	}
	release <- struct{}{}
	h.collect(1)
	if s := h.e.State(); len(s) != 0 {
		t.Errorf("state %v after removing the only target", s)
	}
	expectNone(t, h.changes)

	// Added again, it is a new target: healthy, its old round long gone.
	if err := h.e.Set([]Target{target}); err != nil {
		t.Fatal(err)
	}
	if s := h.e.State(); !s["web"] {
		t.Errorf("state %v, want web healthy", s)
	}
}

func TestEngineSetRefusesBadTargetsAndKeepsTheRest(t *testing.T) {
	addr := addrOf(t, listen(t).Addr())
	h := newHarness(t, Options{})
	good := Target{Key: "good", Cluster: "c", Addrs: []netip.AddrPort{addr}, Spec: Defaults()}
	old := Target{Key: "old", Cluster: "c", Addrs: []netip.AddrPort{addr}, Spec: Defaults()}
	if err := h.e.Set([]Target{old}); err != nil {
		t.Fatal(err)
	}
	badSpec := old
	badSpec.Spec.Rise = 0
	noAddrs := Target{Key: "empty", Cluster: "c", Spec: Defaults()}
	noPort := Target{Key: "noport", Cluster: "c", Addrs: []netip.AddrPort{netip.AddrPortFrom(addr.Addr(), 0)}, Spec: Defaults()}
	err := h.e.Set([]Target{good, badSpec, noAddrs, noPort, {Spec: Defaults()}, good})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`target 1 "old": rise 0`, `target 2 "empty": no addresses`,
		`target 3 "noport": address 0 (127.0.0.1:0): not an address with a port`, `target 4 "": empty key`, `target 5 "good": key repeated`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	s := h.e.State()
	if len(s) != 2 || !s["good"] || !s["old"] {
		t.Errorf("state %v, want good added and old kept with its previous settings", s)
	}
}

func TestEngineMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	h := newHarness(t, Options{Registerer: reg})
	addr := addrOf(t, listen(t).Addr())
	spec := Defaults()
	spec.Fall = 1
	if err := h.e.Set([]Target{
		{Key: "up", Cluster: "a", Addrs: []netip.AddrPort{addr}, Spec: spec},
		{Key: "down", Cluster: "b", Addrs: []netip.AddrPort{refusedAddr(t)}, Spec: spec},
	}); err != nil {
		t.Fatal(err)
	}
	h.advance(11 * time.Second)
	want := map[string]float64{
		"kfed_healthcheck_degraded":                     0,
		`kfed_healthcheck_probes_total{result="fail"}`:  1,
		`kfed_healthcheck_probes_total{result="ok"}`:    1,
		"kfed_healthcheck_targets":                      2,
		"kfed_healthcheck_unhealthy_targets":            1,
		"kfed_healthcheck_probe_duration_seconds_count": 2,
		"kfed_healthcheck_rounds_skipped_total":         0,
	}
	got := gather(t, reg)
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}
	// A second engine in the same process shares the collectors.
	if _, err := NewEngine(Options{Registerer: reg}); err != nil {
		t.Errorf("second engine: %v", err)
	}
}

// TestEngineRealTime runs the engine on the real clock with short intervals
// against a real HTTP server whose answer flips between 503 and 200.
func TestEngineRealTime(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	addr := addrOf(t, srv.Listener.Addr())

	changes := make(chan bool, 10)
	e, err := NewEngine(Options{OnChange: func(key string, healthy bool) { changes <- healthy }, shortIntervals: true})
	if err != nil {
		t.Fatal(err)
	}
	spec := Defaults()
	spec.Kind, spec.Path, spec.StatusMin, spec.StatusMax = KindHTTP, "/", DefaultStatusMin, DefaultStatusMax
	spec.Interval, spec.Timeout, spec.Rise, spec.Fall = 100*time.Millisecond, 50*time.Millisecond, 2, 2
	if err := e.Set([]Target{{Key: "web", Cluster: "c", Addrs: []netip.AddrPort{addr}, Spec: spec}}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- e.Run(ctx) }()

	wait := func(want bool) {
		t.Helper()
		select {
		case got := <-changes:
			if got != want {
				t.Fatalf("healthy %v, want %v", got, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no change to healthy %v within 20s", want)
		}
	}
	status.Store(http.StatusServiceUnavailable)
	wait(false)
	if err := e.Run(ctx); err == nil { // the first one is surely running now
		t.Error("a second Run did not refuse")
	}
	status.Store(http.StatusOK)
	wait(true)

	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Run returned %v after cancel", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestEngineBoundsConcurrency(t *testing.T) {
	var inside, most atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inside.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(200 * time.Millisecond)
		inside.Add(-1)
	}))
	defer srv.Close()
	h := newHarness(t, Options{MaxConcurrent: 3})
	var ts []Target
	for i := range 12 {
		ts = append(ts, Target{Key: string(rune('a' + i)), Cluster: "c", Addrs: []netip.AddrPort{serverAddr(t, srv)}, Spec: httpSpecEvery(10 * time.Second)})
	}
	if err := h.e.Set(ts); err != nil {
		t.Fatal(err)
	}
	h.advance(10 * time.Second) // all due at once
	if m := most.Load(); m > 3 || m < 1 {
		t.Errorf("%d probes at once, want at most 3", m)
	}
}

// gather reads reg's metrics as "name{label="value"}" → value; a histogram
// gives its _count.
func gather(t testing.TB, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}
