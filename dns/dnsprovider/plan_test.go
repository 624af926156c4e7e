package dnsprovider

import (
	"fmt"
	"strings"
	"testing"
)

func testPlanner(t testing.TB) Planner {
	reg, err := NewRegistry("fed-1", "")
	if err != nil {
		t.Fatal(err)
	}
	return Planner{Registry: reg}
}

func a(name, set string, weight int64, ips ...string) RecordSet {
	return MustNormalize(RecordSet{Name: name, Type: TypeA, SetIdentifier: set, Weight: weight, Targets: ips, Resource: "default/web"})
}

func cname(name, target string) RecordSet {
	return MustNormalize(RecordSet{Name: name, Type: TypeCNAME, Targets: []string{target}, Resource: "default/web"})
}

func mark(t testing.TB, name, owner string, types ...string) RecordSet {
	return testPlanner(t).Registry.Record(name, Mark{Owner: owner, Resource: "default/web", Types: types}, DefaultTTL)
}

// summary renders a plan's changes as "action key" lines for comparison.
func summary(p Plan) string {
	var lines []string
	for _, c := range p.Changes {
		lines = append(lines, c.Action.String()+" "+c.Record().Key().String())
	}
	for _, c := range p.Conflicts {
		lines = append(lines, "conflict "+c.Name)
	}
	return strings.Join(lines, "\n")
}

func TestPlan(t *testing.T) {
	const zone = "example.com"
	const web = "web.example.com"
	tests := []struct {
		name             string
		desired, current []RecordSet
		want             []string
	}{
		{
			name:    "new name is created with its ownership mark",
			desired: []RecordSet{a(web, "c1", 1, "10.0.0.1")},
			want:    []string{"create web.example.com/A/c1", "create kfed-owner.web.example.com/TXT"},
		},
		{
			name:    "records matching the desired state plan nothing",
			desired: []RecordSet{a(web, "c1", 1, "10.0.0.1"), a(web, "c2", 2, "10.0.0.2")},
			current: []RecordSet{a(web, "c2", 2, "10.0.0.2"), a(web, "c1", 1, "10.0.0.1"), mark(t, web, "fed-1", "A")},
		},
		{
			name:    "a changed weight is an update",
			desired: []RecordSet{a(web, "c1", 3, "10.0.0.1")},
			current: []RecordSet{a(web, "c1", 1, "10.0.0.1"), mark(t, web, "fed-1", "A")},
			want:    []string{"update web.example.com/A/c1"},
		},
		{
			name:    "a removed cluster's record set is deleted",
			desired: []RecordSet{a(web, "c1", 1, "10.0.0.1")},
			current: []RecordSet{a(web, "c1", 1, "10.0.0.1"), a(web, "c2", 1, "10.0.0.2"), mark(t, web, "fed-1", "A")},
			want:    []string{"delete web.example.com/A/c2"},
		},
		{
			name:    "a name no longer desired loses its records and its mark",
			current: []RecordSet{a(web, "c1", 1, "10.0.0.1"), mark(t, web, "fed-1", "A")},
			want:    []string{"delete web.example.com/A/c1", "delete kfed-owner.web.example.com/TXT"},
		},
		{
			name:    "A records replaced by a CNAME: deletes come first, mark follows the types",
			desired: []RecordSet{cname(web, "web.eu.example.com")},
			current: []RecordSet{a(web, "c1", 1, "10.0.0.1"), mark(t, web, "fed-1", "A")},
			want:    []string{"delete web.example.com/A/c1", "update kfed-owner.web.example.com/TXT", "create web.example.com/CNAME"},
		},
		{
			name:    "unowned records at a desired name are a conflict and untouched",
			desired: []RecordSet{a(web, "", 0, "10.0.0.1")},
			current: []RecordSet{a(web, "", 0, "192.0.2.1")},
			want:    []string{"conflict web.example.com"},
		},
		{
			name:    "a name marked by another federation is a conflict",
			desired: []RecordSet{a(web, "c1", 1, "10.0.0.1")},
			current: []RecordSet{mark(t, web, "fed-2", "A")},
			want:    []string{"conflict web.example.com"},
		},
		{
			name:    "another federation's names are not deleted",
			current: []RecordSet{a(web, "c1", 1, "10.0.0.1"), mark(t, web, "fed-2", "A")},
		},
		{
			name:    "unowned records at names kfed does not want are ignored",
			current: []RecordSet{a("other.example.com", "", 0, "192.0.2.1")},
		},
		{
			name:    "a foreign TXT beside desired A records is left alone",
			desired: []RecordSet{a(web, "", 0, "10.0.0.1")},
			current: []RecordSet{MustNormalize(RecordSet{Name: web, Type: TypeTXT, Targets: []string{"site-verification"}})},
			want:    []string{"create web.example.com/A", "create kfed-owner.web.example.com/TXT"},
		},
		{
			name:    "a CNAME cannot be published beside foreign records",
			desired: []RecordSet{cname(web, "x.example.com")},
			current: []RecordSet{MustNormalize(RecordSet{Name: web, Type: TypeTXT, Targets: []string{"site-verification"}})},
			want:    []string{"conflict web.example.com"},
		},
		{
			name:    "a record outside the zone is a conflict",
			desired: []RecordSet{a("web.example.org", "", 0, "10.0.0.1")},
			want:    []string{"conflict web.example.org"},
		},
		{
			name:    "a desired name under the ownership prefix is refused",
			desired: []RecordSet{a("kfed-owner.web.example.com", "", 0, "10.0.0.1")},
			want:    []string{"conflict kfed-owner.web.example.com"},
		},
		{
			name:    "an invalid target is a conflict, not an error for the whole zone",
			desired: []RecordSet{{Name: web, Type: TypeA, Targets: []string{"nope"}}, a("ok.example.com", "", 0, "10.0.0.9")},
			want:    []string{"create ok.example.com/A", "create kfed-owner.ok.example.com/TXT", "conflict web.example.com"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPlanner(t).Plan(zone, tt.desired, tt.current)
			if got, want := summary(p), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("plan:\n%s\nwant:\n%s\n\nfull plan:\n%s", got, want, p)
			}
		})
	}
}

func TestPlanPrintsEveryKindOfChange(t *testing.T) {
	web := "web.example.com"
	p := testPlanner(t).Plan("example.com",
		[]RecordSet{a(web, "c1", 2, "10.0.0.1"), a(web, "c3", 1, "10.0.0.3"), a("taken.example.com", "", 0, "10.0.0.4")},
		[]RecordSet{a(web, "c1", 1, "10.0.0.1"), a(web, "c2", 1, "10.0.0.2"), mark(t, web, "fed-1", "A"), a("taken.example.com", "", 0, "192.0.2.1")})
	out := p.String()
	for _, want := range []string{
		"zone example.com: 1 to create, 1 to update, 1 to delete, 1 conflicts",
		"+ web.example.com [set=c3 weight=1] 30 A 10.0.0.3",
		"~ web.example.com [set=c1 weight=1] 30 A 10.0.0.1\n  → web.example.com [set=c1 weight=2] 30 A 10.0.0.1",
		"- web.example.com [set=c2 weight=1] 30 A 10.0.0.2",
		"! taken.example.com (default/web): holds A records without kfed's ownership mark",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	if p.Empty() {
		t.Error("a plan with only an update must not be empty")
	}
}

func TestPlanWithOnlyUpdateIsNotEmpty(t *testing.T) {
	web := "web.example.com"
	p := testPlanner(t).Plan("example.com", []RecordSet{a(web, "", 0, "10.0.0.2")}, []RecordSet{a(web, "", 0, "10.0.0.1"), mark(t, web, "fed-1", "A")})
	if c, u, d := p.Count(); c != 0 || u != 1 || d != 0 || p.Empty() {
		t.Errorf("plan = %d/%d/%d empty=%v, want one update and not empty", c, u, d, p.Empty())
	}
}

func TestMergeSetIdentifiersUnitesTargets(t *testing.T) {
	got := MergeSetIdentifiers([]RecordSet{
		{Name: "web.example.com", Type: "A", TTL: 60, SetIdentifier: "c1", Weight: 1, Targets: []string{"10.0.0.2"}},
		{Name: "web.example.com", Type: "A", TTL: 30, SetIdentifier: "c2", Weight: 4, Targets: []string{"10.0.0.1"}},
		{Name: "web.example.com", Type: "AAAA", SetIdentifier: "c1", Targets: []string{"::1"}},
	})
	want := []RecordSet{
		MustNormalize(RecordSet{Name: "web.example.com", Type: "A", TTL: 30, Targets: []string{"10.0.0.1", "10.0.0.2"}}),
		MustNormalize(RecordSet{Name: "web.example.com", Type: "AAAA", Targets: []string{"::1"}}),
	}
	if len(got) != 2 || !got[0].Equal(want[0]) || !got[1].Equal(want[1]) {
		t.Errorf("MergeSetIdentifiers = %v, want %v", got, want)
	}
}

func TestBatchKeepsGroupsWholeWithinLimits(t *testing.T) {
	var changes []Change
	for i := range 10 {
		g := fmt.Sprintf("n%02d.example.com", i)
		changes = append(changes,
			Change{Action: Create, New: a(g, "", 0, "10.0.0.1", "10.0.0.2"), Group: g},
			Change{Action: Create, New: mark(t, g, "fed-1", "A"), Group: g})
	}
	records := func(c Change) []int { return []int{len(c.Record().Targets)} }
	batches, err := Batch(GroupChanges(changes), []int{7}, records)
	if err != nil {
		t.Fatal(err)
	}
	// Each group costs 3 records: two groups (6) per batch of at most 7.
	if len(batches) != 5 {
		t.Fatalf("got %d batches, want 5", len(batches))
	}
	for _, b := range batches {
		if len(b) != 4 || b[0].Group != b[1].Group || b[2].Group != b[3].Group {
			t.Errorf("batch splits a group: %v", b)
		}
	}
	if _, err := Batch(GroupChanges(changes), []int{2}, records); err == nil {
		t.Error("a group larger than the limit must be an error")
	}
}

// BenchmarkPlan10000 plans a zone of 10,000 record sets (2,500 names, each
// with three weighted A record sets and a mark) where one weight changed.
func BenchmarkPlan10000(b *testing.B) {
	pl := testPlanner(b)
	var desired, current []RecordSet
	for i := range 2500 {
		name := fmt.Sprintf("svc%d.ns.fed.svc.example.com", i)
		for c := range 3 {
			rs := a(name, fmt.Sprintf("cluster-%d", c), 1, fmt.Sprintf("10.%d.%d.%d", c, i/256, i%256))
			desired = append(desired, rs)
			current = append(current, rs)
		}
		current = append(current, mark(b, name, "fed-1", "A"))
	}
	desired[0].Weight = 5
	b.ReportAllocs()
	for b.Loop() {
		p := pl.Plan("example.com", desired, current)
		if len(p.Changes) != 1 {
			b.Fatalf("plan has %d changes, want 1", len(p.Changes))
		}
	}
}
