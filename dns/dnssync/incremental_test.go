package dnssync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// memProvider is an in-memory provider: zones of record sets that apply a
// change set group by group, each group atomically and only when the zone
// still holds what it was planned against (as BIND's prerequisites and
// Route53's change batches do).
type memProvider struct {
	weighted bool
	zones    []*memZone
	failNext bool // the next change set fails
	dnsprovider.Counters
}

func (p *memProvider) Name() string { return "memory" }

func (p *memProvider) Zones(context.Context) ([]dnsprovider.Zone, error) {
	out := make([]dnsprovider.Zone, len(p.zones))
	for i, z := range p.zones {
		out[i] = z
	}
	return out, nil
}

func (p *memProvider) Adjust(desired []dnsprovider.RecordSet) []dnsprovider.RecordSet {
	if !p.weighted {
		return dnsprovider.MergeSetIdentifiers(desired)
	}
	// Record sets of one key become one, as a provider can hold only one
	// (Cloud DNS's Adjust does the same).
	out := make([]dnsprovider.RecordSet, 0, len(desired))
	index := map[dnsprovider.Key]int{}
	for _, d := range desired {
		n, err := dnsprovider.Normalize(d)
		if err != nil {
			out = append(out, d)
			continue
		}
		if i, ok := index[n.Key()]; ok {
			m := out[i]
			m.Targets = append(m.Targets, n.Targets...)
			m.TTL = min(m.TTL, n.TTL)
			out[i] = dnsprovider.MustNormalize(m)
			continue
		}
		index[n.Key()] = len(out)
		out = append(out, n)
	}
	return out
}

func (p *memProvider) Stats() dnsprovider.Stats { return p.Counters.Stats() }

type memZone struct {
	p       *memProvider
	name    string
	records map[dnsprovider.Key]dnsprovider.RecordSet
}

func (z *memZone) Name() string { return z.name }
func (z *memZone) ID() string   { return z.name }

func (z *memZone) Records(context.Context) ([]dnsprovider.RecordSet, error) {
	z.p.Request()
	out := make([]dnsprovider.RecordSet, 0, len(z.records))
	for _, r := range z.records {
		r.Targets = slices.Clone(r.Targets)
		out = append(out, r)
	}
	return out, nil
}

func (z *memZone) NewChangeset() dnsprovider.Changeset { return &memChangeset{z: z} }

type memChangeset struct {
	z *memZone
	dnsprovider.ChangeList
}

func (c *memChangeset) Apply(context.Context) error {
	z := c.z
	if z.p.failNext {
		z.p.failNext = false
		return errors.New("the provider is down")
	}
	for _, group := range dnsprovider.GroupChanges(c.Changes()) {
		z.p.Request()
		if err := z.applyGroup(group); err != nil {
			return err
		}
		z.p.Applied(len(group))
	}
	return nil
}

// applyGroup applies one group's changes, all or none.
func (z *memZone) applyGroup(group []dnsprovider.Change) error {
	type was struct {
		key dnsprovider.Key
		rs  dnsprovider.RecordSet
		ok  bool
	}
	var undo []was
	set := func(k dnsprovider.Key, rs dnsprovider.RecordSet, ok bool) {
		old, had := z.records[k]
		undo = append(undo, was{k, old, had})
		if ok {
			z.records[k] = rs
		} else {
			delete(z.records, k)
		}
	}
	for _, ch := range group {
		failed := false
		if ch.Action != dnsprovider.Create {
			if have, ok := z.records[ch.Old.Key()]; !ok || !have.Equal(ch.Old) {
				failed = true
			} else {
				set(ch.Old.Key(), dnsprovider.RecordSet{}, false)
			}
		}
		if !failed && ch.Action != dnsprovider.Delete {
			if _, ok := z.records[ch.New.Key()]; ok {
				failed = true
			} else {
				set(ch.New.Key(), ch.New, true)
			}
		}
		if failed {
			for i := len(undo) - 1; i >= 0; i-- {
				if u := undo[i]; u.ok {
					z.records[u.key] = u.rs
				} else {
					delete(z.records, u.key)
				}
			}
			return fmt.Errorf("%s: %w", ch, dnsprovider.ErrPrecondition)
		}
	}
	return nil
}

const memZoneName = "kfed.test"

var testRegistry = dnsprovider.Registry{OwnerID: "fed", Prefix: dnsprovider.DefaultTXTPrefix}

// foreign are records kfed does not own, in every zone the tests start
// with: an address without a mark, a name another federation owns, a CNAME,
// a plain TXT record, and a mark kfed did not write.
func foreign() []dnsprovider.RecordSet {
	other := dnsprovider.Registry{OwnerID: "other", Prefix: dnsprovider.DefaultTXTPrefix}
	return []dnsprovider.RecordSet{
		dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: "taken.kfed.test", Type: "A", TTL: 300, Targets: []string{"192.0.2.1"}}),
		dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: "theirs.kfed.test", Type: "A", TTL: 300, Targets: []string{"192.0.2.2"}}),
		other.Record("theirs.kfed.test", dnsprovider.Mark{Owner: "other", Types: []string{"A"}}, 300),
		dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: "alias.kfed.test", Type: "CNAME", TTL: 300, Targets: []string{"elsewhere.example"}}),
		dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: "spf.kfed.test", Type: "TXT", TTL: 300, Targets: []string{`"v=spf1 -all"`}}),
		dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: "kfed-owner.hand.kfed.test", Type: "TXT", TTL: 300, Targets: []string{`"written by hand"`}}),
		dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: "hand.kfed.test", Type: "AAAA", TTL: 300, Targets: []string{"2001:db8::1"}}),
	}
}

// leftover is what an earlier run of this federation left: a name with its
// mark that no DNSEndpoint asks for any more.
func leftover() []dnsprovider.RecordSet {
	return []dnsprovider.RecordSet{
		dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: "gone.kfed.test", Type: "A", TTL: 30, Targets: []string{"127.9.0.1"}}),
		testRegistry.Record("gone.kfed.test", dnsprovider.Mark{Owner: "fed", Resource: "ns/gone", Types: []string{"A"}}, 30),
	}
}

func newMemProvider(weighted bool, seed []dnsprovider.RecordSet) *memProvider {
	p := &memProvider{weighted: weighted}
	z := &memZone{p: p, name: memZoneName, records: map[dnsprovider.Key]dnsprovider.RecordSet{}}
	for _, r := range seed {
		z.records[r.Key()] = r
	}
	p.zones = []*memZone{z}
	return p
}

func newTestController(p *memProvider, now clock.PassiveClock) *Controller {
	return &Controller{Syncer: &Syncer{Provider: p, Planner: dnsprovider.Planner{Registry: testRegistry}, Clock: now},
		Tenancy: testTenancy}
}

// testTenancy trusts the tests' namespaces with every name, as an operator
// may trust a namespace of hand-written records, but ns2: the random passes'
// objects there are refused, and incremental passes must plan them as full
// ones do.
var testTenancy = tenancy.NewEndpoints("fed", []string{"ns", "ns1", "scale"})

// names a DNSEndpoint may ask for: some shared, some held by others, one
// spelled two ways, one reserved for marks, one in no zone, and one of each
// namespace's own.
var poolNames = []string{
	"a.kfed.test", "b.kfed.test", "B.Kfed.Test.", "c.kfed.test", "d.kfed.test", "gone.kfed.test",
	"taken.kfed.test", "theirs.kfed.test", "alias.kfed.test", "spf.kfed.test", "hand.kfed.test",
	"kfed-owner.a.kfed.test", "x.elsewhere.test",
	// Federated names of ns1 and ns2, each refused from the other.
	"web.ns1.fed.svc.kfed.test", "web.ns2.fed.svc.kfed.test",
}

func randomEndpoints(r *rand.Rand) []extdnsv1alpha1.Endpoint {
	var out []extdnsv1alpha1.Endpoint
	for range 1 + r.IntN(3) {
		e := extdnsv1alpha1.Endpoint{DNSName: poolNames[r.IntN(len(poolNames))], RecordTTL: int64(30 * r.IntN(3))}
		switch r.IntN(7) {
		case 0, 1:
			e.RecordType, e.Targets = "A", []string{"127.0.0." + strconv.Itoa(1+r.IntN(3))}
			if r.IntN(2) == 0 {
				e.Targets = append(e.Targets, "127.0.0.4")
			}
		case 2:
			e.RecordType, e.Targets = "AAAA", []string{"::" + strconv.Itoa(1+r.IntN(2))}
		case 3:
			e.RecordType, e.Targets = "CNAME", []string{"target" + strconv.Itoa(r.IntN(2)) + ".example."}
		case 4:
			e.RecordType, e.Targets = "TXT", []string{`"v=` + strconv.Itoa(r.IntN(2)) + `"`}
		case 5:
			e.RecordType, e.Targets = "SRV", []string{"0 1 80 a.kfed.test."}
		case 6:
			e.RecordType, e.Targets = "SRV", []string{"not an SRV record"}
		}
		out = append(out, e)
	}
	return out
}

func randomEndpoint(r *rand.Rand, uid int) extdnsv1alpha1.DNSEndpoint {
	ep := extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{
		Namespace: []string{"ns1", "ns2"}[r.IntN(2)], Name: "ep-" + strconv.Itoa(uid),
		UID: types.UID("uid-" + strconv.Itoa(uid)), ResourceVersion: strconv.Itoa(r.Int()),
	}}
	ep.Spec.Endpoints = randomEndpoints(r)
	if r.IntN(3) == 0 {
		// Weighted: two clusters claim the addresses.
		dnsendpoint.SetClusters(&ep, []dnsendpoint.Cluster{
			{Name: "c1", Weight: 1, Addresses: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}},
			{Name: "c2", Weight: 2 + r.IntN(2), Addresses: []netip.Addr{netip.MustParseAddr("127.0.0.2")}},
		})
	}
	return ep
}

func sortedConflicts(cs []dnsprovider.Conflict) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	slices.Sort(out)
	return out
}

// statuses are the names each DNSEndpoint's status reports left alone, as
// markPublished writes them.
func statuses(cs []dnsprovider.Conflict) map[string][]string {
	out := map[string][]string{}
	for _, c := range cs {
		out[c.Resource] = append(out[c.Resource], c.Name)
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

func zoneDump(z *memZone) []string {
	var out []string
	for _, r := range z.records {
		out = append(out, r.String())
	}
	slices.Sort(out)
	return out
}

// Planning only the names of the DNSEndpoints that changed must leave the
// zone, the conflicts and the statuses exactly as planning every name does,
// whatever the sequence of adds, changes and deletes: names shared by two
// DNSEndpoints, records kfed does not own, marks, invalid record sets.
func TestIncrementalPassesPublishWhatAFullPlanWould(t *testing.T) {
	for _, weighted := range []bool{false, true} {
		for seed := range uint64(25) {
			t.Run(fmt.Sprintf("weighted=%v/seed=%d", weighted, seed), func(t *testing.T) {
				equivalence(t, weighted, seed)
			})
		}
	}
}

func equivalence(t *testing.T, weighted bool, seed uint64) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 16))
	start := append(foreign(), leftover()...)
	now := clocktesting.NewFakePassiveClock(time.Now())
	incP, fullP := newMemProvider(weighted, start), newMemProvider(weighted, start)
	inc, full := newTestController(incP, now), newTestController(fullP, now)

	var eps []extdnsv1alpha1.DNSEndpoint
	next := 0
	incremental := 0
	for step := range 60 {
		what := []string{}
		for range 1 + r.IntN(3) {
			switch k := r.IntN(10); {
			case k < 4 || len(eps) == 0:
				eps = append(eps, randomEndpoint(r, next))
				what = append(what, "add "+eps[len(eps)-1].Name)
				next++
			case k < 7:
				i := r.IntN(len(eps))
				eps[i].ResourceVersion = strconv.Itoa(r.Int())
				if r.IntN(4) > 0 { // else only its status changed
					eps[i].Spec.Endpoints = randomEndpoints(r)
				}
				what = append(what, "change "+eps[i].Name)
			default:
				i := r.IntN(len(eps))
				what = append(what, "delete "+eps[i].Name)
				eps = slices.Delete(eps, i, i+1)
			}
		}
		mustFull := false
		switch r.IntN(20) {
		case 0:
			inc.Syncer.Invalidate()
			what, mustFull = append(what, "invalidate"), true
		case 1:
			now.SetTime(now.Now().Add(2 * time.Hour))
			what, mustFull = append(what, "relist"), true
		}
		// The cache lists in no particular order.
		listed := slices.Clone(eps)
		r.Shuffle(len(listed), func(i, j int) { listed[i], listed[j] = listed[j], listed[i] })

		ip, skipped, err := inc.sync(ctx, listed)
		if err != nil {
			t.Fatalf("step %d %v: incremental pass: %v", step, what, err)
		}
		if skipped {
			// Nothing changed on the whole (say, one added and deleted).
			ip.conflicts = inc.state.allConflicts(nil, nil)
			ip.full = false
		}
		if mustFull && !ip.full {
			t.Fatalf("step %d %v: the pass was not a full plan", step, what)
		}
		if !ip.full {
			incremental++
		}
		inc.statusesWritten(true, true)

		full.state = nil
		fp, _, err := full.sync(ctx, listed)
		if err != nil || !fp.full {
			t.Fatalf("step %d: full pass (full=%v): %v", step, fp.full, err)
		}
		if got, want := zoneDump(incP.zones[0]), zoneDump(fullP.zones[0]); !slices.Equal(got, want) {
			t.Fatalf("step %d %v: zones differ\nincremental:\n  %s\nfull:\n  %s", step, what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		if got, want := sortedConflicts(ip.conflicts), sortedConflicts(fp.conflicts); !slices.Equal(got, want) {
			t.Fatalf("step %d %v: conflicts differ\nincremental:\n  %s\nfull:\n  %s", step, what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		if got, want := statuses(ip.conflicts), statuses(fp.conflicts); !maps.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("step %d %v: statuses differ: %v, want %v", step, what, got, want)
		}
	}
	if incremental < 20 {
		t.Errorf("only %d of 60 passes planned incrementally", incremental)
	}

	// Records kfed does not own are as they were.
	for _, f := range foreign() {
		if got, ok := incP.zones[0].records[f.Key()]; !ok || !got.Equal(f) {
			t.Errorf("foreign record %s became %v", f, got)
		}
	}
	// A full plan of the final state against the zone itself (listed
	// afresh) finds nothing to do, and the same conflicts.
	fresh := &Syncer{Provider: incP, Planner: dnsprovider.Planner{Registry: testRegistry}}
	listed := slices.Clone(eps)
	res, err := fresh.Sync(ctx, desiredOf(testTenancy, sortedEndpoints(listed)), true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changes() != 0 {
		t.Errorf("a full plan after the incremental passes changes %d record sets:\n%v", res.Changes(), res.Plans)
	}
	if got, want := sortedConflicts(inc.state.allConflicts(nil, nil)), sortedConflicts(res.Conflicts()); !slices.Equal(got, want) {
		t.Errorf("remembered conflicts %v, a full plan's %v", got, want)
	}
}

func endpointAt(ns, name, rv string, dnsNames ...string) extdnsv1alpha1.DNSEndpoint {
	ep := extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), ResourceVersion: rv}}
	for i, n := range dnsNames {
		ep.Spec.Endpoints = append(ep.Spec.Endpoints, extdnsv1alpha1.Endpoint{DNSName: n, RecordType: "A", Targets: []string{"127.0.0." + strconv.Itoa(i+1)}})
	}
	return ep
}

// A pass plans only what changed while what the controller remembers can
// be trusted, and every name otherwise.
func TestDNSSyncPlansEveryNameWhenItCannotTrustWhatItRemembers(t *testing.T) {
	ctx := context.Background()
	now := clocktesting.NewFakePassiveClock(time.Now())
	p := newMemProvider(false, foreign())
	c := newTestController(p, now)
	eps := []extdnsv1alpha1.DNSEndpoint{
		endpointAt("ns", "a", "1", "a.kfed.test", "shared.kfed.test"),
		endpointAt("ns", "b", "1", "b.kfed.test", "shared.kfed.test"),
		endpointAt("ns", "c", "1", "c.kfed.test"),
		endpointAt("ns", "d", "1", "d.kfed.test", "taken.kfed.test"),
	}
	bump := func(i int) func() {
		return func() {
			v, _ := strconv.Atoi(eps[i].ResourceVersion)
			eps[i].ResourceVersion = strconv.Itoa(v + 1)
		}
	}
	retarget := func(i int) func() {
		return func() {
			bump(i)()
			eps[i].Spec.Endpoints[0].Targets = []string{"127.0.1." + eps[i].ResourceVersion}
		}
	}
	const skipped, incremental, full, failed = "skipped", "incremental", "full", "failed"
	steps := []struct {
		name   string
		before func()
		want   string
		names  int    // planned, when incremental
		after  func() // what markPublished found
	}{
		{"the first pass plans every name", func() {}, full, 0, nil},
		{"a pass in which nothing changed is skipped", func() {}, skipped, 0, nil},
		{"one DNSEndpoint changed: its names are planned", bump(2), incremental, 1, nil},
		{"a shared name changed: the names of the one that changed", bump(0), incremental, 2, nil},
		{"a DNSEndpoint removed: the names it had", func() { eps = slices.Delete(eps, 1, 2) }, incremental, 2, nil},
		{"one added", func() { eps = append(eps, endpointAt("ns", "b", "2", "b.kfed.test")) }, incremental, 1, nil},
		{"at Relist every name is planned", func() { now.SetTime(now.Now().Add(2 * time.Hour)) }, full, 0, nil},
		{"after Invalidate (a failed precondition) every name", func() { bump(2)(); c.Syncer.Invalidate() }, full, 0, nil},
		{"the provider fails", func() { retarget(1)(); p.failNext = true }, failed, 0, nil},
		{"after an error every name", retarget(1), full, 0, func() { c.statusesWritten(false, false) }},
		{"after a status not written every name", func() {}, full, 0, func() { c.statusesWritten(false, true) }},
		{"after statuses written, the pass is not skipped", func() {}, incremental, 0, nil},
		{"every one changed: their names", func() { bump(0)(); bump(1)(); bump(2)(); bump(3)() }, incremental, 6, nil},
	}
	for _, st := range steps {
		st.before()
		res, skip, err := c.sync(ctx, slices.Clone(eps))
		got := incremental
		switch {
		case err != nil:
			got = failed
		case skip:
			got = skipped
		case res.full:
			got = full
		}
		if got != st.want || (got == incremental && res.names != st.names) {
			t.Fatalf("%s: pass was %s planning %d names (%v), want %s planning %d", st.name, got, res.names, err, st.want, st.names)
		}
		if st.after != nil {
			st.after()
		} else {
			c.statusesWritten(true, true)
		}
	}
}

// The cache lists DNSEndpoints in no particular order; a name two of them
// ask for must still be marked with the same one in every pass, or each
// pass rewrites its mark (and reports its conflicts to the other).
func TestANameTwoDNSEndpointsAskForKeepsItsMarkWhateverTheListOrder(t *testing.T) {
	ctx := context.Background()
	now := clocktesting.NewFakePassiveClock(time.Now())
	p := newMemProvider(false, foreign())
	c := newTestController(p, now)
	a := endpointAt("ns", "a", "1", "shared.kfed.test")
	b := endpointAt("ns", "b", "1", "shared.kfed.test", "taken.kfed.test")
	b.Spec.Endpoints[0].Targets = []string{"127.0.0.9"}
	for i, order := range [][]extdnsv1alpha1.DNSEndpoint{{a, b}, {b, a}, {a, b}} {
		c.state = nil // a full plan each time
		res, _, err := c.sync(ctx, order)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && res.Changes() != 0 {
			t.Errorf("listed as %s, %s: the pass changed %d record sets: %v", order[0].Name, order[1].Name, res.Changes(), res.Plans)
		}
	}
	mark := p.zones[0].records[dnsprovider.Key{Name: "kfed-owner.shared.kfed.test", Type: "TXT"}]
	if m, ok := dnsprovider.ParseMark(mark); !ok || m.Resource != "ns/a" {
		t.Errorf("mark %v, want one naming ns/a (the first by namespace and name)", mark)
	}
}

// scaleEndpoints are n DNSEndpoints as the services controller writes them
// for n Services placed in three clusters.
func scaleEndpoints(b *testing.B, n int) []extdnsv1alpha1.DNSEndpoint {
	b.Helper()
	out := make([]extdnsv1alpha1.DNSEndpoint, n)
	for i := range out {
		name := fmt.Sprintf("svc-%05d", i)
		in := publish.Input{Names: publish.NewNames("fed", memZoneName, "scale", name), Regions: []string{"r1", "r2"}, Zones: []string{"z1/r1", "z2/r2"}}
		for c, region := range []string{"r1", "r1", "r2"} {
			in.Clusters = append(in.Clusters, dnsendpoint.Cluster{Name: fmt.Sprintf("cluster-%d", c+1), Region: region, Zones: []string{"z1"},
				Addresses: []netip.Addr{netip.AddrFrom4([4]byte{127, byte(c + 1), byte(i / 256), byte(i % 256)})}, Weight: 1,
				Ports: []dnsendpoint.Port{{Name: "http", Protocol: "TCP", Port: 80}}})
		}
		eps, table, err := publish.Endpoints(in)
		if err != nil {
			b.Fatal(err)
		}
		out[i] = extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "scale", Name: name, UID: types.UID(name), ResourceVersion: "1"},
			Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps}}
		dnsendpoint.SetClusters(&out[i], table)
	}
	return out
}

// BenchmarkDNSSyncPassOneChanged10000 is one pass over 10,000 DNSEndpoints
// (about 110,000 record sets and their marks) in which one of them changed
// an address: planned in full, as every pass was, or only its names.
func BenchmarkDNSSyncPassOneChanged10000(b *testing.B) {
	for _, mode := range []string{"full", "incremental"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			now := clocktesting.NewFakePassiveClock(time.Now())
			p := newMemProvider(false, nil)
			c := newTestController(p, now)
			eps := scaleEndpoints(b, 10000)
			if _, _, err := c.sync(ctx, eps); err != nil {
				b.Fatal(err)
			}
			c.statusesWritten(true, true)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				ep := &eps[i%len(eps)]
				ep.ResourceVersion = strconv.Itoa(i + 1)
				ep.Spec.Endpoints[0].Targets = []string{netip.AddrFrom4([4]byte{127, 9, byte(i / 256), byte(i % 256)}).String()}
				if mode == "full" {
					c.state = nil
				}
				res, _, err := c.sync(ctx, eps)
				if err != nil || res.Changes() == 0 || res.full != (mode == "full") {
					b.Fatalf("pass: %d changes, full=%v, %v", res.Changes(), res.full, err)
				}
				c.statusesWritten(true, true)
			}
			b.ReportMetric(float64(p.zones[0].size()), "records")
		})
	}
}

func (z *memZone) size() int { return len(z.records) }
