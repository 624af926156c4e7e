package healthcheck

import (
	"slices"
	"sync"

	"github.com/kfed-io/kfed/internal/stablehash"
)

// DefaultCheckersPerEndpoint is how many checkers probe each endpoint when
// the fleet has more: about as many as Route53 probes a health check from.
// It is odd, so that a majority is one more than a minority. A fleet of up
// to this many checkers has every checker probe every endpoint.
const DefaultCheckersPerEndpoint = 15

// Checker is one checker as the assignment sees it (ADR 0012). Everything
// in it comes from the checker's HealthReport, so the agents and the
// controller, reading the same reports, assign alike.
type Checker struct {
	// Name is the checker's identity, unique in the federation.
	Name string
	// Domain is its failure domain: the region of its cluster, else the
	// cluster (HealthReport.FailureDomain). An endpoint's checkers are
	// spread across domains before any domain gets a second.
	Domain string
	// PerEndpoint is how many checkers this checker assigns each endpoint
	// (its agent's --checkers-per-endpoint); 0 or less, every checker
	// probes every endpoint, as agents from before fleets do.
	PerEndpoint int
}

// Fleet assigns each endpoint its panel: the checkers that probe it and
// whose ballots its verdict counts. The panel is the first K checkers in
// the endpoint's order, where K is the smallest PerEndpoint any checker
// asks for (all checkers when none asks, or when there are no more than
// K), and the order is rendezvous (highest random weight) hashing of the
// endpoint key and each checker's name, taken a domain at a time: every
// domain's best-scoring checker first, best domain first, then every
// domain's second best, and so on.
//
// Hence:
//   - a panel is spread over as many domains as it can be: with at least
//     K domains no two of its checkers share one, with fewer the domains'
//     shares differ by at most one where their checkers allow;
//   - a checker joining or leaving changes an endpoint's panel only by
//     itself: it takes one place, or gives its place to one other checker,
//     and the rest stay; the panels it joins are its own load (about K/N
//     of the endpoints when domains are many);
//   - panels are nested in K: the panel a smaller K gives is the start of
//     a larger K's, so a checker whose view of the smallest K lags by an
//     event probes a superset or a subset of what the controller counts,
//     never a different set.
//
// A Fleet is immutable; its methods may be called concurrently.
type Fleet struct {
	k       int // panel size: min(len(names), smallest PerEndpoint > 0)
	names   []string
	index   func() map[string]int // first index of each name, built on first use
	hashes  []uint64              // of each checker's name
	domain  []int                 // each checker's domain, numbered from 0
	domains int
	// tiers is how many of each domain's best checkers a panel can reach:
	// the fewest ranks whose checkers fill K seats.
	tiers   int
	scratch sync.Pool // *panelScratch
}

// NewFleet is the assignment among checkers. Names should be unique; of a
// repeated name, Probes asks about the first.
func NewFleet(checkers []Checker) *Fleet {
	f := &Fleet{k: len(checkers), names: make([]string, len(checkers))}
	for i, c := range checkers {
		f.names[i] = c.Name
		if c.PerEndpoint > 0 && c.PerEndpoint < f.k {
			f.k = c.PerEndpoint
		}
	}
	if f.k == len(checkers) {
		return f // every checker probes every endpoint: no hashing needed
	}
	// Only an agent asks who probes (Probes): the controller, building a
	// Fleet per reconcile, never pays for the index.
	f.index = sync.OnceValue(func() map[string]int {
		index := make(map[string]int, len(f.names))
		for i, name := range f.names {
			if _, dup := index[name]; !dup {
				index[name] = i
			}
		}
		return index
	})
	f.hashes, f.domain = make([]uint64, len(checkers)), make([]int, len(checkers))
	numbers := map[string]int{}
	for i, c := range checkers {
		f.hashes[i] = hashString(c.Name)
		d, ok := numbers[c.Domain]
		if !ok {
			d = len(numbers)
			numbers[c.Domain] = d
		}
		f.domain[i] = d
	}
	f.domains = len(numbers)
	size := make([]int, f.domains)
	for _, d := range f.domain {
		size[d]++
	}
	for seats := 0; seats < f.k; {
		f.tiers++
		seats = 0
		for _, n := range size {
			seats += min(n, f.tiers)
		}
	}
	f.scratch.New = func() any {
		return &panelScratch{best: make([]scored, f.domains*f.tiers), count: make([]int, f.domains)}
	}
	return f
}

// K is how many checkers each endpoint's panel holds.
func (f *Fleet) K() int { return f.k }

// Len is how many checkers the fleet has.
func (f *Fleet) Len() int { return len(f.names) }

// All reports whether every checker probes every endpoint.
func (f *Fleet) All() bool { return f.k == len(f.names) }

// Probes reports whether the checker named probes the endpoint key; a name
// not in the fleet probes nothing.
func (f *Fleet) Probes(checker, key string) bool {
	if f.All() {
		return slices.Contains(f.names, checker)
	}
	i, ok := f.index()[checker]
	if !ok {
		return false
	}
	s := f.scratch.Get().(*panelScratch)
	defer f.scratch.Put(s)
	for _, j := range f.panel(key, s) {
		if j == i {
			return true
		}
	}
	return false
}

// Panel appends to dst the indexes (into the checkers NewFleet was given)
// of key's panel, in the endpoint's order, and returns the extended slice.
func (f *Fleet) Panel(key string, dst []int) []int {
	if f.All() {
		for i := range f.names {
			dst = append(dst, i)
		}
		return dst
	}
	s := f.scratch.Get().(*panelScratch)
	defer f.scratch.Put(s)
	return append(dst, f.panel(key, s)...)
}

// scored is one checker's score for one endpoint.
type scored struct {
	score uint64
	i     int
}

// panelScratch is one panel computation's working memory, reused.
type panelScratch struct {
	best  []scored // per domain, its best checkers (Fleet.tiers), best first: best[d*tiers : d*tiers+count[d]]
	count []int
	tier  []scored // the candidates of one tier
	out   []int
}

// panel is key's panel, in s.out (valid until s is reused). It keeps each
// domain's best-scoring checkers (as many as a panel can reach), then takes
// tiers: the best of every domain (by score) first, then the second best,
// until K are taken. Ranking by (rank in its domain, score) is what makes a
// join or a leave move at most one checker per endpoint (see Fleet).
func (f *Fleet) panel(key string, s *panelScratch) []int {
	h := hashString(key)
	clear(s.count)
	t := f.tiers
	for i, ch := range f.hashes {
		c := scored{score: stablehash.Mix(h ^ ch), i: i}
		d := f.domain[i]
		n := s.count[d]
		if n == t {
			if !f.better(c, s.best[d*t+t-1]) {
				continue // the common case, kept cheap: not among its domain's best
			}
		} else {
			n++
			s.count[d] = n
		}
		f.insert(s.best[d*t:d*t+n], c)
	}
	s.out = s.out[:0]
	for rank := 0; len(s.out) < f.k && rank < t; rank++ {
		need := f.k - len(s.out)
		s.tier = s.tier[:0]
		for d := range f.domains {
			if s.count[d] <= rank {
				continue
			}
			c := s.best[d*t+rank]
			// Keep the tier's best `need`, best first.
			if len(s.tier) == need {
				if !f.better(c, s.tier[need-1]) {
					continue
				}
				s.tier = s.tier[:need-1]
			}
			s.tier = append(s.tier, c)
			f.insert(s.tier, c)
		}
		for _, c := range s.tier {
			s.out = append(s.out, c.i)
		}
	}
	return s.out
}

// better orders two checkers' scores for one endpoint: the higher score,
// then (on the 2^-64 chance of a tie) the smaller name, so the order does
// not depend on the order checkers were given in.
func (f *Fleet) better(a, b scored) bool {
	return a.score > b.score || a.score == b.score && f.names[a.i] < f.names[b.i]
}

// insert puts c into row, whose last element is a free slot (or the one c
// replaces), keeping row sorted best first.
func (f *Fleet) insert(row []scored, c scored) {
	j := len(row) - 1
	for ; j > 0 && f.better(c, row[j-1]); j-- {
		row[j] = row[j-1]
	}
	row[j] = c
}

// hashString is stablehash.String of s, mixed. It is part of the
// assignment: agents and controllers of different versions must compute the
// same panels, so it may not change (TestPanelIsStable pins it).
func hashString(s string) uint64 { return stablehash.Mix(stablehash.String(s)) }
