package publish

import (
	"slices"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/policy/load"
)

// Load: each endpoint's figure comes from the checkers that probe it, as
// its verdict does, and is bounded the same way: the median of its panel's
// fresh checkers that read one, so that no member's checker alone sets
// another member's share. Decide weighs the rows that may answer the
// shared names by it (policy/load), after the failover order has chosen
// its place: load reorders within what health, drain and failover allow.

// Load is the checkers' figure of the endpoint key: the median of the
// figures its panel's fresh, not degraded checkers publish, and how many
// did; false when none did.
func (h Health) Load(key string) (float64, int, bool) {
	if !h.Judged() {
		return 0, 0, false
	}
	var figures []float64
	for _, i := range h.fleet.Panel(key, nil) {
		c := h.checkers[i]
		u, ok := c.Loads[key]
		if ok && !c.Degraded && c.Age < h.freshness {
			figures = append(figures, u)
		}
	}
	if len(figures) == 0 {
		return 0, 0, false
	}
	slices.Sort(figures)
	n := len(figures)
	if n%2 == 1 {
		return figures[n/2], n, true
	}
	return (figures[n/2-1] + figures[n/2]) / 2, n, true
}

// Loads is what load made of an object's rows.
type Loads struct {
	// Weighed says load changed the weights.
	Weighed bool
	// AllOver says every cluster that may answer is at or over its target:
	// the weights are the capacities; WasAllOver says the same of the
	// records published last.
	AllOver, WasAllOver bool
	// Shed are the clusters at or over their target, out of the shared
	// names while others have headroom.
	Shed []string
}

// weighLoad gives each row its endpoint's figure (Health.Load) and weighs
// the rows by it (load.Weigh): a row's weight becomes its capacity times
// its headroom, and a row at or over its target is shed. Rows for which
// out is true (they answer no shared name: unhealthy, drained, passive)
// keep their capacity and count toward nothing. previous are the rows
// published last, for WasAllOver.
func weighLoad(h Health, namespace, name string, rows []dnsendpoint.Cluster, out func(dnsendpoint.Cluster) bool, previous map[string]dnsendpoint.Cluster) Loads {
	in := make([]load.Row, len(rows))
	for i := range rows {
		r := &rows[i]
		r.Load, r.Shed = nil, false
		if u, _, ok := h.Load(kfedv1alpha1.EndpointKey(namespace, name, r.Name)); ok {
			r.Load = &u
		}
		in[i] = loadRow(*r, out(*r))
	}
	res := load.Weigh(in)
	l := Loads{Weighed: res.Weighed, AllOver: res.AllOver}
	for i := range rows {
		rows[i].Weight = min(res.Weights[i], dnsendpoint.MaxWeight)
		if rows[i].Shed = res.Shed[i]; rows[i].Shed {
			l.Shed = append(l.Shed, rows[i].Name)
		}
	}
	var was []load.Row
	for _, p := range previous {
		was = append(was, loadRow(p, p.Unhealthy || p.Drained))
	}
	l.WasAllOver = load.Weigh(was).AllOver
	return l
}

func loadRow(r dnsendpoint.Cluster, out bool) load.Row {
	row := load.Row{Weight: r.Weight, Out: out}
	if r.Load != nil {
		row.Load, row.Known = *r.Load, true
	}
	return row
}
