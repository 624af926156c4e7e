package healthcheck

import (
	"fmt"
	"time"
)

// Ballot is one checker's latest view of one endpoint.
type Ballot struct {
	Checker   string        // the checker's identity
	Age       time.Duration // time since the checker's last heartbeat
	Degraded  bool          // the checker reported itself degraded (see Engine.Degraded)
	Unhealthy bool          // the checker's local verdict on the endpoint
}

// Tally is how a Verdict was reached, for conditions, events and logs.
type Tally struct {
	Configured int  // checkers counted as configured (see Verdict)
	Quorum     int  // voters needed to decide: ⌊Configured/2⌋+1
	Fresh      int  // distinct checkers whose heartbeat is younger than the freshness window
	Stale      int  // distinct checkers whose heartbeat is not
	Degraded   int  // fresh checkers that abstained because they are degraded
	Voters     int  // fresh checkers that are not degraded
	Unhealthy  int  // voters that see the endpoint down
	Decided    bool // false: too few voters, the previous verdict stands
}

// String says how the verdict came about, e.g. "2 of 3 fresh checkers see it
// down" or "1 of 3 checkers can vote, 2 needed: last verdict stands".
func (t Tally) String() string {
	var s string
	if t.Decided {
		s = fmt.Sprintf("%d of %d fresh checkers see it down", t.Unhealthy, t.Voters)
	} else {
		s = fmt.Sprintf("%d of %d checkers can vote, %d needed: last verdict stands", t.Voters, t.Configured, t.Quorum)
	}
	if t.Degraded > 0 {
		s += fmt.Sprintf(" (%d degraded abstaining)", t.Degraded)
	}
	return s
}

// Verdict decides whether an endpoint is healthy from the ballots of the
// checkers that probe it. It is a pure function: ages are inputs, no clock.
//
// The rule: a ballot is fresh when its Age is less than freshness; fresh
// ballots of degraded checkers abstain; the others are the voters. With fewer
// voters than a quorum, ⌊configured/2⌋+1, the previous verdict stands.
// Otherwise the endpoint is unhealthy when more than half of the voters say
// so, and healthy when not. A federation with one checker thus decides with
// it alone, and a checker cut off from the others can never remove an
// endpoint by itself.
//
// Odd input is settled, not refused, because the caller assembles ballots
// from objects it does not control:
//   - several ballots of one checker: the youngest counts (on equal ages, the
//     later one in the slice);
//   - more distinct checkers than configured (a checker not yet counted, or
//     configured < 1): configured is taken as the number of distinct
//     checkers, so a quorum is never smaller than the checkers that exist.
func Verdict(configured int, freshness time.Duration, ballots []Ballot, previousHealthy bool) (healthy bool, why Tally) {
	ballots = youngestPerChecker(ballots)
	why.Configured = max(configured, len(ballots))
	why.Quorum = why.Configured/2 + 1
	for _, b := range ballots {
		switch {
		case b.Age >= freshness:
			why.Stale++
		case b.Degraded:
			why.Fresh++
			why.Degraded++
		default:
			why.Fresh++
			why.Voters++
			if b.Unhealthy {
				why.Unhealthy++
			}
		}
	}
	if why.Voters < why.Quorum {
		return previousHealthy, why
	}
	why.Decided = true
	return 2*why.Unhealthy <= why.Voters, why
}

// youngestPerChecker keeps each checker's youngest ballot. It copies only
// when a checker repeats, which ballots assembled from one object per
// checker never do.
func youngestPerChecker(ballots []Ballot) []Ballot {
	// A quadratic scan beats a map for the handful of checkers a federation
	// has; past that, go straight to the map.
	dup := len(ballots) > 32
	for i := 0; i < len(ballots) && !dup; i++ {
		for j := range i {
			if ballots[i].Checker == ballots[j].Checker {
				dup = true
				break
			}
		}
	}
	if !dup {
		return ballots
	}
	out := make([]Ballot, 0, len(ballots))
	at := make(map[string]int, len(ballots))
	for _, b := range ballots {
		i, seen := at[b.Checker]
		switch {
		case !seen:
			at[b.Checker] = len(out)
			out = append(out, b)
		case b.Age <= out[i].Age:
			out[i] = b
		}
	}
	return out
}
