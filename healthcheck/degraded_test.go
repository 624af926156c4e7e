package healthcheck

import (
	"net/netip"
	"testing"
	"time"
)

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
