package index

import (
	"net/netip"
	"time"

	"github.com/kfed-io/kfed/policy/proximity"
)

// Ranked is one cluster's addresses at a name as an answer to a client at a
// Vantage orders them, and why: what AppendFrom decides, spelled out, for
// kfed explain. Nothing per query builds one.
type Ranked struct {
	// Cluster is "" for addresses of no cluster.
	Cluster string
	Weight  int
	// Addresses are what the answer carries for the cluster: its cluster
	// IPs when ClusterIPs (the index's own cluster has them), else its
	// load balancer's.
	Addresses  []netip.Addr
	ClusterIPs bool
	// Local is the index's own cluster, answered before every other.
	Local bool
	// Spilled is the index's own cluster, drawn with its next tier for
	// being more loaded than the others (load.Spills).
	Spilled bool
	// Group numbers the groups in answer order, from 0: the clusters of
	// one group are equally near, and drawn in proportion to their weights
	// when Drawn; otherwise they keep this order.
	Group int
	Drawn bool
	// ByDistance says the name was ordered by the client's distance
	// (Distance, in km; +Inf for a cluster of no known place); otherwise by
	// Tier (proximity.TierSelf … TierOther) and RTT from the index's own
	// cluster when RTTMeasured, or by weight alone for an index of no
	// cluster.
	ByDistance  bool
	Distance    float64
	Tier        int
	RTT         time.Duration
	RTTMeasured bool
}

// Rank returns the clusters of r's addresses of type qtype (A or AAAA), r
// a name's records in x, in the order AppendFrom answers a client at v,
// with the groups whose order it draws by weight: the same decoding, keys
// and grouping (proximity.Sort, proximity.GroupEnd), without the draw. It
// is nil when the name has no such addresses.
func (x *Index) Rank(r *Records, qtype uint16, v Vantage) []Ranked {
	set, size := r.set(qtype)
	if set == "" {
		return nil
	}
	if v.located && !r.byDistance() {
		v.located = false // as AppendFrom: a Service routed by weight
	}
	s := set.decode(nil, size)
	var out []Ranked
	for _, g := range s.groups[:s.local] {
		rk := x.ranked(v, g, size)
		rk.Local, rk.Tier = true, proximity.TierSelf
		if g.clusterIPs != "" {
			rk.Addresses, rk.ClusterIPs = unpack(g.clusterIPs, size), true
		}
		out = append(out, rk)
	}
	group := min(s.local, 1)
	rest := s.groups[s.local:]
	if len(rest) == 1 {
		rk := x.ranked(v, rest[0], size)
		rk.Group = group
		return append(out, rk)
	}
	ranks := make([]proximity.Rank, len(rest))
	for i, g := range rest {
		ranks[i] = proximity.Rank{Key: v.key(g.cluster), Weight: int32(g.weight), ID: int16(i)}
	}
	if s.spilled && !v.located {
		spill(ranks)
	}
	proximity.Sort(ranks)
	for start := 0; start < len(ranks); group++ {
		end := proximity.GroupEnd(ranks, start, v.slack())
		for _, rank := range ranks[start:end] {
			rk := x.ranked(v, rest[rank.ID], size)
			rk.Group, rk.Drawn = group, rank.Drawn() && end-start > 1
			rk.Spilled = s.spilled && rk.Tier == proximity.TierSelf
			out = append(out, rk)
		}
		start = end
	}
	return out
}

// ranked is g as Rank starts it: its cluster, weight, load-balancer
// addresses and where it is from v.
func (x *Index) ranked(v Vantage, g groupView, size int) Ranked {
	rk := Ranked{Cluster: x.clusterIDs.name(g.cluster), Weight: g.weight, Addresses: unpack(g.lb, size),
		ByDistance: v.located, Tier: proximity.TierOther}
	t := v.places
	switch {
	case v.located:
		rk.Distance = v.key(g.cluster)
	case t != nil && g.cluster < len(t.inside):
		rk.Tier = proximity.TierOf(t.inside[g.cluster])
		if g.cluster != 0 {
			rk.RTT, rk.RTTMeasured = t.rtts[g.cluster].d, t.rtts[g.cluster].measured
		}
	}
	return rk
}
