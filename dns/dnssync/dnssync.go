// Package dnssync publishes the federation's desired DNS state — the
// DNSEndpoint objects in the control plane — to a DNS provider: it converts
// them into provider-neutral record sets, plans them against a cached listing
// of each zone, applies the plans, and keeps the cache in step with what it
// applied, so that a sync in which nothing changed sends no request at all.
// The controller plans only the names of the DNSEndpoints that changed
// since its last pass while it can trust what it remembers of that pass, and
// every name otherwise.
//
// A name the provider refuses for bad input (dnsprovider.ErrRejected) costs
// only that name: the rest of the pass is applied and published, the
// DNSEndpoints asking for it carry the provider's words in their status, and
// it is not sent again until its DNSEndpoint or what it asks changes, or the
// zone is listed again. Any other error (an outage, a failed precondition)
// stops the provider's pass and drops the cached listing.
package dnssync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// Desired converts what rule admits of DNSEndpoints into record sets.
// Addresses become one record set per cluster (set identifier = cluster,
// its weight, its load-balancer hostname as alias hint), so that weighted
// providers weigh clusters; addresses no cluster claims, and every other
// type, one plain record set per endpoint. A cluster table that cannot be
// read wholly costs only what cannot be read: those addresses are published
// unweighted. The global name of a Service routed by proximity
// (dnsendpoint.ByDistance) gets each cluster's location as well, so that a
// provider with geo routing answers each client with its nearest cluster;
// its region, zone and per-cluster names stay weighted.
func Desired(rule tenancy.Endpoints, eps []extdnsv1alpha1.DNSEndpoint) []dnsprovider.RecordSet {
	return desiredOf(rule, sortedEndpoints(eps))
}

// desiredOf is Desired of eps in the order given.
func desiredOf(rule tenancy.Endpoints, eps []*extdnsv1alpha1.DNSEndpoint) []dnsprovider.RecordSet {
	// Sized once, for one set a target (an address's cluster set holds one
	// at least): growing it from nothing was as much garbage again, each pass.
	n := 0
	for _, ep := range eps {
		for j := range ep.Spec.Endpoints {
			n += max(1, len(ep.Spec.Endpoints[j].Targets))
		}
	}
	out := make([]dnsprovider.RecordSet, 0, n)
	for _, ep := range eps {
		out = appendDesired(out, rule, ep, nil)
	}
	return out
}

// sortedEndpoints returns pointers to eps in namespace/name order, so that
// a name two DNSEndpoints ask for gets the same first claimant (whose name
// its ownership mark carries, and to whom its conflict is reported) in
// every pass, full or not, whatever order the cache lists them in.
//
// The objects are as listed, every name they ask for included: what a pass
// remembers of them, and which names it plans, is decided on those, and the
// tenancy rule is applied only where record sets are made (appendDesired),
// so that a pass in which one object changed runs the rule on the few
// objects holding its names, not on all. Planning a name an object may not
// publish plans it as a full plan would: without that object's records.
func sortedEndpoints(eps []extdnsv1alpha1.DNSEndpoint) []*extdnsv1alpha1.DNSEndpoint {
	out := make([]*extdnsv1alpha1.DNSEndpoint, len(eps))
	for i := range eps {
		out[i] = &eps[i]
	}
	slices.SortFunc(out, func(a, b *extdnsv1alpha1.DNSEndpoint) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

// appendDesired appends the record sets of what rule admits of ep to out,
// those of the names keep holds only when keep is not nil.
func appendDesired(out []dnsprovider.RecordSet, rule tenancy.Endpoints, ep *extdnsv1alpha1.DNSEndpoint, keep map[string]bool) []dnsprovider.RecordSet {
	ep, _ = rule.Admit(ep)
	resource := ep.Namespace + "/" + ep.Name
	clusters, _ := dnsendpoint.ReadClusters(ep)
	near := ""
	if dnsendpoint.ByDistance(ep) {
		near, _ = dnsendpoint.GlobalName(ep, clusters)
	}
	for j := range ep.Spec.Endpoints {
		e := &ep.Spec.Endpoints[j]
		if keep != nil && !keep[dnsprovider.NormalizeName(e.DNSName)] {
			continue
		}
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
				if l := c.Location; l != nil && near != "" && dnsprovider.NormalizeName(e.DNSName) == near {
					rs.Location = &dnsprovider.Location{Latitude: l.Latitude, Longitude: l.Longitude}
				}
			}
			out = append(out, rs)
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
	// Clock tells the time; the real one when nil (tests move a fake).
	Clock clock.PassiveClock

	mu    sync.Mutex
	zones []dnsprovider.Zone
	cache map[string]*listing
	// refused holds, by name, the groups of changes the provider refused
	// for bad input: a later plan that asks the same of that name is not
	// sent again until the zone is listed again (every Relist, or after an
	// error) or Forget, so that a refused name costs no request a pass.
	refused map[string]*refusal
}

// refusal is a group of changes the provider refused, in a zone.
type refusal struct {
	zone      string
	changes   []dnsprovider.Change
	err       error
	resources []string
}

// Refusal is a name whose changes the provider refused for bad input
// (dnsprovider.ErrRejected), and the DNSEndpoints (namespace/name) asking
// for it. The provider has the rest of the pass.
type Refusal struct {
	Name      string
	Resources []string
	Err       error
}

// listing is a zone's records by name, so that a pass can plan a few names
// without reading the rest.
type listing struct {
	names    map[string][]dnsprovider.RecordSet
	size     int
	listedAt time.Time
}

func newListing(recs []dnsprovider.RecordSet, at time.Time) *listing {
	l := &listing{names: make(map[string][]dnsprovider.RecordSet, len(recs)), listedAt: at}
	for _, r := range recs {
		l.put(r)
	}
	return l
}

// put adds r, or replaces the record set with its key.
func (l *listing) put(r dnsprovider.RecordSet) {
	at := l.names[r.Name]
	if i := slices.IndexFunc(at, func(o dnsprovider.RecordSet) bool { return o.Key() == r.Key() }); i >= 0 {
		at[i] = r
		return
	}
	l.names[r.Name] = append(at, r)
	l.size++
}

// remove drops the record set with key k, if there is one.
func (l *listing) remove(k dnsprovider.Key) {
	at := l.names[k.Name]
	i := slices.IndexFunc(at, func(o dnsprovider.RecordSet) bool { return o.Key() == k })
	if i < 0 {
		return
	}
	if len(at) == 1 {
		delete(l.names, k.Name)
	} else {
		l.names[k.Name] = slices.Delete(at, i, i+1)
	}
	l.size--
}

func (l *listing) all() []dnsprovider.RecordSet {
	// Sized once: growing it was as much garbage again, a zone's worth.
	out := make([]dnsprovider.RecordSet, 0, l.size)
	for _, at := range l.names {
		out = append(out, at...)
	}
	return out
}

// Result is what one sync did.
type Result struct {
	// Plans holds one plan per zone, empty ones included.
	Plans []dnsprovider.Plan
	// Unplaced are desired record sets in none of the provider's zones.
	Unplaced []dnsprovider.RecordSet
	// Listed counts the zones listed (not served from the cache).
	Listed int
	// Refused are the names the provider refuses, sorted: those it refused
	// in this sync and those held back since (see Syncer), with every zone.
	Refused []Refusal
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
	if s.zones == nil {
		zones, err := s.Provider.Zones(ctx)
		if err != nil {
			return Result{}, fmt.Errorf("listing %s zones: %w", s.Provider.Name(), err)
		}
		s.zones = zones
	}
	byZone, res := s.split(desired)
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
		if dryRun {
			continue
		}
		if err := s.apply(ctx, z, p, nil, byZone[z.Name()]); err != nil {
			errs = append(errs, err)
		}
	}
	res.Refused = s.refusals()
	return res, errors.Join(errs...)
}

// errStale is SyncNames's answer when some zone's listing is not cached or
// is due to be listed again: the caller plans in full instead.
var errStale = errors.New("a zone's cached listing is missing or due to be listed again")

// SyncNames is Sync for a few names, from cached listings only: desired must
// hold every desired record set at those names, and none at others. Each zone is planned against what its cached listing
// holds that the planner reads for those names (the records at each name and
// the ownership mark guarding it), which plans each name exactly as a full
// plan would; names not given are neither read nor touched. It returns
// errStale, having sent nothing, when a listing is not cached and fresh.
func (s *Syncer) SyncNames(ctx context.Context, desired []dnsprovider.RecordSet, names map[string]bool) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.zones == nil {
		return Result{}, errStale
	}
	now := s.now()
	for _, z := range s.zones {
		if l, ok := s.cache[z.Name()]; !ok || now.Sub(l.listedAt) >= s.relist() {
			return Result{}, errStale
		}
	}
	byZone, res := s.split(desired)
	var errs []error
	for _, z := range s.zones {
		p := s.Planner.Plan(z.Name(), s.Provider.Adjust(byZone[z.Name()]), s.restrict(s.cache[z.Name()], names))
		if err := within(p, names); err != nil {
			errs = append(errs, err)
			continue
		}
		res.Plans = append(res.Plans, p)
		if err := s.apply(ctx, z, p, names, byZone[z.Name()]); err != nil {
			errs = append(errs, err)
		}
	}
	res.Refused = s.refusals()
	return res, errors.Join(errs...)
}

// restrict returns what l holds that the planner reads for names: each
// record at one of them, except ownership marks (TXT at the registry's
// prefix), which belong to the name they guard: a mark is returned when
// that name is one of names, wherever the mark's own name is.
func (s *Syncer) restrict(l *listing, names map[string]bool) []dnsprovider.RecordSet {
	reg := s.Planner.Registry
	var out []dnsprovider.RecordSet
	seen := make(map[string]bool, 2*len(names))
	visit := func(at string) {
		if seen[at] {
			return
		}
		seen[at] = true
		for _, r := range l.names[at] {
			about := r.Name
			if guarded, isMark := reg.GuardedName(r.Name); isMark && r.Type == dnsprovider.TypeTXT {
				about = guarded
			}
			if names[about] {
				out = append(out, r)
			}
		}
	}
	for n := range names {
		visit(n)
		visit(reg.MarkName(n))
	}
	return out
}

// within checks that plan p changes and reports only names: what a plan of
// a restricted listing must do. A plan that does not is not applied.
func within(p dnsprovider.Plan, names map[string]bool) error {
	for _, c := range p.Changes {
		if !names[c.Group] {
			return fmt.Errorf("zone %s: a plan of some names changes %s, which is not one of them", p.Zone, c.Group)
		}
	}
	for _, c := range p.Conflicts {
		if !names[c.Name] {
			return fmt.Errorf("zone %s: a plan of some names reports %s, which is not one of them", p.Zone, c.Name)
		}
	}
	return nil
}

// split divides desired by zone, into the zones' shares and the Result's
// Unplaced.
func (s *Syncer) split(desired []dnsprovider.RecordSet) (map[string][]dnsprovider.RecordSet, Result) {
	var res Result
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
	return byZone, res
}

// apply applies plan p to zone z and to its cached listing. planned are
// the names p was planned for (nil: every name of the zone), desired the
// zone's desired record sets, which say who asks for a name.
//
// A group of changes the provider refuses for bad input is remembered and
// not recorded as applied; the rest of p is applied and recorded, and apply
// succeeds. A later plan asking the same of that name holds it back
// unsent; a plan of that name that asks something else, or nothing, forgets
// the refusal. Any other error is an outage: nothing cached is trusted.
func (s *Syncer) apply(ctx context.Context, z dnsprovider.Zone, p dnsprovider.Plan, planned map[string]bool, desired []dnsprovider.RecordSet) error {
	groups := dnsprovider.GroupChanges(p.Changes)
	byGroup := make(map[string][]dnsprovider.Change, len(groups))
	for _, g := range groups {
		byGroup[g[0].Group] = g
	}
	send := p
	send.Changes = nil
	for name, r := range s.refused {
		if r.zone == z.Name() && (planned == nil || planned[name]) && !sameChanges(byGroup[name], r.changes) {
			delete(s.refused, name)
		}
	}
	for _, g := range groups {
		if s.refused[g[0].Group] == nil {
			send.Changes = append(send.Changes, g...)
		}
	}
	if send.Empty() {
		return nil
	}
	err := dnsprovider.Apply(ctx, z, send)
	refused := dnsprovider.Refused(err)
	if err != nil && refused == nil {
		// Some groups may have been applied: trust nothing cached.
		delete(s.cache, z.Name())
		return err
	}
	if refused != nil {
		if s.refused == nil {
			s.refused = map[string]*refusal{}
		}
		askedBy := map[string][]string{}
		for _, d := range desired {
			n := dnsprovider.NormalizeName(d.Name)
			if d.Resource != "" && !slices.Contains(askedBy[n], d.Resource) {
				askedBy[n] = append(askedBy[n], d.Resource)
			}
		}
		for _, r := range refused.Refusals {
			s.refused[r.Group] = &refusal{zone: z.Name(), changes: r.Changes, err: r.Err, resources: askedBy[r.Group]}
		}
		send.Changes = slices.DeleteFunc(send.Changes, func(c dnsprovider.Change) bool { return s.refused[c.Group] != nil })
	}
	s.record(z.Name(), send)
	return nil
}

// sameChanges reports whether a and b change the same record sets the same
// way.
func sameChanges(a, b []dnsprovider.Change) bool {
	return slices.EqualFunc(a, b, func(x, y dnsprovider.Change) bool {
		return x.Action == y.Action && x.Group == y.Group && x.Old.Equal(y.Old) && x.New.Equal(y.New)
	})
}

// refusals lists the refusals held, by name.
func (s *Syncer) refusals() []Refusal {
	out := make([]Refusal, 0, len(s.refused))
	for _, name := range slices.Sorted(maps.Keys(s.refused)) {
		r := s.refused[name]
		out = append(out, Refusal{Name: name, Resources: r.resources, Err: r.err})
	}
	return out
}

// Forget drops the refusals of names, so that the next plan of each sends
// its changes again (its DNSEndpoint changed).
func (s *Syncer) Forget(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		delete(s.refused, n)
	}
}

// current returns zone z's records, from the cache when it is fresh.
func (s *Syncer) current(ctx context.Context, z dnsprovider.Zone) ([]dnsprovider.RecordSet, bool, error) {
	now := s.now()
	if l, ok := s.cache[z.Name()]; ok && now.Sub(l.listedAt) < s.relist() {
		return l.all(), false, nil
	}
	recs, err := z.Records(ctx)
	if err != nil {
		delete(s.cache, z.Name())
		return nil, false, fmt.Errorf("listing zone %s: %w", z.Name(), err)
	}
	l := newListing(recs, now)
	// Listed again, the zone is trusted again, and so is every refused
	// name of it: each is sent once more.
	for name, r := range s.refused {
		if r.zone == z.Name() {
			delete(s.refused, name)
		}
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
			l.remove(c.Old.Key())
		}
		if c.Action != dnsprovider.Delete {
			l.put(c.New)
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
	if s.Clock != nil {
		return s.Clock.Now()
	}
	return time.Now()
}
