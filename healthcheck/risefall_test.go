package healthcheck

import (
	"net/netip"
	"testing"
	"time"
)

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

func TestJudge(t *testing.T) {
	tests := []struct {
		name        string
		healthy     bool
		rounds      string // p: passed, f: failed
		wantHealthy bool
		wantFlips   int
	}{
		{name: "fall failures in a row turn a healthy target unhealthy", healthy: true, rounds: "fff", wantHealthy: false, wantFlips: 1},
		{name: "fewer failures than fall keep it healthy", healthy: true, rounds: "ff", wantHealthy: true},
		{name: "a pass between failures starts the count again", healthy: true, rounds: "ffpff", wantHealthy: true},
		{name: "rise passes in a row turn an unhealthy target healthy", healthy: false, rounds: "pp", wantHealthy: true, wantFlips: 1},
		{name: "a failure between passes starts the count again", healthy: false, rounds: "pfp", wantHealthy: false},
		{name: "rounds that agree with the verdict change nothing", healthy: true, rounds: "pppp", wantHealthy: true},
		{name: "down and up again", healthy: true, rounds: "fffpp", wantHealthy: true, wantFlips: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := &target{Target: Target{Spec: Spec{Rise: 2, Fall: 3}}, healthy: tt.healthy}
			flips := 0
			for _, r := range tt.rounds {
				if tg.judge(r == 'p') {
					flips++
				}
			}
			if tg.healthy != tt.wantHealthy || flips != tt.wantFlips {
				t.Errorf("healthy %v after %d flips, want %v after %d", tg.healthy, flips, tt.wantHealthy, tt.wantFlips)
			}
		})
	}
}
