package healthcheck

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

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
