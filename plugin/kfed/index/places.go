package index

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/internal/geo"
	"github.com/kfed-io/kfed/internal/geo/regions"
	"github.com/kfed-io/kfed/policy/proximity"
)

// The index learns where each cluster is from the cluster tables of the
// DNSEndpoints it parses (the last table to list a cluster says), and keeps
// it once per cluster, not per name: a name's packed records name their
// clusters by number only, so proximity costs no memory per name. What a
// query reads is a snapshot, replaced whole when a cluster's place changes
// (rarely: a cluster moves when its Cluster does), so that ordering takes no
// lock.

// clusterIDs numbers the cluster names an index has seen, so that packed
// records carry a number of a byte or two where the name would take ten or
// more at every name. Numbers are never reused; names are few.
type clusterIDs struct {
	mu    sync.RWMutex
	ids   map[string]int
	names []string // by number; 0 is "", an endpoint of no cluster
	// own is the index's own cluster, whose tiers places are seen from.
	own string
	// places are where the clusters are, by number; table is their
	// snapshot for queries.
	places []place
	// rtts are the round-trip times from own to each cluster, by number,
	// as its checkers measured them (SetRTTs); nil when none is known.
	rtts  []rtt
	table atomic.Pointer[placeTable]
}

// id returns name's number, giving it one if it has none.
func (c *clusterIDs) id(name string) int {
	if name == "" {
		return 0
	}
	c.mu.RLock()
	id, ok := c.ids[name]
	c.mu.RUnlock()
	if ok {
		return id
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := c.ids[name]; ok {
		return id
	}
	if c.ids == nil {
		c.ids, c.names = map[string]int{}, []string{""}
	}
	name = strings.Clone(name) // not a slice of a DNSEndpoint's strings
	c.ids[name] = len(c.names)
	c.names = append(c.names, name)
	return c.ids[name]
}

// name returns the name numbered id.
func (c *clusterIDs) name(id int) string {
	if id == 0 {
		return ""
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.names[id]
}

// place is where one cluster is, as a cluster table said.
type place struct {
	region  string
	zones   []string
	point   geo.Point
	located bool
}

func (p place) equal(q place) bool {
	return p.region == q.region && slices.Equal(p.zones, q.zones) && p.point == q.point && p.located == q.located
}

// placeTable is a snapshot of every known cluster's place, by cluster
// number, in the forms ordering reads: its key as seen from inside the
// index's own cluster (tier, then round-trip time: proximity.InsideKey) and
// its unit vector. Immutable once published.
type placeTable struct {
	inside  []float64
	vec     []geo.Vec
	located []bool
	rtts    []rtt // as measured, for explaining an order (Index.Rank)
}

// rtt is a measured round-trip time; the zero value is none.
type rtt struct {
	d        time.Duration
	measured bool
}

// learnPlaces records where the clusters of a table are. A row without a
// location (a table an older controller wrote, before it rewrites it) is
// placed by its region, as the controller would place it.
func (c *clusterIDs) learnPlaces(clusters dnsendpoint.Clusters) {
	for _, cl := range clusters {
		p := place{region: cl.Region, zones: cl.Zones}
		if cl.Location != nil {
			p.point, p.located = *cl.Location, true
		} else if at, ok := regions.Lookup(cl.Region); ok {
			p.point, p.located = at, true
		}
		if p.region == "" && !p.located {
			continue // says nothing of where it is (an older table)
		}
		c.setPlace(cl.Name, p)
	}
}

// setPlace records that cluster name is at p, publishing a new snapshot when
// that changes what the index knew.
func (c *clusterIDs) setPlace(name string, p place) {
	id := c.id(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if id < len(c.places) && c.places[id].equal(p) {
		return
	}
	if id >= len(c.places) {
		c.places = append(c.places, make([]place, id+1-len(c.places))...)
	}
	p.zones = slices.Clone(p.zones) // not a slice of a DNSEndpoint's strings
	p.region = strings.Clone(p.region)
	for i := range p.zones {
		p.zones[i] = strings.Clone(p.zones[i])
	}
	c.places[id] = p
	c.publish()
}

// publish makes a new snapshot of places. Called with mu held.
func (c *clusterIDs) publish() {
	n := max(len(c.places), len(c.rtts))
	t := &placeTable{inside: make([]float64, n), vec: make([]geo.Vec, n), located: make([]bool, n), rtts: make([]rtt, n)}
	own := c.ids[c.own] // 0 when the index stands for no cluster, or one not seen yet
	var self proximity.Place
	if own != 0 && own < len(c.places) {
		self = c.places[own].proximity()
	}
	for id := range n {
		var p place
		if id < len(c.places) {
			p = c.places[id]
		}
		var r rtt
		if id < len(c.rtts) {
			r = c.rtts[id]
		}
		tier := proximity.TierOther
		switch {
		case id == 0:
			// addresses of no cluster
		case id == own:
			tier = proximity.TierSelf
		case own != 0:
			tier = proximity.Tier(self, p.proximity())
		}
		t.inside[id] = proximity.InsideKey(tier, r.d, r.measured && id != 0)
		t.rtts[id] = r
		if p.located {
			t.vec[id], t.located[id] = geo.Vector(p.point), true
		}
	}
	c.table.Store(t)
}

// setRTTs makes rtts the round-trip times from own to the clusters they
// name (Index.SetRTTs), publishing a new snapshot only when that changes
// what was known.
func (c *clusterIDs) setRTTs(rtts map[string]time.Duration) {
	ids := make(map[int]time.Duration, len(rtts))
	n := 0
	for name, d := range rtts {
		id := c.id(name)
		ids[id] = d
		n = max(n, id+1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	want := make([]rtt, max(n, len(c.rtts)))
	for id, d := range ids {
		want[id] = rtt{d: d, measured: true}
	}
	if slices.Equal(want, c.rtts) {
		return
	}
	c.rtts = want
	c.publish()
}

func (p place) proximity() proximity.Place {
	return proximity.Place{Region: p.region, Zones: p.zones, Point: p.point, Located: p.located}
}

// CombineRTTs is each cluster's RTT from a cluster as the reports of its
// checkers measured it, for SetRTTs: with several checkers, the median of
// theirs (the lower middle of an even count). A degraded checker, which
// doubts its own network, is not counted. The plugin and kfed explain read
// a cluster's RTTs through it.
func CombineRTTs(reports []*kfedv1alpha1.HealthReport) map[string]time.Duration {
	by := map[string][]time.Duration{}
	for _, r := range reports {
		if r == nil || r.Degraded {
			continue
		}
		for _, c := range r.RTTs {
			if c.Cluster != "" && c.RTT.Duration >= 0 {
				by[c.Cluster] = append(by[c.Cluster], c.RTT.Duration)
			}
		}
	}
	out := make(map[string]time.Duration, len(by))
	for c, ds := range by {
		slices.Sort(ds)
		out[c] = ds[(len(ds)-1)/2]
	}
	return out
}
