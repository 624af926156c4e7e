package healthcheck

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

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
