package planner

import (
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomShares draws a small apportionment problem. Weights come from a short
// list so that ties and whole-number levels, where bugs hide, are common.
func randomShares(r *rand.Rand) []share {
	weights := []uint64{1, 1, 2, 3, 5, 7, 12, 1000000}
	n := 1 + r.IntN(6)
	s := make([]share, n)
	for i := range s {
		s[i] = share{weight: weights[r.IntN(len(weights))], rank: i}
		if r.IntN(3) == 0 {
			s[i].floor = uint64(r.IntN(8))
		}
		if r.IntN(2) == 0 {
			s[i].capped = true
			s[i].cap = s[i].floor + uint64(r.IntN(15))
		}
	}
	return s
}

// exactAmounts returns clamp(λ·w, floor, cap) for the level λ that places
// seats seats, computed independently of the engine with rationals.
func exactAmounts(s []share, seats uint64) []*big.Rat {
	amount := func(l *big.Rat) ([]*big.Rat, *big.Rat) {
		out := make([]*big.Rat, len(s))
		sum := new(big.Rat)
		for i, sh := range s {
			a := new(big.Rat).Mul(l, new(big.Rat).SetUint64(sh.weight))
			if lo := new(big.Rat).SetUint64(sh.floor); a.Cmp(lo) < 0 {
				a = lo
			}
			if hi := new(big.Rat).SetUint64(sh.cap); sh.capped && a.Cmp(hi) > 0 {
				a = hi
			}
			out[i] = a
			sum.Add(sum, a).Sub(sum, new(big.Rat).SetUint64(sh.floor))
		}
		return out, sum
	}
	// Bisect on λ over the breakpoints, then solve the linear piece.
	want := new(big.Rat).SetUint64(seats)
	var points []*big.Rat
	points = append(points, new(big.Rat))
	for _, sh := range s {
		points = append(points, big.NewRat(int64(sh.floor), int64(sh.weight)))
		if sh.capped {
			points = append(points, big.NewRat(int64(sh.cap), int64(sh.weight)))
		}
	}
	slices.SortFunc(points, func(a, b *big.Rat) int { return a.Cmp(b) })
	lo := points[0]
	for _, p := range points[1:] {
		if _, sum := amount(p); sum.Cmp(want) >= 0 {
			break
		}
		lo = p
	}
	// On [lo, next] the sum is lo-sum + (λ−lo)·rising.
	_, base := amount(lo)
	var rising int64
	for _, sh := range s {
		start := big.NewRat(int64(sh.floor), int64(sh.weight))
		if start.Cmp(lo) <= 0 && (!sh.capped || big.NewRat(int64(sh.cap), int64(sh.weight)).Cmp(lo) > 0) {
			rising += int64(sh.weight)
		}
	}
	if rising == 0 {
		out, _ := amount(lo)
		return out
	}
	l := new(big.Rat).Sub(want, base)
	l.Quo(l, big.NewRat(rising, 1)).Add(l, lo)
	out, _ := amount(l)
	return out
}

func TestFillAgreesWithSeatBySeatQuotaMethod(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		s := randomShares(r)
		var prev []uint64
		for seats := uint64(0); seats <= 60; seats++ {
			got := fillCopy(s, seats)
			// The same method from zero, without the shortcut of the anchor.
			slow := slices.Clone(s)
			if room, ok := roomOf(s); !ok || seats < room {
				fill(slow, 0) // sets every share to its floor
				replay(slow, timeline(slow), 0, 0, seats)
			} else {
				fill(slow, seats) // everything at its cap, nothing to replay
			}
			for i := range s {
				if got[i] != slow[i].got {
					t.Fatalf("shares %+v, %d seats: anchored fill gives %v, seat by seat gives %v", s, seats, got, gotOf(slow))
				}
			}
			for i := range prev {
				if got[i] < prev[i] {
					t.Fatalf("shares %+v: %d seats give %v, one fewer gave %v (not house monotone)", s, seats, got, prev)
				}
			}
			prev = got
			exact := exactAmounts(s, seats)
			for i, e := range exact {
				g := new(big.Rat).SetUint64(got[i])
				diff := new(big.Rat).Sub(g, e)
				if diff.Cmp(big.NewRat(1, 1)) >= 0 || diff.Cmp(big.NewRat(-1, 1)) <= 0 {
					t.Fatalf("shares %+v, %d seats: share %d got %d, exact amount %s (outside quota)", s, seats, i, got[i], e.FloatString(3))
				}
			}
		}
	}
}

func fillCopy(s []share, seats uint64) []uint64 {
	c := slices.Clone(s)
	fill(c, seats)
	return gotOf(c)
}

func gotOf(s []share) []uint64 {
	out := make([]uint64, len(s))
	for i := range s {
		out[i] = s[i].got
	}
	return out
}

func roomOf(s []share) (uint64, bool) {
	var room uint64
	for _, sh := range s {
		if !sh.capped {
			return 0, false
		}
		room += sh.cap - sh.floor
	}
	return room, true
}

// TestQuotaMethodNeedsHistory keeps a case where the quota method's result
// cannot be had from the level alone: the obvious closed rule (lower quotas,
// then one more seat for the shares whose next seat is due first) gives a
// different layout and takes a seat away as the total grows. It is why fill
// replays seats from a whole-number level (see "Cost" in doc.go).
func TestQuotaMethodNeedsHistory(t *testing.T) {
	weights := []uint64{19, 24, 24, 8, 2}
	shares := func() []share {
		s := make([]share, len(weights))
		for i, w := range weights {
			s[i] = share{weight: w, rank: i}
		}
		return s
	}
	for _, tc := range []struct {
		seats       uint64
		quota, rule []uint64
	}{
		{16, []uint64{4, 5, 5, 2, 0}, []uint64{4, 5, 5, 2, 0}},
		{17, []uint64{4, 6, 5, 2, 0}, []uint64{4, 6, 6, 1, 0}}, // the rule takes share 3's seat
	} {
		if got := fillCopy(shares(), tc.seats); !slices.Equal(got, tc.quota) {
			t.Errorf("%d seats: quota method gives %v, want %v", tc.seats, got, tc.quota)
		}
		if got := earliestDueRule(weights, tc.seats); !slices.Equal(got, tc.rule) {
			t.Errorf("%d seats: closed rule gives %v, want %v", tc.seats, got, tc.rule)
		}
	}
}

// earliestDueRule gives every share its lower quota, then one more seat each
// to the shares whose next seat is due first, ties to the lower index.
func earliestDueRule(weights []uint64, seats uint64) []uint64 {
	var total uint64
	for _, w := range weights {
		total += w
	}
	got := make([]uint64, len(weights))
	var placed uint64
	var behind []int
	for i, w := range weights {
		got[i] = seats * w / total
		placed += got[i]
		if seats*w%total != 0 {
			behind = append(behind, i)
		}
	}
	slices.SortStableFunc(behind, func(i, j int) int {
		return mul(got[i]+1, weights[j]).cmp(mul(got[j]+1, weights[i]))
	})
	for _, i := range behind[:seats-placed] {
		got[i]++
	}
	return got
}
