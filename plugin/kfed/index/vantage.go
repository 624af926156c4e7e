package index

import (
	"math"
	"net/netip"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/internal/geo"
	"github.com/kfed-io/kfed/policy/proximity"
)

// Vantage is where a query comes from, for ordering a name's clusters:
// inside the index's own cluster (Index.Inside), where clusters are ordered
// by tier (own zone, own region, the rest), or at a client's location
// (Index.At), where they are ordered by distance. The zero Vantage orders
// every cluster by weight alone.
type Vantage struct {
	places  *placeTable
	at      geo.Vec
	located bool
	// seed is the client's own (For), 0 for none.
	seed uint64
}

// For is v for the clients of subnet (a resolver's EDNS Client Subnet):
// among equally near clusters of a name whose weights follow loads (whose
// answer is scoped to the subnet) they get a draw of their own
// (proximity.OrderFor), the same at every query and in every server while
// the weights hold, and different for each name, so that one subnet is not
// first at one cluster for every name. Bits past the prefix do not count.
// A /0 subnet, where the resolver asks for no tailoring (RFC 7871 7.1.2),
// or an invalid one leaves v as it is: the random draw any client without a
// subnet gets.
func (v Vantage) For(subnet netip.Prefix) Vantage {
	if !subnet.IsValid() || subnet.Bits() == 0 {
		return v
	}
	subnet = subnet.Masked()
	var key [18]byte
	a := subnet.Addr().As16()
	copy(key[:16], a[:])
	key[16] = byte(subnet.Bits())
	if subnet.Addr().Is4() {
		key[17] = 4
	}
	v.seed = proximity.Hash(string(key[:])) | 1 // 0 is none
	return v
}

// key is how far cluster id is from the vantage: a tier and round-trip
// time (proximity.InsideKey), or kilometres (+Inf for a cluster of no known
// place).
func (v Vantage) key(id int) float64 {
	t := v.places
	switch {
	case v.located && (t == nil || id >= len(t.located) || !t.located[id]):
		return math.Inf(1)
	case v.located:
		return v.at.Distance(t.vec[id])
	case t == nil || id >= len(t.inside):
		return unplacedInside
	}
	return t.inside[id]
}

// unplacedInside is the key of a cluster the index knows nothing of.
var unplacedInside = proximity.InsideKey(proximity.TierOther, 0, false)

// slack is how far apart keys may be and still be equally near.
func (v Vantage) slack() float64 {
	if v.located {
		return proximity.SameDistance
	}
	return proximity.SameRTT
}

// varies reports whether clients at different places may get groups in
// different orders: when they are ordered by distance, and one has a place
// and another has none, or two are farther apart than SameDistance (two
// clusters at about one place are equally near to every client).
func (v Vantage) varies(groups []groupView) bool {
	t := v.places
	if !v.located || t == nil {
		return false
	}
	located := func(id int) bool { return id < len(t.located) && t.located[id] }
	for i := range groups {
		a := groups[i].cluster
		for j := i + 1; j < len(groups); j++ {
			b := groups[j].cluster
			if located(a) != located(b) || (located(a) && !t.vec[a].Within(t.vec[b], proximity.SameDistance)) {
				return true
			}
		}
	}
	return false
}

// spill puts the own cluster of a spilled set (the one key of TierSelf)
// with the nearest of the other clusters, to be drawn with them by weight:
// a cluster too loaded to be answered first is answered as one of its next
// tier, whose weights already follow the loads.
func spill(ranks []proximity.Rank) {
	next := math.Inf(1)
	for _, r := range ranks {
		if proximity.TierOf(r.Key) != proximity.TierSelf {
			next = min(next, r.Key)
		}
	}
	if math.IsInf(next, 1) {
		return
	}
	for i := range ranks {
		if proximity.TierOf(ranks[i].Key) == proximity.TierSelf {
			ranks[i].Key = next
		}
	}
}

// orderFor orders ranks for v's client (proximity.OrderFor). A cluster is
// its load-balancer addresses to the draw: the same in every replica of
// this server, and across restarts. Its hashes are in a frame of its own,
// never inlined, beside proximity.Order's rather than under it: a query's
// stack is copied whole each time it grows (appendNearest).
//
//go:noinline
func orderFor(ranks []proximity.Rank, groups []groupView, v Vantage) {
	var hashes [8]uint64
	h := hashes[:0]
	if len(groups) > len(hashes) {
		h = make([]uint64, 0, len(groups))
	}
	for _, g := range groups {
		h = append(h, proximity.Hash(g.lb))
	}
	proximity.OrderFor(ranks, h, v.slack(), v.seed)
}

// AppendAddresses appends the address records of type qtype (dns.TypeA or
// dns.TypeAAAA) to dst in answer order for a client inside the index's own
// cluster, without what the index knows of where clusters are: the own
// cluster first (its cluster IPs where it has them, else its load-balancer
// addresses), then the other clusters in a weighted random order drawn with
// intn, those of weight 0 last. intn(n) returns a number in [0, n);
// rand.IntN fits.
func (r *Records) AppendAddresses(dst []dns.RR, qtype uint16, intn func(int) int) []dns.RR {
	dst, _ = r.AppendFrom(dst, qtype, Vantage{}, intn)
	return dst
}

// AppendFrom appends the address records of type qtype (dns.TypeA or
// dns.TypeAAAA) to dst in answer order for a client at v: the index's own
// cluster first (its cluster IPs where it has them, else its load-balancer
// addresses), then the other clusters nearest first (proximity.Order: by tier
// from inside a cluster, by distance from a client's location), drawn with
// intn in proportion to their weights among those equally near, those of
// weight 0 last. It reports whether the order depended on where v is, as
// opposed to being the same for every client; a draw among weights that
// follow loads is reported so too, to be drawn again for each client
// subnet. intn(n) returns a number in [0, n); rand.IntN fits. Among
// weights that follow loads, a vantage For a subnet draws with the
// subnet's seed instead of intn.
func (r *Records) AppendFrom(dst []dns.RR, qtype uint16, v Vantage, intn func(int) int) ([]dns.RR, bool) {
	set, size := r.set(qtype)
	if set == "" {
		return dst, false
	}
	if v.located && !r.byDistance() {
		v.located = false // a Service routed by weight: weights alone
	}
	var gbuf [8]groupView
	var obuf [8]string
	s := set.decode(gbuf[:0], size)
	order := obuf[:0]
	for _, g := range s.groups[:s.local] {
		if g.clusterIPs != "" {
			order = append(order, g.clusterIPs)
		} else {
			order = append(order, g.lb)
		}
	}
	rest := s.groups[s.local:]
	varies := false
	switch len(rest) {
	case 0:
	case 1:
		order = append(order, rest[0].lb)
	default:
		if v.seed != 0 && s.loaded {
			v.seed ^= proximity.Hash(r.name())
		} else {
			// An answer whose weights do not follow loads is drawn
			// afresh, as before: a resolver may give it to all its
			// clients (scope 0), and one subnet's draw would then hold
			// them at one cluster for as long as the weights hold
			// rather than a TTL.
			v.seed = 0
		}
		order, varies = appendNearest(order, rest, v, intn, s.spilled)
		// Weights that follow loads are drawn for each client subnet: a
		// resolver then caches a draw per subnet, and its clients spread
		// as the weights say rather than all following one draw a TTL.
		varies = varies || s.loaded
	}
	return appendPacked(dst, r.name(), qtype, s.ttl, size, order), varies
}

// appendNearest appends the load-balancer addresses of groups in the order
// a client at v gets them, and whether that order depends on where v is. It
// is a function of its own, never inlined, so that its buffers are off the
// stack by the time the records are made: a query runs on a goroutine of
// its own, whose stack starts small and is copied whole each time it grows
// (runtime.copystack was a quarter of a real server's CPU when these
// buffers sat in AppendFrom's frame).
//
//go:noinline
func appendNearest(order []string, groups []groupView, v Vantage, intn func(int) int, spilled bool) ([]string, bool) {
	var buf [8]proximity.Rank
	ranks := buf[:0]
	for i, g := range groups {
		ranks = append(ranks, proximity.Rank{Key: v.key(g.cluster), Weight: int32(g.weight), ID: int16(i)})
	}
	if spilled && !v.located {
		spill(ranks)
	}
	if v.seed != 0 {
		orderFor(ranks, groups, v)
	} else {
		proximity.Order(ranks, v.slack(), intn)
	}
	for _, r := range ranks {
		order = append(order, groups[r.ID].lb)
	}
	return order, v.varies(groups)
}
