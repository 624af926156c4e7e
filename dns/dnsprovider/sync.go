package dnsprovider

import (
	"context"
	"fmt"
)

// Sync lists zone z, plans the desired record sets (adjusted by the
// provider) against it, and applies the plan: the whole of a one-shot sync
// (`kfed dns sync --once`). The long-running controller keeps a cache of the
// listing instead of listing every time.
func Sync(ctx context.Context, prov Provider, z Zone, pl Planner, desired []RecordSet) (Plan, error) {
	current, err := z.Records(ctx)
	if err != nil {
		return Plan{}, fmt.Errorf("listing zone %s: %w", z.Name(), err)
	}
	p := pl.Plan(z.Name(), prov.Adjust(desired), current)
	return p, Apply(ctx, z, p)
}

// MergeSetIdentifiers is Adjust for providers without weighted or geo
// routing (RFC 2136): record sets that differ only by set identifier (and
// weight or location) become one, with
// the union of their targets and the lowest TTL. Invalid record sets are
// passed through for the planner to report.
func MergeSetIdentifiers(desired []RecordSet) []RecordSet {
	type nt struct{ name, typ string }
	index := map[nt]int{}
	var out []RecordSet
	for _, d := range desired {
		n, err := Normalize(d)
		if err != nil {
			out = append(out, d)
			continue
		}
		n.SetIdentifier, n.Weight, n.Alias, n.Location = "", 0, nil, nil
		k := nt{n.Name, n.Type}
		if i, ok := index[k]; ok {
			m := out[i]
			m.Targets = append(m.Targets, n.Targets...)
			m.TTL = min(m.TTL, n.TTL)
			out[i] = MustNormalize(m)
			continue
		}
		index[k] = len(out)
		out = append(out, n)
	}
	return out
}
