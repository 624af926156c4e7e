// Package dnssync publishes the federation's desired DNS state — the
// DNSEndpoint objects in the control plane — to a DNS provider: it converts
// them into provider-neutral record sets, plans them against a cached listing
// of each zone, applies the plans, and keeps the cache in step with what it
// applied, so that a sync in which nothing changed sends no request at all.
package dnssync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/dnsprovider"
)

// Desired converts DNSEndpoints into record sets. Addresses become one
// record set per cluster (set identifier = cluster, its weight, its
// load-balancer hostname as alias hint), so that weighted providers weigh
// clusters; addresses no cluster claims, and every other type, one plain
// record set per endpoint. A cluster table that cannot be read wholly costs
// only what cannot be read: those addresses are published unweighted.
func Desired(eps []extdnsv1alpha1.DNSEndpoint) []dnsprovider.RecordSet {
	// Sized once, for one set a target (an address's cluster set holds one
	// at least): growing it from nothing was as much garbage again, each pass.
	n := 0
	for i := range eps {
		for j := range eps[i].Spec.Endpoints {
			n += max(1, len(eps[i].Spec.Endpoints[j].Targets))
		}
	}
	out := make([]dnsprovider.RecordSet, 0, n)
	for i := range eps {
		ep := &eps[i]
		resource := ep.Namespace + "/" + ep.Name
		clusters, _ := dnsendpoint.ReadClusters(ep)
		for j := range ep.Spec.Endpoints {
			e := &ep.Spec.Endpoints[j]
			rs := dnsprovider.RecordSet{Name: e.DNSName, Type: e.RecordType, TTL: e.RecordTTL, Resource: resource}
			if e.RecordType != dnsprovider.TypeA && e.RecordType != dnsprovider.TypeAAAA {
				rs.Targets = slices.Clone(e.Targets)
				out = append(out, rs)
				continue
			}
			groups, _ := clusters.Groups(e)
			for _, g := range groups {
				rs := rs
				for _, a := range g.Addrs {
					rs.Targets = append(rs.Targets, a.String())
				}
				if c := g.Cluster; c != nil {
					rs.SetIdentifier, rs.Weight, rs.Hostname = c.Name, int64(c.Weight), c.Hostname
				}
				out = append(out, rs)
			}
		}
	}
	return out
}

// Syncer publishes desired record sets to one provider. It lists each zone
// once, then plans against its cached listing, updated with every change it
// applies; it lists a zone again after Relist or after any error in that zone.
type Syncer struct {
	Provider dnsprovider.Provider
	Planner  dnsprovider.Planner
	// Relist is how long a cached listing is trusted; an hour when zero. Other
	// writers to the zone are noticed then, or at once by a failed
	// precondition.
	Relist time.Duration
	// Now returns the time; time.Now when nil (tests move it).
	Now func() time.Time

	mu    sync.Mutex
	zones []dnsprovider.Zone
	cache map[string]*listing
}

type listing struct {
	records  map[dnsprovider.Key]dnsprovider.RecordSet
	listedAt time.Time
}

// Result is what one sync did.
type Result struct {
	// Plans holds one plan per zone, empty ones included.
	Plans []dnsprovider.Plan
	// Unplaced are desired record sets in none of the provider's zones.
	Unplaced []dnsprovider.RecordSet
	// Listed counts the zones listed (not served from the cache).
	Listed int
}

// Changes counts the changes of all plans.
func (r Result) Changes() int {
	n := 0
	for _, p := range r.Plans {
		n += len(p.Changes)
	}
	return n
}

// Conflicts lists the conflicts of all plans.
func (r Result) Conflicts() []dnsprovider.Conflict {
	var out []dnsprovider.Conflict
	for _, p := range r.Plans {
		out = append(out, p.Conflicts...)
	}
	return out
}

// Sync plans desired against every zone and, unless dryRun, applies the
// plans. An error in one zone does not stop the others; all errors are
// returned together.
func (s *Syncer) Sync(ctx context.Context, desired []dnsprovider.RecordSet, dryRun bool) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var res Result
	if s.zones == nil {
		zones, err := s.Provider.Zones(ctx)
		if err != nil {
			return res, fmt.Errorf("listing %s zones: %w", s.Provider.Name(), err)
		}
		s.zones = zones
	}
	names := make([]string, len(s.zones))
	for i, z := range s.zones {
		names[i] = z.Name()
	}
	// Each zone's share, counted first so that each slice is made once.
	zoneOf := make([]string, len(desired))
	placed := make([]bool, len(desired))
	count := map[string]int{}
	for i, rs := range desired {
		zoneOf[i], placed[i] = dnsprovider.ZoneFor(dnsprovider.NormalizeName(rs.Name), names)
		if placed[i] {
			count[zoneOf[i]]++
		}
	}
	byZone := make(map[string][]dnsprovider.RecordSet, len(count))
	for zone, n := range count {
		byZone[zone] = make([]dnsprovider.RecordSet, 0, n)
	}
	for i, rs := range desired {
		if !placed[i] {
			res.Unplaced = append(res.Unplaced, rs)
			continue
		}
		byZone[zoneOf[i]] = append(byZone[zoneOf[i]], rs)
	}

	var errs []error
	for _, z := range s.zones {
		current, listed, err := s.current(ctx, z)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if listed {
			res.Listed++
		}
		p := s.Planner.Plan(z.Name(), s.Provider.Adjust(byZone[z.Name()]), current)
		res.Plans = append(res.Plans, p)
		if dryRun || p.Empty() {
			continue
		}
		if err := dnsprovider.Apply(ctx, z, p); err != nil {
			// Some groups may have been applied: trust nothing cached.
			delete(s.cache, z.Name())
			errs = append(errs, err)
			continue
		}
		s.record(z.Name(), p)
	}
	return res, errors.Join(errs...)
}

// current returns zone z's records, from the cache when it is fresh.
func (s *Syncer) current(ctx context.Context, z dnsprovider.Zone) ([]dnsprovider.RecordSet, bool, error) {
	now := s.now()
	if l, ok := s.cache[z.Name()]; ok && now.Sub(l.listedAt) < s.relist() {
		// Sized once: growing it was as much garbage again, a zone's worth.
		recs := make([]dnsprovider.RecordSet, 0, len(l.records))
		return slices.AppendSeq(recs, maps.Values(l.records)), false, nil
	}
	recs, err := z.Records(ctx)
	if err != nil {
		delete(s.cache, z.Name())
		return nil, false, fmt.Errorf("listing zone %s: %w", z.Name(), err)
	}
	l := &listing{records: map[dnsprovider.Key]dnsprovider.RecordSet{}, listedAt: now}
	for _, r := range recs {
		l.records[r.Key()] = r
	}
	if s.cache == nil {
		s.cache = map[string]*listing{}
	}
	s.cache[z.Name()] = l
	return recs, true, nil
}

// record applies a successful plan to the cached listing.
func (s *Syncer) record(zone string, p dnsprovider.Plan) {
	l, ok := s.cache[zone]
	if !ok {
		return
	}
	for _, c := range p.Changes {
		if c.Action != dnsprovider.Create {
			delete(l.records, c.Old.Key())
		}
		if c.Action != dnsprovider.Delete {
			l.records[c.New.Key()] = c.New
		}
	}
}

// Fresh reports whether the next Sync would plan from cached listings
// only: every zone listed, and no listing older than Relist.
func (s *Syncer) Fresh() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.zones == nil {
		return false
	}
	now := s.now()
	for _, z := range s.zones {
		if l, ok := s.cache[z.Name()]; !ok || now.Sub(l.listedAt) >= s.relist() {
			return false
		}
	}
	return true
}

// Invalidate drops every cached listing, so the next sync lists each zone.
func (s *Syncer) Invalidate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache = nil
}

func (s *Syncer) relist() time.Duration {
	if s.Relist == 0 {
		return time.Hour
	}
	return s.Relist
}

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
