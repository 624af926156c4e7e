package healthcheck

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

func TestRTTsSummarisePassingRoundsPerCluster(t *testing.T) {
	const ms = time.Millisecond
	e, err := NewEngine(Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1")}
	spec := Defaults()
	if err := e.Set([]Target{
		{Key: "shop/web/far", Cluster: "far", Addrs: addr, Spec: spec},
		{Key: "shop/api/far", Cluster: "far", Addrs: addr, Spec: spec},
		{Key: "shop/web/near", Cluster: "near", Addrs: addr, Spec: spec},
		{Key: "shop/web/new", Cluster: "new", Addrs: addr, Spec: spec},
	}); err != nil {
		t.Fatal(err)
	}
	rounds := func(key string, results ...Result) {
		for _, r := range results {
			tg := e.targets[key]
			e.record(round{t: tg, gen: tg.gen}, r)
		}
	}
	pass := func(d time.Duration) Result { return Result{OK: true, Latency: d} }
	fail := Result{Latency: 4 * time.Second, Reason: "timeout"}
	// A slow round and failed rounds do not move the median.
	rounds("shop/web/far", pass(80*ms), pass(81*ms), fail, pass(900*ms), pass(79*ms))
	// A slower Service of the same cluster: the faster one stands for it.
	rounds("shop/api/far", pass(120*ms), pass(125*ms), pass(130*ms))
	rounds("shop/web/near", pass(2*ms), pass(1*ms), pass(3*ms), pass(2*ms), pass(2*ms), pass(2*ms))
	// Two rounds are not a measure yet.
	rounds("shop/web/new", pass(5*ms), pass(5*ms))

	got := e.RTTs()
	want := map[string]time.Duration{"far": 81 * ms, "near": 2 * ms}
	if len(got) != len(want) || got["far"] != want["far"] || got["near"] != want["near"] {
		t.Errorf("RTTs = %v, want %v", got, want)
	}

	// Another check times another thing: its samples start again.
	spec.Kind, spec.Path, spec.StatusMin, spec.StatusMax = KindHTTP, "/", DefaultStatusMin, DefaultStatusMax
	if err := e.Set([]Target{{Key: "shop/web/near", Cluster: "near", Addrs: addr, Spec: spec}}); err != nil {
		t.Fatal(err)
	}
	if got := e.RTTs(); len(got) != 0 {
		t.Errorf("after the check changed and the other targets left, RTTs = %v, want none", got)
	}
}

// The engine measures what a real endpoint makes it wait.
func TestRTTsMeasureRealProbes(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(60 * time.Millisecond)
	}))
	defer slow.Close()
	quick := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer quick.Close()
	e, err := NewEngine(Options{shortIntervals: true})
	if err != nil {
		t.Fatal(err)
	}
	spec := Defaults()
	spec.Kind, spec.Path, spec.StatusMin, spec.StatusMax = KindHTTP, "/", DefaultStatusMin, DefaultStatusMax
	spec.Interval, spec.Timeout = 200*time.Millisecond, 180*time.Millisecond
	if err := e.Set([]Target{
		{Key: "shop/web/slow", Cluster: "slow", Addrs: []netip.AddrPort{addrOf(t, slow.Listener.Addr())}, Spec: spec},
		{Key: "shop/web/quick", Cluster: "quick", Addrs: []netip.AddrPort{addrOf(t, quick.Listener.Addr())}, Spec: spec},
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := e.RTTs()
		if len(got) == 2 {
			if got["slow"] < 60*time.Millisecond || got["quick"] >= 60*time.Millisecond {
				t.Errorf("RTTs = %v, want slow at 60 ms or more and quick under it", got)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("RTTs = %v after 20 s, want both clusters measured", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
