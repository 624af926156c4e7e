package planner

import "slices"

// This file holds the apportionment engine: Balinski and Young's quota
// method, generalised to shares that have a floor and a cap.
//
// Picture a water level λ rising from 0. A share of weight w, floor f and cap
// c is entitled to the exact amount clamp(λ·w, f, c); the level that hands out
// t seats above the floors is the λ at which these amounts sum to t. That is
// water-filling: once a share reaches its cap, the level keeps rising for the
// others, so a capped share's excess goes to everyone else by weight.
//
// Seats are handed out one at a time. Seat t goes to the share that is below
// its exact amount at level λ(t) (so that it never exceeds it rounded up) and
// whose next replica is due earliest, the smallest (got+1)/w. This is the
// quota method: due-date order is D'Hondt's priority, and the "below its exact
// amount" test is the upper-quota check. The result is house monotone by
// construction (seat t+1 never takes seat t away), and no share falls a whole
// seat behind: serving seats earliest-due-date first meets every due date
// whenever that is possible, and it always is, because the exact amounts
// grow by no more than one seat per seat handed out.
//
// Handing out seats one by one from zero would cost one step per replica.
// The engine instead starts from the last level at or below the target where
// every exact amount is a whole number: there the method has no choice, so
// its state is known without replaying the seats before it. For the rising
// shares that is a multiple of 1/g, g the gcd of their weights, so at most
// Σw/g seats are replayed.

// share is one claimant of the engine: a cluster, or a class of clusters
// with identical weight, floor and cap that the planner serves together.
type share struct {
	weight uint64 // > 0
	floor  uint64
	cap    uint64 // meaningful when capped
	capped bool
	rank   int    // ties go to the lower rank
	got    uint64 // the result, floor ≤ got ≤ cap
}

func (s *share) start() frac { return frac{s.floor, s.weight} }
func (s *share) end() frac   { return frac{s.cap, s.weight} }

// phase is a stretch of the water level, from one breakpoint (a share
// leaving its floor or reaching its cap) to the next. Within it the number of
// seats handed out above the floors is t(λ) = λ·rising − risingFloors + full.
type phase struct {
	from         frac
	rising       uint64 // total weight of the shares between floor and cap
	risingFloors uint64 // their floors
	full         uint64 // cap − floor summed over the shares at their cap
}

// reaches reports whether t(l) ≥ seats.
func (p *phase) reaches(l frac, seats uint64) bool {
	lhs := mul(l.num, p.rising).add(mul(p.full, l.den))
	return lhs.cmp(mul(seats+p.risingFloors, l.den)) >= 0
}

// level returns λ(t) within the phase. p.rising must be positive.
func (p *phase) level(t uint64) frac {
	return frac{t + p.risingFloors - p.full, p.rising}
}

// fill hands out up to seats seats above the floors of s and returns how many
// it placed: all of them, unless every share reaches its cap first. It sets
// got on every share.
func fill(s []share, seats uint64) uint64 {
	var room uint64
	bounded := true
	for i := range s {
		s[i].got = s[i].floor
		if s[i].capped {
			room += s[i].cap - s[i].floor
		} else {
			bounded = false
		}
	}
	if seats == 0 || len(s) == 0 {
		return 0
	}
	if bounded && seats >= room {
		for i := range s {
			s[i].got = s[i].cap
		}
		return room
	}
	phases := timeline(s)
	j, t := anchor(s, phases, seats)
	replay(s, phases, j, t, seats)
	return seats
}

// timeline returns the phases of the water level in order. The first starts
// at λ = 0 with nothing rising.
func timeline(s []share) []phase {
	type event struct {
		at    frac
		share int
		rise  bool
	}
	events := make([]event, 0, 2*len(s))
	for i := range s {
		if s[i].capped && s[i].cap == s[i].floor {
			continue // never moves
		}
		events = append(events, event{s[i].start(), i, true})
		if s[i].capped {
			events = append(events, event{s[i].end(), i, false})
		}
	}
	slices.SortFunc(events, func(a, b event) int { return a.at.cmp(b.at) })

	phases := make([]phase, 1, len(events)+1)
	phases[0] = phase{from: frac{0, 1}}
	cur := phases[0]
	for k := 0; k < len(events); {
		at := events[k].at
		for ; k < len(events) && events[k].at.cmp(at) == 0; k++ {
			sh := &s[events[k].share]
			if events[k].rise {
				cur.rising += sh.weight
				cur.risingFloors += sh.floor
			} else {
				cur.rising -= sh.weight
				cur.risingFloors -= sh.floor
				cur.full += sh.cap - sh.floor
			}
		}
		cur.from = at
		phases = append(phases, cur)
	}
	return phases
}

// anchor finds the last level at or below the one that places seats where
// every exact amount is whole, sets each share's got to its amount there, and
// returns that level's phase and the seats it places.
func anchor(s []share, phases []phase, seats uint64) (int, uint64) {
	j := 0
	for j+1 < len(phases) && !phases[j].reaches(phases[j+1].from, seats) {
		j++
	}
	target := phases[j].from
	if phases[j].rising > 0 {
		target = phases[j].level(seats)
	}
	for {
		p := &phases[j]
		if p.rising == 0 {
			// Nothing rises: every share sits at its floor or cap.
			return j, settle(s, target, 0, 0)
		}
		g := risingGCD(s, p.from)
		k := target.floorTimes(g)
		if at := (frac{k, g}); at.cmp(p.from) >= 0 {
			return j, settle(s, at, k, g)
		}
		target = p.from
		j--
	}
}

// risingGCD returns the gcd of the weights of the shares rising just after l.
func risingGCD(s []share, l frac) uint64 {
	var g uint64
	for i := range s {
		sh := &s[i]
		if sh.start().cmp(l) <= 0 && (!sh.capped || sh.end().cmp(l) > 0) {
			if g = gcd(g, sh.weight); g == 1 {
				break
			}
		}
	}
	return g
}

// settle sets every share to its exact amount at level at = k/g, which the
// caller guarantees is whole, and returns the seats placed above the floors.
func settle(s []share, at frac, k, g uint64) uint64 {
	var t uint64
	for i := range s {
		sh := &s[i]
		switch {
		case at.cmp(sh.start()) <= 0:
			sh.got = sh.floor
		case sh.capped && at.cmp(sh.end()) >= 0:
			sh.got = sh.cap
		default:
			sh.got = k * (sh.weight / g)
		}
		t += sh.got - sh.floor
	}
	return t
}

// replay hands out seats t+1 … seats one at a time, starting in phase j.
func replay(s []share, phases []phase, j int, t, seats uint64) {
	// ready holds the shares below their exact amount, by due date of their
	// next seat; waiting holds the others, by the level at which they fall
	// behind.
	ready := indexHeap{less: func(a, b int32) bool {
		x, y := &s[a], &s[b]
		if c := mul(x.got+1, y.weight).cmp(mul(y.got+1, x.weight)); c != 0 {
			return c < 0
		}
		return x.rank < y.rank
	}}
	waiting := indexHeap{less: func(a, b int32) bool {
		x, y := &s[a], &s[b]
		if c := mul(x.got, y.weight).cmp(mul(y.got, x.weight)); c != 0 {
			return c < 0
		}
		return x.rank < y.rank
	}}
	for i := range s {
		if !s[i].capped || s[i].got < s[i].cap {
			waiting.push(int32(i))
		}
	}
	for t < seats {
		t++
		for j+1 < len(phases) && !phases[j].reaches(phases[j+1].from, t) {
			j++
		}
		p := &phases[j]
		if p.rising == 0 {
			return // every share is at its cap; fill checked room already
		}
		l := p.level(t)
		for waiting.len() > 0 {
			sh := &s[waiting.peek()]
			if mul(sh.got, l.den).cmp(mul(l.num, sh.weight)) >= 0 {
				break
			}
			ready.push(waiting.pop())
		}
		if ready.len() == 0 {
			return // cannot happen for a consistent timeline
		}
		i := ready.pop()
		s[i].got++
		if !s[i].capped || s[i].got < s[i].cap {
			waiting.push(i)
		}
	}
}

// indexHeap is a binary min-heap of share indices.
type indexHeap struct {
	items []int32
	less  func(a, b int32) bool
}

func (h *indexHeap) len() int     { return len(h.items) }
func (h *indexHeap) peek() int32  { return h.items[0] }
func (h *indexHeap) push(i int32) { h.items = append(h.items, i); h.up(len(h.items) - 1) }

func (h *indexHeap) pop() int32 {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	if last > 0 {
		h.down(0)
	}
	return top
}

func (h *indexHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(h.items[i], h.items[parent]) {
			return
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

func (h *indexHeap) down(i int) {
	n := len(h.items)
	for {
		small := i
		if l := 2*i + 1; l < n && h.less(h.items[l], h.items[small]) {
			small = l
		}
		if r := 2*i + 2; r < n && h.less(h.items[r], h.items[small]) {
			small = r
		}
		if small == i {
			return
		}
		h.items[i], h.items[small] = h.items[small], h.items[i]
		i = small
	}
}
