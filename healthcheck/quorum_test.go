package healthcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const freshness = 40 * time.Second

// Shorthands for named cases: a checker's ballot by what it says.
func up(c string) Ballot   { return Ballot{Checker: c, Age: time.Second} }
func down(c string) Ballot { return Ballot{Checker: c, Age: time.Second, Unhealthy: true} }
func stale(c string, unhealthy bool) Ballot {
	return Ballot{Checker: c, Age: freshness, Unhealthy: unhealthy}
}
func degraded(c string) Ballot {
	return Ballot{Checker: c, Age: time.Second, Degraded: true, Unhealthy: true}
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		name       string
		configured int
		ballots    []Ballot
		previous   bool
		healthy    bool
		decided    bool
	}{
		{name: "N=1 decides alone: one checker seeing it down removes it",
			configured: 1, ballots: []Ballot{down("a")}, previous: true, healthy: false, decided: true},
		{name: "N=1 decides alone: one checker seeing it up brings it back",
			configured: 1, ballots: []Ballot{up("a")}, previous: false, healthy: true, decided: true},
		{name: "a checker cut off from all endpoints cannot remove one on its own",
			configured: 3, ballots: []Ballot{down("a"), stale("b", false), stale("c", false)}, previous: true, healthy: true},
		{name: "a checker cut off from the others cannot remove one even while they are fresh but degraded",
			configured: 3, ballots: []Ballot{down("a"), degraded("b"), degraded("c")}, previous: true, healthy: true},
		{name: "a minority of stale checkers changes nothing",
			configured: 3, ballots: []Ballot{down("a"), down("b"), stale("c", false)}, previous: true, healthy: false, decided: true},
		{name: "a minority of stale checkers cannot keep an endpoint down",
			configured: 3, ballots: []Ballot{up("a"), up("b"), stale("c", true)}, previous: false, healthy: true, decided: true},
		{name: "most checkers stale: the last verdict stands, healthy",
			configured: 3, ballots: []Ballot{down("a"), stale("b", true), stale("c", true)}, previous: true, healthy: true},
		{name: "most checkers stale: the last verdict stands, unhealthy",
			configured: 3, ballots: []Ballot{up("a"), stale("b", false), stale("c", false)}, previous: false, healthy: false},
		{name: "a strict majority of voters removes an endpoint",
			configured: 5, ballots: []Ballot{down("a"), down("b"), down("c"), up("d"), up("e")}, previous: true, healthy: false, decided: true},
		{name: "a tie keeps the endpoint healthy",
			configured: 4, ballots: []Ballot{down("a"), down("b"), up("c"), up("d")}, previous: false, healthy: true, decided: true},
		{name: "a degraded checker abstains and the rest decide",
			configured: 3, ballots: []Ballot{degraded("a"), up("b"), up("c")}, previous: true, healthy: true, decided: true},
		{name: "degraded checkers do not count toward the quorum",
			configured: 5, ballots: []Ballot{degraded("a"), degraded("b"), degraded("c"), down("d"), down("e")}, previous: true, healthy: true},
		{name: "checkers that never reported count against the quorum",
			configured: 5, ballots: []Ballot{down("a"), down("b")}, previous: true, healthy: true},
		{name: "no ballots at all: the last verdict stands",
			configured: 3, previous: false, healthy: false},
		{name: "a checker's youngest ballot counts, not an older one",
			configured: 1, ballots: []Ballot{{Checker: "a", Age: 2 * time.Second, Unhealthy: true}, {Checker: "a", Age: time.Second}},
			previous: false, healthy: true, decided: true},
		{name: "a repeated checker is one checker, not a majority",
			configured: 3, ballots: []Ballot{down("a"), down("a"), down("a")}, previous: true, healthy: true},
		{name: "more checkers than configured raise the quorum",
			configured: 1, ballots: []Ballot{down("a"), stale("b", false), stale("c", false)}, previous: true, healthy: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			healthy, why := Verdict(tt.configured, freshness, tt.ballots, tt.previous)
			if healthy != tt.healthy || why.Decided != tt.decided {
				t.Errorf("healthy %v decided %v (%s), want healthy %v decided %v", healthy, why.Decided, why, tt.healthy, tt.decided)
			}
		})
	}
}

func TestTallyString(t *testing.T) {
	tests := []struct {
		name    string
		ballots []Ballot
		want    string
	}{
		{name: "a decided verdict says how many voters see it down",
			ballots: []Ballot{down("a"), down("b"), up("c")}, want: "2 of 3 fresh checkers see it down"},
		{name: "too few voters says the last verdict stands",
			ballots: []Ballot{down("a"), stale("b", true), stale("c", true)},
			want:    "1 of 3 checkers can vote, 2 needed: last verdict stands"},
		{name: "abstaining checkers are mentioned",
			ballots: []Ballot{degraded("a"), down("b"), up("c")}, want: "1 of 2 fresh checkers see it down (1 degraded abstaining)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, why := Verdict(3, freshness, tt.ballots, true)
			if got := why.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// checkerState is what one checker's report on an endpoint looks like to the
// controller.
type checkerState int

const (
	sawHealthy checkerState = iota
	sawUnhealthy
	isStale
	isDegraded
	numStates
)

// ruleAsWritten restates the quorum rule from the issue, independently of
// Verdict: count the fresh checkers that are not degraded; if they are fewer
// than a majority of the checkers, nothing changes; otherwise the endpoint is
// down when those who see it down outnumber those who see it up.
func ruleAsWritten(configured int, states []checkerState, previousHealthy bool) bool {
	checkers := configured
	if len(states) > checkers {
		checkers = len(states)
	}
	seeUp, seeDown := 0, 0
	for _, s := range states {
		if s == sawHealthy {
			seeUp++
		}
		if s == sawUnhealthy {
			seeDown++
		}
	}
	if (seeUp+seeDown)*2 <= checkers { // not a majority of the checkers
		return previousHealthy
	}
	return !(seeDown > seeUp)
}

// TestVerdictExhaustive checks every combination of up to 7 checkers, each
// healthy, unhealthy, stale or degraded, with every configured count from 0
// to 7 and both previous verdicts, against ruleAsWritten.
func TestVerdictExhaustive(t *testing.T) {
	const maxCheckers = 7
	cases := 0
	for n := 0; n <= maxCheckers; n++ {
		combos := 1
		for range n {
			combos *= int(numStates)
		}
		states := make([]checkerState, n)
		ballots := make([]Ballot, n)
		for c := range combos {
			code := c
			for i := range n {
				states[i] = checkerState(code % int(numStates))
				code /= int(numStates)
				b := Ballot{Checker: fmt.Sprintf("c%d", i), Age: freshness - time.Nanosecond}
				switch states[i] {
				case sawUnhealthy:
					b.Unhealthy = true
				case isStale:
					// What a stale checker last said must not matter, degraded or not.
					b.Age = freshness + time.Duration(i)*time.Second
					b.Unhealthy = i%2 == 0
					b.Degraded = i%3 == 2
				case isDegraded:
					b.Degraded = true
					b.Unhealthy = i%2 == 1
				}
				ballots[i] = b
			}
			for configured := 0; configured <= maxCheckers; configured++ {
				for _, previous := range []bool{true, false} {
					cases++
					want := ruleAsWritten(configured, states, previous)
					got, why := Verdict(configured, freshness, ballots, previous)
					if got != want {
						t.Fatalf("configured %d, checkers %s, previous healthy %v: got healthy %v (%s), want %v",
							configured, describe(states), previous, got, why, want)
					}
				}
			}
		}
	}
	t.Logf("%d combinations checked", cases)
}

func describe(states []checkerState) string {
	names := []string{"healthy", "unhealthy", "stale", "degraded"}
	var s []string
	for _, st := range states {
		s = append(s, names[st])
	}
	return "[" + strings.Join(s, " ") + "]"
}

func BenchmarkVerdict(b *testing.B) {
	for _, n := range []int{3, 7, 25} {
		ballots := make([]Ballot, n)
		for i := range ballots {
			ballots[i] = Ballot{Checker: fmt.Sprintf("cluster-%d/checker", i), Age: time.Duration(i) * time.Second, Unhealthy: i%3 == 0, Degraded: i == 1}
		}
		b.Run(fmt.Sprintf("checkers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Verdict(n, freshness, ballots, true)
			}
		})
	}
}
