package dnsprovider

import "slices"

// Proximity readies record sets for a provider with geo routing (Route53's
// geoproximity, Cloud DNS's geo policy), one rule for both, per name and
// type:
//   - record sets that all have a set identifier and a location are a
//     proximity policy. One of weight 0 leaves it while another has a
//     positive weight, as a weighted policy gives it no share either: a geo
//     policy would send it every client near it, and a cluster of weight 0
//     has no ready replica. The others lose their weights, which a geo
//     policy has no use for (Route53's bias scales an area, not a share of
//     clients; docs/design.md, "Publishing DNS"). All of weight 0 stay.
//   - where only some have a location (a cluster that is on no map), Route53
//     could not hold both kinds at one name and type, and none is placed:
//     the name and type stay weighted, every cluster in it.
//
// Record sets of other names and types are passed through in order. When
// none has a location, desired itself is returned (what every weighted
// federation's sync does, at no cost); otherwise the result is new.
func Proximity(desired []RecordSet) []RecordSet {
	if !slices.ContainsFunc(desired, func(r RecordSet) bool { return r.Location != nil }) {
		return desired
	}
	type nt struct{ name, typ string }
	type group struct{ placed, unplaced, positive int }
	groups := map[nt]*group{}
	for _, d := range desired {
		k := nt{d.Name, d.Type}
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
		}
		switch {
		case d.SetIdentifier != "" && d.Location != nil:
			g.placed++
			if d.Weight > 0 {
				g.positive++
			}
		default:
			g.unplaced++
		}
	}
	out := make([]RecordSet, 0, len(desired))
	for _, d := range desired {
		g := groups[nt{d.Name, d.Type}]
		switch {
		case g.placed == 0:
		case g.unplaced > 0:
			d.Location = nil
		case d.Weight == 0 && g.positive > 0:
			continue
		default:
			d.Weight = 0
		}
		out = append(out, d)
	}
	return out
}
