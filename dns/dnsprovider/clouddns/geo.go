package clouddns

import (
	"slices"
	"strings"

	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/internal/geo"
	"github.com/kfed-io/kfed/internal/geo/regions"
)

// regionTable is a list of regions a geo policy's items may name.
type regionTable []regions.Region

// gcpRegions are Google Cloud's regions from kfed's table.
func gcpRegions() regionTable {
	var out regionTable
	for _, r := range regions.All() {
		if r.Provider == "gcp" {
			out = append(out, r)
		}
	}
	return out
}

// nearest returns the Google Cloud region nearest to l (ties to the first
// name, so the choice is stable).
func (t regionTable) nearest(l dnsprovider.Location) regions.Region {
	at := geo.Point{Latitude: l.Latitude, Longitude: l.Longitude}
	best, bestKm := t[0], geo.Distance(at, t[0].Point)
	for _, r := range t[1:] {
		if km := geo.Distance(at, r.Point); km < bestKm || (km == bestKm && r.Name < best.Name) {
			best, bestKm = r, km
		}
	}
	return best
}

// location is where a listed item's region is, nil for a name
// kfed's table does not have.
func (t regionTable) location(name string) *dnsprovider.Location {
	i := slices.IndexFunc(t, func(r regions.Region) bool { return r.Name == name })
	if i < 0 {
		return nil
	}
	r := t[i]
	return &dnsprovider.Location{Latitude: r.Latitude, Longitude: r.Longitude}
}

// byRegion turns a proximity policy's record sets (one per cluster, each
// with its location) into what a Cloud DNS geo policy holds: one item per
// Google Cloud region, each cluster under the region nearest to it, the
// clusters that share a region sharing its item's records. The record set of
// a region has the region's name for set identifier and its place for
// location, as the listing reads an item back.
//
// near caches the nearest region of each location for one Adjust: a
// federation has few clusters and many names.
func (t regionTable) byRegion(members []dnsprovider.RecordSet, near map[dnsprovider.Location]regions.Region) []dnsprovider.RecordSet {
	items := map[string]*dnsprovider.RecordSet{}
	for _, m := range members {
		r, ok := near[*m.Location]
		if !ok {
			r = t.nearest(*m.Location)
			near[*m.Location] = r
		}
		it := items[r.Name]
		if it == nil {
			rs := m
			rs.SetIdentifier, rs.Weight, rs.Hostname, rs.Alias = r.Name, 0, "", nil
			rs.Location = &dnsprovider.Location{Latitude: r.Latitude, Longitude: r.Longitude}
			rs.Targets = nil
			it = &rs
			items[r.Name] = it
		}
		it.Targets = append(it.Targets, m.Targets...)
		it.TTL = min(it.TTL, m.TTL)
	}
	out := make([]dnsprovider.RecordSet, 0, len(items))
	for _, it := range items {
		out = append(out, dnsprovider.MustNormalize(*it))
	}
	slices.SortFunc(out, func(a, b dnsprovider.RecordSet) int { return strings.Compare(a.SetIdentifier, b.SetIdentifier) })
	return out
}
