package healthcheck

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

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
