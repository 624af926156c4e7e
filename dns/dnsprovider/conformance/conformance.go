// Package conformance is the one test suite every kfed DNS provider passes:
// create, update, delete, weights, a name changing between A records and a
// CNAME, an unowned record left alone, a plan larger than one request, a
// concurrent change detected, and a zone of 10,000 records. Each provider's
// tests call Run with a factory for a fresh, empty zone on a real server (or
// a faithful local endpoint of the provider's API).
//
// The suite speaks only dnsprovider's interface, so what it proves holds for
// any provider that passes it.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kfed-io/kfed/dns/dnsprovider"
)

// Target is one provider and one empty zone of it, for one test.
type Target struct {
	Provider dnsprovider.Provider
	Zone     dnsprovider.Zone
	// Weighted says the provider keeps record sets apart by set identifier
	// (Route53, Cloud DNS); otherwise it merges them (RFC 2136).
	Weighted bool
	// Geo says the provider publishes proximity policies (record sets with
	// a Location) with its geo routing (Route53, Cloud DNS); otherwise they
	// are published as weighted ones would be.
	Geo bool
	// ChangesPerRequest is how many single-record changes one request
	// carries at most, so the suite can plan more than that.
	ChangesPerRequest int
	// Resolve, if set, asks the server what a client sees for name and type
	// (targets in normal form), to check records beyond the provider's own
	// listing.
	Resolve func(t testing.TB, name, typ string) []string
}

// Factory returns a fresh Target; it registers its own cleanup with t.
type Factory func(t *testing.T) Target

// Owner is the owner ID the suite publishes as.
const Owner = "conformance"

// Run runs the suite.
func Run(t *testing.T, newTarget Factory) {
	tests := []struct {
		name string
		run  func(t *testing.T, s *suite)
	}{
		{"records are created with their ownership mark, then nothing is sent", testCreate},
		{"changed targets and TTL are updated", testUpdate},
		{"a name no longer desired is deleted with its mark", testDelete},
		{"weights are published per set identifier", testWeights},
		{"a name changes from A records to a CNAME and back", testCNAMEFallback},
		{"a name changes from weighted to proximity routing and back", testProximity},
		{"an unowned record at a desired name is never touched", testConflict},
		{"a plan larger than one request is split and fully applied", testOverBatchLimit},
		{"a change made after listing is detected, not overwritten", testConcurrentModification},
		{"a zone of 10,000 records is published and re-planned in bounded time", testLargeZone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := newTarget(t)
			reg, err := dnsprovider.NewRegistry(Owner, "")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			tt.run(t, &suite{Target: tg, ctx: ctx, pl: dnsprovider.Planner{Registry: reg}})
		})
	}
}

type suite struct {
	Target
	ctx context.Context
	pl  dnsprovider.Planner
}

func (s *suite) name(label string) string { return label + "." + s.Zone.Name() }

// sync lists, plans and applies, failing the test on error.
func (s *suite) sync(t *testing.T, desired []dnsprovider.RecordSet) dnsprovider.Plan {
	t.Helper()
	p, err := dnsprovider.Sync(s.ctx, s.Provider, s.Zone, s.pl, desired)
	if err != nil {
		t.Fatalf("sync: %v\nplan:\n%s", err, p)
	}
	return p
}

// list lists the zone, failing the test on error.
func (s *suite) list(t *testing.T) []dnsprovider.RecordSet {
	t.Helper()
	rs, err := s.Zone.Records(s.ctx)
	if err != nil {
		t.Fatalf("listing: %v", err)
	}
	return rs
}

// converged checks that the zone now holds desired: a fresh listing plans
// nothing.
func (s *suite) converged(t *testing.T, desired []dnsprovider.RecordSet) []dnsprovider.RecordSet {
	t.Helper()
	current := s.list(t)
	if p := s.pl.Plan(s.Zone.Name(), s.Provider.Adjust(desired), current); !p.Empty() || len(p.Conflicts) > 0 {
		t.Fatalf("zone does not match the desired state after sync; a new plan is:\n%s", p)
	}
	return current
}

// foreign applies changes as another tool would: without ownership marks.
func (s *suite) foreign(t *testing.T, changes ...dnsprovider.Change) {
	t.Helper()
	cs := s.Zone.NewChangeset()
	for _, c := range changes {
		c.Group = c.Record().Name
		cs.Add(c)
	}
	if err := cs.Apply(s.ctx); err != nil {
		t.Fatalf("applying a change as another tool: %v", err)
	}
}

func find(rs []dnsprovider.RecordSet, name, typ string) []dnsprovider.RecordSet {
	var out []dnsprovider.RecordSet
	for _, r := range rs {
		if r.Name == name && r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

func allTargets(rs []dnsprovider.RecordSet) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Targets...)
	}
	slices.Sort(out)
	return out
}

func rec(name, typ, set string, weight, ttl int64, targets ...string) dnsprovider.RecordSet {
	return dnsprovider.RecordSet{Name: name, Type: typ, SetIdentifier: set, Weight: weight, TTL: ttl, Targets: targets, Resource: "default/web"}
}

// webRecords are a federated Service's records in two clusters.
func (s *suite) webRecords() []dnsprovider.RecordSet {
	web := s.name("web")
	return []dnsprovider.RecordSet{
		rec(web, "A", "cluster-1", 1, 30, "10.0.1.1", "10.0.1.2"),
		rec(web, "A", "cluster-2", 1, 30, "10.0.2.1"),
		rec(web, "AAAA", "cluster-1", 1, 30, "2001:db8::1"),
		rec("_http._tcp."+web, "SRV", "", 0, 30, "0 1 80 cluster-1."+web, "0 1 80 cluster-2."+web),
	}
}

func testCreate(t *testing.T, s *suite) {
	desired := s.webRecords()
	p := s.sync(t, desired)
	if c, u, d := p.Count(); c == 0 || u != 0 || d != 0 {
		t.Fatalf("first sync: %d creates, %d updates, %d deletes; want only creates:\n%s", c, u, d, p)
	}
	current := s.converged(t, desired)
	web := s.name("web")
	if got := allTargets(find(current, web, "A")); !slices.Equal(got, []string{"10.0.1.1", "10.0.1.2", "10.0.2.1"}) {
		t.Errorf("A targets of %s = %v", web, got)
	}
	marks := find(current, s.pl.Registry.MarkName(web), "TXT")
	if len(marks) != 1 {
		t.Fatalf("want one ownership mark at %s, listing has %v", s.pl.Registry.MarkName(web), marks)
	}
	if m, ok := dnsprovider.ParseMark(marks[0]); !ok || m.Owner != Owner || m.Resource != "default/web" {
		t.Errorf("mark = %v (%+v, %v)", marks[0], m, ok)
	}
	if s.Resolve != nil {
		if got := s.Resolve(t, web, "A"); !slices.Equal(got, []string{"10.0.1.1", "10.0.1.2", "10.0.2.1"}) {
			t.Errorf("server answers %s A with %v", web, got)
		}
	}

	// Steady state: a plan against the listing is empty and applying it
	// sends nothing.
	before := s.Provider.Stats()
	p = s.pl.Plan(s.Zone.Name(), s.Provider.Adjust(desired), current)
	if err := dnsprovider.Apply(s.ctx, s.Zone, p); err != nil {
		t.Fatal(err)
	}
	if after := s.Provider.Stats(); after != before {
		t.Errorf("applying an empty plan changed the stats from %+v to %+v", before, after)
	}
}

func testUpdate(t *testing.T, s *suite) {
	desired := s.webRecords()
	s.sync(t, desired)
	desired[0].Targets = []string{"10.0.1.9"}
	desired[1].TTL = 60
	p := s.sync(t, desired)
	if c, u, d := p.Count(); c != 0 || u == 0 || d != 0 {
		t.Errorf("second sync: %d creates, %d updates, %d deletes; want only updates:\n%s", c, u, d, p)
	}
	current := s.converged(t, desired)
	if got := allTargets(find(current, s.name("web"), "A")); !slices.Equal(got, []string{"10.0.1.9", "10.0.2.1"}) {
		t.Errorf("A targets after update = %v", got)
	}
}

func testDelete(t *testing.T, s *suite) {
	web, api := s.name("web"), s.name("api")
	desired := append(s.webRecords(), rec(api, "A", "", 0, 30, "10.0.9.1"))
	s.sync(t, desired)
	s.sync(t, desired[len(desired)-1:])
	current := s.converged(t, desired[len(desired)-1:])
	for _, r := range current {
		if strings.HasSuffix(r.Name, web) {
			t.Errorf("record %v left behind after its name was deleted", r)
		}
	}
	if len(find(current, api, "A")) != 1 {
		t.Errorf("the record still desired was deleted")
	}
	// Deleting everything leaves the zone as it was before kfed came.
	s.sync(t, nil)
	for _, r := range s.list(t) {
		if strings.HasPrefix(r.Name, s.pl.Registry.Prefix) || strings.HasSuffix(r.Name, web) || r.Name == api {
			t.Errorf("record %v left behind after every name was deleted", r)
		}
	}
}

func testWeights(t *testing.T, s *suite) {
	web := s.name("web")
	desired := []dnsprovider.RecordSet{
		rec(web, "A", "cluster-1", 1, 30, "10.0.1.1"),
		rec(web, "A", "cluster-2", 3, 30, "10.0.2.1"),
	}
	s.sync(t, desired)
	current := s.converged(t, desired)
	got := find(current, web, "A")
	if s.Weighted {
		weights := map[string]int64{}
		for _, r := range got {
			weights[r.SetIdentifier] = r.Weight
		}
		if len(got) != 2 || weights["cluster-1"] != 1 || weights["cluster-2"] != 3 {
			t.Fatalf("weighted record sets = %v", got)
		}
	} else if len(got) != 1 || !slices.Equal(got[0].Targets, []string{"10.0.1.1", "10.0.2.1"}) {
		t.Fatalf("without weighted routing, want one record set with every cluster's targets, got %v", got)
	}

	// A weight change is one update where weights exist, and no change (not
	// a false diff) where they do not.
	desired[1].Weight = 5
	p := s.pl.Plan(s.Zone.Name(), s.Provider.Adjust(desired), current)
	c, u, d := p.Count()
	switch {
	case s.Weighted && (c != 0 || u != 1 || d != 0):
		t.Fatalf("weight change planned as %d/%d/%d, want one update:\n%s", c, u, d, p)
	case !s.Weighted && !p.Empty():
		t.Fatalf("weight change on a provider without weights planned changes:\n%s", p)
	}
	s.sync(t, desired)
	s.converged(t, desired)
}

// testProximity switches a name between weighted and proximity routing: each
// switch converges (a second plan is empty), the policy is what the provider
// lists back, an unhealthy cluster leaves, and an unowned name is never
// touched.
func testProximity(t *testing.T, s *suite) {
	web, other := s.name("web"), s.name("other")
	unrelated := dnsprovider.MustNormalize(rec(other, "A", "", 0, 300, "192.0.2.2"))
	s.foreign(t, dnsprovider.Change{Action: dnsprovider.Create, New: unrelated})
	// New York, Frankfurt and Tokyo, to more decimals than a provider keeps.
	places := []*dnsprovider.Location{{Latitude: 40.7128, Longitude: -74.006}, {Latitude: 50.1109, Longitude: 8.6821}, {Latitude: 35.6762, Longitude: 139.6503}}
	records := func(proximity bool, clusters ...int) []dnsprovider.RecordSet {
		var out []dnsprovider.RecordSet
		for _, i := range clusters {
			r := rec(web, "A", fmt.Sprintf("cluster-%d", i+1), int64(i+1), 30, fmt.Sprintf("10.0.%d.1", i+1))
			if proximity {
				r.Location = places[i]
			}
			out = append(out, r)
		}
		return out
	}
	steps := []struct {
		name      string
		proximity bool
		desired   []dnsprovider.RecordSet
		targets   []string
	}{
		{"weighted", false, records(false, 0, 1, 2), []string{"10.0.1.1", "10.0.2.1", "10.0.3.1"}},
		{"proximity", true, records(true, 0, 1, 2), []string{"10.0.1.1", "10.0.2.1", "10.0.3.1"}},
		{"proximity, Frankfurt unhealthy", true, records(true, 0, 2), []string{"10.0.1.1", "10.0.3.1"}},
		{"weighted again", false, records(false, 0, 1, 2), []string{"10.0.1.1", "10.0.2.1", "10.0.3.1"}},
	}
	for _, st := range steps {
		s.sync(t, st.desired)
		current := s.converged(t, st.desired)
		got := find(current, web, "A")
		if targets := allTargets(got); !slices.Equal(targets, st.targets) {
			t.Errorf("%s: %s has targets %v, want %v", st.name, web, targets, st.targets)
		}
		for _, r := range got {
			if placed := r.Location != nil; placed != (st.proximity && s.Geo) {
				t.Errorf("%s: listed %v", st.name, r)
			}
		}
		if theirs := find(current, other, "A"); len(theirs) != 1 || !theirs[0].Equal(unrelated) {
			t.Errorf("%s: the unowned name changed: %v", st.name, theirs)
		}
		if s.Resolve != nil {
			if answers := s.Resolve(t, web, "A"); !slices.Equal(answers, st.targets) {
				t.Errorf("%s: server answers %s A with %v", st.name, web, answers)
			}
		}
	}
}

func testCNAMEFallback(t *testing.T, s *suite) {
	region := s.name("web.eu")
	withA := []dnsprovider.RecordSet{
		rec(region, "A", "cluster-1", 1, 30, "10.0.1.1"),
		rec(region, "A", "cluster-2", 1, 30, "10.0.2.1"),
	}
	withCNAME := []dnsprovider.RecordSet{rec(region, "CNAME", "", 0, 30, s.name("web"))}
	for i, desired := range [][]dnsprovider.RecordSet{withA, withCNAME, withA} {
		s.sync(t, desired)
		current := s.converged(t, desired)
		a, cname := find(current, region, "A"), find(current, region, "CNAME")
		if (i%2 == 0) != (len(a) > 0 && len(cname) == 0) || (i%2 == 1) != (len(cname) == 1 && len(a) == 0) {
			t.Fatalf("step %d: %s has A %v and CNAME %v", i, region, a, cname)
		}
		if s.Resolve != nil && i == 1 {
			if got := s.Resolve(t, region, "CNAME"); !slices.Equal(got, []string{s.name("web")}) {
				t.Errorf("server answers %s CNAME with %v", region, got)
			}
		}
	}
}

func testConflict(t *testing.T, s *suite) {
	web, other := s.name("web"), s.name("other")
	theirs := dnsprovider.MustNormalize(rec(web, "A", "", 0, 300, "192.0.2.1"))
	theirs.Resource = ""
	unrelated := dnsprovider.MustNormalize(rec(other, "A", "", 0, 300, "192.0.2.2"))
	s.foreign(t, dnsprovider.Change{Action: dnsprovider.Create, New: theirs}, dnsprovider.Change{Action: dnsprovider.Create, New: unrelated})

	desired := []dnsprovider.RecordSet{rec(web, "A", "", 0, 30, "10.0.1.1"), rec(s.name("ok"), "A", "", 0, 30, "10.0.1.2")}
	p := s.sync(t, desired)
	if len(p.Conflicts) != 1 || p.Conflicts[0].Name != web {
		t.Fatalf("want one conflict at %s, plan:\n%s", web, p)
	}
	current := s.list(t)
	if got := find(current, web, "A"); len(got) != 1 || !got[0].Equal(theirs) {
		t.Errorf("unowned record at %s changed: %v, want %v", web, got, theirs)
	}
	if got := find(current, s.pl.Registry.MarkName(web), "TXT"); len(got) != 0 {
		t.Errorf("kfed marked a name it does not own: %v", got)
	}
	if len(find(current, s.name("ok"), "A")) != 1 {
		t.Errorf("a conflict at one name stopped another name from being published")
	}
	// Giving up every name still leaves unowned records alone.
	s.sync(t, nil)
	current = s.list(t)
	if len(find(current, web, "A")) != 1 || len(find(current, other, "A")) != 1 {
		t.Errorf("unowned records deleted when kfed withdrew: %v", current)
	}
}

func testOverBatchLimit(t *testing.T, s *suite) {
	// Each name is two changes (its record set and its mark).
	n := s.ChangesPerRequest/2 + 10
	var desired []dnsprovider.RecordSet
	for i := range n {
		desired = append(desired, rec(s.name(fmt.Sprintf("svc%d", i)), "A", "", 0, 30, fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)))
	}
	before := s.Provider.Stats()
	s.sync(t, desired)
	after := s.Provider.Stats()
	if got := after.Changes - before.Changes; got != int64(2*n) {
		t.Errorf("applied %d changes, want %d", got, 2*n)
	}
	// One listing, then at least two writes.
	if got := after.Requests - before.Requests; got < 3 {
		t.Errorf("%d changes (limit %d per request) sent in %d requests including the listing", 2*n, s.ChangesPerRequest, got)
	}
	t.Logf("%d changes applied with %d requests (listing included)", 2*n, after.Requests-before.Requests)
	s.converged(t, desired)
}

func testConcurrentModification(t *testing.T, s *suite) {
	web := s.name("web")
	desired := []dnsprovider.RecordSet{rec(web, "A", "", 0, 30, "10.0.1.1")}
	s.sync(t, desired)
	listed := s.list(t)

	// Someone changes the record after kfed listed the zone...
	old := find(listed, web, "A")[0]
	theirs := old
	theirs.Targets = []string{"192.0.2.7"}
	s.foreign(t, dnsprovider.Change{Action: dnsprovider.Update, Old: old, New: theirs})

	// ...so kfed's plan, made from the stale listing, must fail as a whole.
	desired[0].Targets = []string{"10.0.1.2"}
	p := s.pl.Plan(s.Zone.Name(), s.Provider.Adjust(desired), listed)
	err := dnsprovider.Apply(s.ctx, s.Zone, p)
	if !errors.Is(err, dnsprovider.ErrPrecondition) {
		t.Fatalf("applying a plan made before a concurrent change: err = %v, want ErrPrecondition", err)
	}
	if got := find(s.list(t), web, "A"); len(got) != 1 || !slices.Equal(got[0].Targets, []string{"192.0.2.7"}) {
		t.Fatalf("the concurrent change was overwritten: %v", got)
	}
	// A fresh listing lets kfed restore the name it owns.
	s.sync(t, desired)
	s.converged(t, desired)

	// A name created by someone else after the listing is not overwritten
	// by kfed's create either.
	api := s.name("api")
	listed = s.list(t)
	s.foreign(t, dnsprovider.Change{Action: dnsprovider.Create, New: dnsprovider.MustNormalize(rec(api, "A", "", 0, 30, "192.0.2.8"))})
	desired = append(desired, rec(api, "A", "", 0, 30, "10.0.3.1"))
	p = s.pl.Plan(s.Zone.Name(), s.Provider.Adjust(desired), listed)
	if err := dnsprovider.Apply(s.ctx, s.Zone, p); !errors.Is(err, dnsprovider.ErrPrecondition) {
		t.Fatalf("creating over a record made after listing: err = %v, want ErrPrecondition", err)
	}
}

func testLargeZone(t *testing.T, s *suite) {
	const names = 5000 // each with an A record set and a mark: 10,000 records
	var desired []dnsprovider.RecordSet
	for i := range names {
		desired = append(desired, rec(s.name(fmt.Sprintf("svc%d.ns", i)), "A", "", 0, 30, fmt.Sprintf("10.2.%d.%d", i/250, i%250+1)))
	}
	start := time.Now()
	before := s.Provider.Stats()
	s.sync(t, desired)
	publish, mid := time.Since(start), s.Provider.Stats()

	start = time.Now()
	current := s.converged(t, desired)
	replan, after := time.Since(start), s.Provider.Stats()
	if len(current) < 2*names {
		t.Fatalf("listing has %d record sets, want at least %d", len(current), 2*names)
	}
	t.Logf("10,000 records: published in %v with %d requests; listed and re-planned in %v with %d requests",
		publish.Round(time.Millisecond), mid.Requests-before.Requests, replan.Round(time.Millisecond), after.Requests-mid.Requests)
	if publish > 2*time.Minute || replan > 30*time.Second {
		t.Errorf("too slow: publish %v (limit 2m), list and re-plan %v (limit 30s)", publish, replan)
	}

	// One changed name among 10,000 is one small write.
	desired[1234].Targets = []string{"10.9.9.9"}
	p := s.pl.Plan(s.Zone.Name(), s.Provider.Adjust(desired), current)
	if c, u, d := p.Count(); c != 0 || u != 1 || d != 0 {
		t.Fatalf("one changed name planned as %d/%d/%d:\n%s", c, u, d, p)
	}
	before = s.Provider.Stats()
	if err := dnsprovider.Apply(s.ctx, s.Zone, p); err != nil {
		t.Fatal(err)
	}
	if got := s.Provider.Stats().Requests - before.Requests; got != 1 {
		t.Errorf("one changed name took %d requests, want 1", got)
	}
}
