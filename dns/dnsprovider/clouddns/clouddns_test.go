package clouddns_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnsprovider/clouddns"
	"github.com/kfed-io/kfed/dns/dnsprovider/conformance"
	"github.com/kfed-io/kfed/test/clouddnsfake"
)

const project = "kfed-test"

// service is the real API client pointed at the fake, without credentials.
func service(t testing.TB, fake *clouddnsfake.Server) *dns.Service {
	t.Helper()
	svc, err := dns.NewService(context.Background(), option.WithEndpoint(fake.URL+"/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// fast is a config for tests: short backoff.
func fast(cfg clouddns.Config) clouddns.Config {
	cfg.Project = project
	cfg.BaseBackoff, cfg.MaxBackoff = time.Millisecond, 5*time.Millisecond
	return cfg
}

func setup(t testing.TB, cfg clouddns.Config) (*clouddnsfake.Server, *clouddns.Provider, dnsprovider.Zone) {
	t.Helper()
	fake := clouddnsfake.New()
	t.Cleanup(fake.Close)
	fake.AddZone(project, "kfed-test", "kfed.test.")
	fake.AddZone(project, "other", "other.test.")
	cfg.Zones = []string{"kfed-test"}
	p, err := clouddns.New(service(t, fake), fast(cfg))
	if err != nil {
		t.Fatal(err)
	}
	zones, err := p.Zones(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(zones) != 1 || zones[0].Name() != "kfed.test" {
		t.Fatalf("zones = %v", zones)
	}
	return fake, p, zones[0]
}

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) conformance.Target {
		fake, p, z := setup(t, clouddns.Config{})
		// The suite's largest zone holds 10,000 record sets besides the SOA
		// and NS: over Cloud DNS's default of 10,000 per zone, which Google
		// raises on request.
		fake.LimitRecordSets(20000)
		return conformance.Target{Provider: p, Zone: z, Weighted: true, Geo: true, ChangesPerRequest: clouddns.MaxAdditionsPerChange}
	})
}

func planner(t testing.TB) dnsprovider.Planner {
	reg, err := dnsprovider.NewRegistry("fed-1", "")
	if err != nil {
		t.Fatal(err)
	}
	return dnsprovider.Planner{Registry: reg}
}

// services is the desired state of n federated Services × 3 clusters.
func services(n int) []dnsprovider.RecordSet { return conformance.Services(n, "kfed.test") }

func find(sets []clouddnsfake.RecordSet, name, typ string) *clouddnsfake.RecordSet {
	for i := range sets {
		if sets[i].Name == name && sets[i].Type == typ {
			return &sets[i]
		}
	}
	return nil
}

func TestWeightedRecordSetsRoundTrip(t *testing.T) {
	tests := []struct {
		name        string
		desired     []dnsprovider.RecordSet
		wantWeights []float64
		wantItems   [][]string
	}{
		{
			name: "three clusters' A records become one weighted round robin record set",
			desired: []dnsprovider.RecordSet{
				{Name: "web.kfed.test", Type: "A", SetIdentifier: "cluster-2", Weight: 2, Targets: []string{"10.0.2.1"}},
				{Name: "web.kfed.test", Type: "A", SetIdentifier: "cluster-1", Weight: 1, Targets: []string{"10.0.1.2", "10.0.1.1"}},
				{Name: "web.kfed.test", Type: "A", SetIdentifier: "cluster-3", Weight: 0, Targets: []string{"10.0.3.1"}},
			},
			wantWeights: []float64{1, 2, 0},
			wantItems:   [][]string{{"10.0.1.1", "10.0.1.2"}, {"10.0.2.1"}, {"10.0.3.1"}},
		},
		{
			name: "weighted CNAMEs to each cluster's load balancer keep a trailing dot",
			desired: []dnsprovider.RecordSet{
				{Name: "web.kfed.test", Type: "CNAME", SetIdentifier: "eu", Weight: 3, Targets: []string{"lb-eu.example.net"}},
				{Name: "web.kfed.test", Type: "CNAME", SetIdentifier: "us", Weight: 1, Targets: []string{"lb-us.example.net."}},
			},
			wantWeights: []float64{3, 1},
			wantItems:   [][]string{{"lb-eu.example.net."}, {"lb-us.example.net."}},
		},
		{
			name: "all-zero weights are published as equal shares",
			desired: []dnsprovider.RecordSet{
				{Name: "web.kfed.test", Type: "AAAA", SetIdentifier: "a", Targets: []string{"2001:db8::1"}},
				{Name: "web.kfed.test", Type: "AAAA", SetIdentifier: "b", Targets: []string{"2001:db8::2"}},
			},
			wantWeights: []float64{1, 1},
			wantItems:   [][]string{{"2001:db8::1"}, {"2001:db8::2"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, p, z := setup(t, clouddns.Config{})
			ctx := context.Background()
			if _, err := dnsprovider.Sync(ctx, p, z, planner(t), tt.desired); err != nil {
				t.Fatal(err)
			}
			typ := tt.desired[0].Type
			sets := fake.RecordSets(project, "kfed-test")
			rs := find(sets, "web.kfed.test.", typ)
			if rs == nil || rs.RoutingPolicy == nil || rs.RoutingPolicy.Wrr == nil || len(rs.Rrdatas) != 0 {
				t.Fatalf("record set = %+v, want one with a wrr policy and no rrdatas", rs)
			}
			var weights []float64
			var items [][]string
			for _, it := range rs.RoutingPolicy.Wrr.Items {
				weights = append(weights, it.Weight)
				items = append(items, slices.Sorted(slices.Values(it.Rrdatas)))
			}
			if !slices.Equal(weights, tt.wantWeights) || fmt.Sprint(items) != fmt.Sprint(tt.wantItems) {
				t.Errorf("items: weights %v rrdatas %v, want %v %v", weights, items, tt.wantWeights, tt.wantItems)
			}
			if ids := find(sets, clouddns.SetIdentifiersName("web.kfed.test", typ)+".", "TXT"); ids == nil {
				t.Errorf("no set identifier record beside the weighted record set: %+v", sets)
			}

			// Listed back, the record sets are what was desired, and a
			// second sync sends nothing but the listing.
			listed, err := z.Records(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := p.Adjust(tt.desired)
			for _, w := range want {
				i := slices.IndexFunc(listed, func(r dnsprovider.RecordSet) bool { return r.Key() == w.Key() })
				if i < 0 || !listed[i].Equal(w) {
					t.Errorf("listing has no %v", w)
				}
			}
			for _, r := range listed {
				if strings.HasPrefix(r.Name, "_kfed-wrr-") {
					t.Errorf("the set identifier record %v is shown to the planner", r)
				}
			}
			before := p.Stats()
			plan, err := dnsprovider.Sync(ctx, p, z, planner(t), tt.desired)
			if err != nil {
				t.Fatal(err)
			}
			if !plan.Empty() || p.Stats().Requests-before.Requests != 1 {
				t.Errorf("second sync: %d requests, plan:\n%s", p.Stats().Requests-before.Requests, plan)
			}
		})
	}
}

func TestOneClusterChangingRewritesOnlyItsRecordSet(t *testing.T) {
	fake, p, z := setup(t, clouddns.Config{})
	ctx := context.Background()
	desired := services(3)
	if _, err := dnsprovider.Sync(ctx, p, z, planner(t), desired); err != nil {
		t.Fatal(err)
	}
	current, err := z.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Cluster 2 of svc1 gets weight 5: the planner sees one update of one
	// cluster's record set; Cloud DNS gets the whole weighted record set
	// (and its identifiers) deleted and added back, in one change.
	desired[4].Weight = 5
	plan := planner(t).Plan(z.Name(), p.Adjust(desired), current)
	if c, u, d := plan.Count(); c != 0 || u != 1 || d != 0 {
		t.Fatalf("plan %d/%d/%d, want one update:\n%s", c, u, d, plan)
	}
	before := len(fake.Batches())
	if err := dnsprovider.Apply(ctx, z, plan); err != nil {
		t.Fatal(err)
	}
	if got := fake.Batches()[before:]; !slices.Equal(got, []int{4}) {
		t.Errorf("changes = %v, want one of 4 (2 deletions, 2 additions)", got)
	}
	rs := find(fake.RecordSets(project, "kfed-test"), "svc1.default.fed.svc.kfed.test.", "A")
	var weights []float64
	for _, it := range rs.RoutingPolicy.Wrr.Items {
		weights = append(weights, it.Weight)
	}
	if !slices.Equal(weights, []float64{1, 5, 1}) {
		t.Errorf("weights = %v, want [1 5 1]", weights)
	}

	// The sync controller plans the next change against its cached listing
	// with the applied plan written in, not a new listing: a change to
	// another cluster of the same name rewrites the record set from what
	// the zone remembers writing.
	current = written(current, plan)
	desired[3].Weight = 7
	plan = planner(t).Plan(z.Name(), p.Adjust(desired), current)
	if err := dnsprovider.Apply(ctx, z, plan); err != nil {
		t.Fatalf("second change against the cached listing: %v\n%s", err, plan)
	}
	rs = find(fake.RecordSets(project, "kfed-test"), "svc1.default.fed.svc.kfed.test.", "A")
	weights = nil
	for _, it := range rs.RoutingPolicy.Wrr.Items {
		weights = append(weights, it.Weight)
	}
	if !slices.Equal(weights, []float64{7, 5, 1}) {
		t.Errorf("weights = %v, want [7 5 1]", weights)
	}

	// A plan made from a listing older than the last change is refused.
	desired[5].Weight = 9
	stale := planner(t).Plan(z.Name(), p.Adjust(desired), current)
	if err := dnsprovider.Apply(ctx, z, stale); !errors.Is(err, dnsprovider.ErrPrecondition) {
		t.Fatalf("a plan made before the last change: err = %v, want ErrPrecondition\n%s", err, stale)
	}
}

// written returns a listing with a plan's changes applied, as the sync
// controller keeps its cache.
func written(listing []dnsprovider.RecordSet, p dnsprovider.Plan) []dnsprovider.RecordSet {
	byKey := map[dnsprovider.Key]dnsprovider.RecordSet{}
	for _, r := range listing {
		byKey[r.Key()] = r
	}
	for _, c := range p.Changes {
		if c.Action != dnsprovider.Create {
			delete(byKey, c.Old.Key())
		}
		if c.Action != dnsprovider.Delete {
			byKey[c.New.Key()] = c.New
		}
	}
	out := make([]dnsprovider.RecordSet, 0, len(byKey))
	for _, r := range byKey {
		out = append(out, r)
	}
	return out
}

func TestHandEditedPolicyIsReplaced(t *testing.T) {
	fake, p, z := setup(t, clouddns.Config{})
	ctx := context.Background()
	desired := services(1)
	if _, err := dnsprovider.Sync(ctx, p, z, planner(t), desired); err != nil {
		t.Fatal(err)
	}
	// Someone adds a fourth item by hand: the identifiers no longer match
	// the items, which are listed as wrr-0…wrr-3 and replaced by kfed's.
	svc := service(t, fake)
	rs := find(fake.RecordSets(project, "kfed-test"), "svc0.default.fed.svc.kfed.test.", "A")
	old := toAPI(*rs)
	edited := toAPI(*rs)
	edited.RoutingPolicy.Wrr.Items = append(edited.RoutingPolicy.Wrr.Items, &dns.RRSetRoutingPolicyWrrPolicyWrrPolicyItem{Weight: 9, Rrdatas: []string{"192.0.2.9"}})
	if _, err := svc.Changes.Create(project, "kfed-test", &dns.Change{Deletions: []*dns.ResourceRecordSet{old}, Additions: []*dns.ResourceRecordSet{edited}}).Do(); err != nil {
		t.Fatal(err)
	}
	listed, err := z.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range listed {
		if r.Type == "A" {
			ids = append(ids, r.SetIdentifier)
		}
	}
	if !slices.Equal(ids, []string{"wrr-0", "wrr-1", "wrr-2", "wrr-3"}) {
		t.Errorf("set identifiers listed = %v", ids)
	}
	if _, err := dnsprovider.Sync(ctx, p, z, planner(t), desired); err != nil {
		t.Fatal(err)
	}
	if plan, err := dnsprovider.Sync(ctx, p, z, planner(t), desired); err != nil || !plan.Empty() {
		t.Fatalf("after repair: err %v, plan:\n%s", err, plan)
	}
}

// toAPI converts a fake's record set to the client's type.
func toAPI(rs clouddnsfake.RecordSet) *dns.ResourceRecordSet {
	out := &dns.ResourceRecordSet{Name: rs.Name, Type: rs.Type, Ttl: rs.TTL, Rrdatas: rs.Rrdatas}
	if rs.RoutingPolicy != nil && rs.RoutingPolicy.Wrr != nil {
		out.RoutingPolicy = &dns.RRSetRoutingPolicy{Wrr: &dns.RRSetRoutingPolicyWrrPolicy{}}
		for _, it := range rs.RoutingPolicy.Wrr.Items {
			out.RoutingPolicy.Wrr.Items = append(out.RoutingPolicy.Wrr.Items,
				&dns.RRSetRoutingPolicyWrrPolicyWrrPolicyItem{Weight: it.Weight, Rrdatas: it.Rrdatas, ForceSendFields: []string{"Weight"}})
		}
	}
	return out
}

func TestConcurrentChangeFailsWith412(t *testing.T) {
	fake, p, z := setup(t, clouddns.Config{})
	ctx := context.Background()
	desired := services(2)
	if _, err := dnsprovider.Sync(ctx, p, z, planner(t), desired); err != nil {
		t.Fatal(err)
	}
	listed, err := z.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Another writer changes a weight of svc0 after kfed listed the zone.
	rs := find(fake.RecordSets(project, "kfed-test"), "svc0.default.fed.svc.kfed.test.", "A")
	edited := toAPI(*rs)
	edited.RoutingPolicy.Wrr.Items[0].Weight = 42
	if _, err := service(t, fake).Changes.Create(project, "kfed-test", &dns.Change{Deletions: []*dns.ResourceRecordSet{toAPI(*rs)}, Additions: []*dns.ResourceRecordSet{edited}}).Do(); err != nil {
		t.Fatal(err)
	}
	// kfed's change to cluster 3 of svc0, planned from the stale listing,
	// fails as a whole, with nothing applied and svc1's change not sent in
	// another request.
	desired[2].Targets = []string{"10.9.9.9"}
	desired[5].Targets = []string{"10.9.9.8"}
	plan := planner(t).Plan(z.Name(), p.Adjust(desired), listed)
	err = dnsprovider.Apply(ctx, z, plan)
	var ge *googleapi.Error
	if !errors.Is(err, dnsprovider.ErrPrecondition) || !errors.As(err, &ge) || ge.Code != http.StatusPreconditionFailed {
		t.Fatalf("err = %v, want a 412 wrapping ErrPrecondition", err)
	}
	after := find(fake.RecordSets(project, "kfed-test"), "svc0.default.fed.svc.kfed.test.", "A")
	if after.RoutingPolicy.Wrr.Items[0].Weight != 42 || after.RoutingPolicy.Wrr.Items[2].Rrdatas[0] != "10.2.0.1" {
		t.Errorf("the concurrent change was overwritten or kfed's half-applied: %+v", after.RoutingPolicy.Wrr.Items)
	}
	// Listing again lets the next sync through; the other writer's weight
	// is replaced, since kfed owns the name.
	if _, err := dnsprovider.Sync(ctx, p, z, planner(t), desired); err != nil {
		t.Fatal(err)
	}
}

func TestChangesSplitAtCloudDNSLimits(t *testing.T) {
	txt := func(n, size int) []dnsprovider.RecordSet {
		var out []dnsprovider.RecordSet
		for i := range n {
			out = append(out, dnsprovider.RecordSet{Name: fmt.Sprintf("t%d.kfed.test", i), Type: "TXT", Targets: []string{strings.Repeat("x", size)}})
		}
		return out
	}
	tests := []struct {
		name        string
		desired     []dnsprovider.RecordSet
		wantChanges int // additions and deletions
		wantMin     int // requests at least
	}{
		// A weighted record set, its identifiers and its mark: 3 additions
		// per Service.
		{"200 Services fit in one change", services(200), 600, 1},
		{"1,000 Services need 1,000 additions per change at most", services(1000), 3000, 3},
		{"100 KB of record data per change at most", txt(150, 1000), 300, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, p, z := setup(t, clouddns.Config{})
			if _, err := dnsprovider.Sync(context.Background(), p, z, planner(t), tt.desired); err != nil {
				t.Fatal(err)
			}
			batches := fake.Batches()
			total := 0
			for _, b := range batches {
				total += b
			}
			if total != tt.wantChanges || len(batches) < tt.wantMin || (tt.wantMin == 1 && len(batches) != 1) {
				t.Errorf("changes = %v (total %d), want %d in %d or more", batches, total, tt.wantChanges, tt.wantMin)
			}
			t.Logf("%d additions and deletions in %d changes: %v", total, len(batches), batches)
		})
	}
}

func TestOneNameOverTheLimitsIsTooLarge(t *testing.T) {
	_, p, z := setup(t, clouddns.Config{})
	var targets []string
	for i := range 101 {
		targets = append(targets, fmt.Sprintf("10.0.%d.%d", i/250, i%250+1))
	}
	_, err := dnsprovider.Sync(context.Background(), p, z, planner(t), []dnsprovider.RecordSet{{Name: "big.kfed.test", Type: "A", Targets: targets}})
	if !errors.Is(err, dnsprovider.ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge for 101 records in one record set", err)
	}
}

func TestRetriesAreCounted(t *testing.T) {
	tests := []struct {
		name          string
		fail          []int
		wantThrottled int64
	}{
		{"429 rate limit exceeded is retried as throttling", []int{429, 429, 429}, 3},
		{"5xx answers are retried but are not throttling", []int{503, 500}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, p, z := setup(t, clouddns.Config{})
			fake.FailNext(tt.fail...)
			before := p.Stats()
			if _, err := dnsprovider.Sync(context.Background(), p, z, planner(t), services(2)); err != nil {
				t.Fatal(err)
			}
			got := p.Stats()
			wantReq := int64(len(tt.fail)) + 2 // refused, a listing, a change
			if got.ThrottledRetries-before.ThrottledRetries != tt.wantThrottled || got.Requests-before.Requests != wantReq || got.Changes-before.Changes != 8 {
				t.Errorf("stats went from %+v to %+v; want %d throttled retries, %d requests, 8 changes", before, got, tt.wantThrottled, wantReq)
			}
		})
	}
}

func TestRetriesGiveUpAfterMaxRetries(t *testing.T) {
	fake, p, z := setup(t, clouddns.Config{MaxRetries: 2})
	fake.FailNext(429, 429, 429)
	_, err := z.Records(context.Background())
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != http.StatusTooManyRequests {
		t.Fatalf("err = %v, want 429 after 2 retries", err)
	}
	if s := p.Stats(); s.Requests != 4 || s.ThrottledRetries != 2 { // managedZones.list + 3 tries
		t.Errorf("stats = %+v", s)
	}
}

func TestClientSidePacingAvoidsThrottling(t *testing.T) {
	// The server allows 100 requests per second. Paced a little below
	// that, 200 requests are never throttled; unpaced, they are.
	tests := []struct {
		name          string
		perSecond     float64
		wantThrottled bool
	}{
		{"paced below the server's rate", 80, false},
		{"unpaced", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, p, z := setup(t, clouddns.Config{RequestsPerSecond: tt.perSecond})
			fake.LimitRate(100)
			for round := range 100 { // each round: a listing and a change
				desired := []dnsprovider.RecordSet{{Name: "s.kfed.test", Type: "A", Targets: []string{fmt.Sprintf("10.0.%d.%d", round/250, round%250+1)}}}
				if _, err := dnsprovider.Sync(context.Background(), p, z, planner(t), desired); err != nil {
					if !tt.wantThrottled {
						t.Fatal(err)
					}
					break // unpaced, a sync may give up after its retries
				}
			}
			s := p.Stats()
			if (s.ThrottledRetries > 0) != tt.wantThrottled {
				t.Errorf("stats = %+v, want throttled retries: %v", s, tt.wantThrottled)
			}
			t.Logf("%d requests, %d throttled retries", s.Requests, s.ThrottledRetries)
		})
	}
}

func TestListingFollowsPages(t *testing.T) {
	fake, p, z := setup(t, clouddns.Config{})
	if _, err := dnsprovider.Sync(context.Background(), p, z, planner(t), services(400)); err != nil {
		t.Fatal(err)
	}
	before := fake.Requests("resourceRecordSets.list")
	rs, err := z.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// 1,200 weighted record sets (400 Cloud DNS record sets and their 400
	// identifier records) and 400 marks; NS and SOA are not listed back.
	if len(rs) != 1600 {
		t.Errorf("listing has %d record sets, want 1600", len(rs))
	}
	if got := fake.Requests("resourceRecordSets.list") - before; got != 2 {
		t.Errorf("listing 1,202 Cloud DNS record sets took %d requests, want 2 pages of 1,000", got)
	}
}

func TestZonesAreFiltered(t *testing.T) {
	fake := clouddnsfake.New()
	defer fake.Close()
	pub := fake.AddZone(project, "pub", "example.com.")
	fake.AddPrivateZone(project, "priv", "example.com.")
	fake.AddZone(project, "other", "other.example.")
	fake.AddZone("another-project", "elsewhere", "example.org.")
	tests := []struct {
		name string
		cfg  clouddns.Config
		want []string
	}{
		{"every zone of the project", clouddns.Config{}, []string{"pub", "priv", "other"}},
		{"by resource name", clouddns.Config{Zones: []string{"other"}}, []string{"other"}},
		{"by numeric ID", clouddns.Config{Zones: []string{fmt.Sprint(pub)}}, []string{"pub"}},
		{"by DNS name", clouddns.Config{Zones: []string{"Example.com"}}, []string{"pub", "priv"}},
		{"private only", clouddns.Config{Visibility: "private"}, []string{"priv"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := clouddns.New(service(t, fake), fast(tt.cfg))
			if err != nil {
				t.Fatal(err)
			}
			zones, err := p.Zones(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, z := range zones {
				got = append(got, z.ID())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("zones %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAdjust(t *testing.T) {
	p, err := clouddns.New(nil, clouddns.Config{Project: project})
	if err != nil {
		t.Fatal(err)
	}
	rs := func(set string, weight, ttl int64, targets ...string) dnsprovider.RecordSet {
		return dnsprovider.RecordSet{Name: "w.kfed.test", Type: "A", SetIdentifier: set, Weight: weight, TTL: ttl, Targets: targets}
	}
	tests := []struct {
		name    string
		desired []dnsprovider.RecordSet
		want    []string
	}{
		{"weighted record sets of one name share the lowest TTL",
			[]dnsprovider.RecordSet{rs("a", 1, 60, "10.0.0.1"), rs("b", 2, 30, "10.0.0.2")},
			[]string{"w.kfed.test [set=a weight=1] 30 A 10.0.0.1", "w.kfed.test [set=b weight=2] 30 A 10.0.0.2"}},
		{"weights that are all 0 become equal shares",
			[]dnsprovider.RecordSet{rs("a", 0, 30, "10.0.0.1"), rs("b", 0, 30, "10.0.0.2")},
			[]string{"w.kfed.test [set=a weight=1] 30 A 10.0.0.1", "w.kfed.test [set=b weight=1] 30 A 10.0.0.2"}},
		{"a weight of 0 beside others stays 0",
			[]dnsprovider.RecordSet{rs("a", 0, 30, "10.0.0.1"), rs("b", 3, 30, "10.0.0.2")},
			[]string{"w.kfed.test [set=a weight=0] 30 A 10.0.0.1", "w.kfed.test [set=b weight=3] 30 A 10.0.0.2"}},
		{"a plain record set beside weighted ones merges them all",
			[]dnsprovider.RecordSet{rs("", 0, 30, "10.0.0.1"), rs("b", 3, 60, "10.0.0.2")},
			[]string{"w.kfed.test 30 A 10.0.0.1 10.0.0.2"}},
		{"a plain record set alone is kept",
			[]dnsprovider.RecordSet{rs("", 0, 0, "10.0.0.1")},
			[]string{"w.kfed.test 30 A 10.0.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range p.Adjust(tt.desired) {
				got = append(got, r.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Adjust = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSetIdentifiersNames(t *testing.T) {
	tests := []struct{ name, typ, want string }{
		{"web.kfed.test", "A", "_kfed-wrr-a.web.kfed.test"},
		{"_http._tcp.web.kfed.test", "SRV", "_kfed-wrr-srv._http._tcp.web.kfed.test"},
		{"*.apps.kfed.test", "AAAA", "_kfed-wrr-aaaa-wildcard.apps.kfed.test"},
	}
	for _, tt := range tests {
		if got := clouddns.SetIdentifiersName(tt.name, tt.typ); got != tt.want {
			t.Errorf("SetIdentifiersName(%q, %q) = %q, want %q", tt.name, tt.typ, got, tt.want)
		}
	}
	// A weighted wildcard record set round-trips through its identifiers.
	_, p, z := setup(t, clouddns.Config{})
	desired := []dnsprovider.RecordSet{
		{Name: "*.apps.kfed.test", Type: "A", SetIdentifier: "c1", Weight: 1, Targets: []string{"10.0.0.1"}},
		{Name: "*.apps.kfed.test", Type: "A", SetIdentifier: "c2", Weight: 2, Targets: []string{"10.0.0.2"}},
	}
	if _, err := dnsprovider.Sync(context.Background(), p, z, planner(t), desired); err != nil {
		t.Fatal(err)
	}
	if plan, err := dnsprovider.Sync(context.Background(), p, z, planner(t), desired); err != nil || !plan.Empty() {
		t.Errorf("second sync of a weighted wildcard: err %v, plan:\n%s", err, plan)
	}
}

func TestNewNeedsAProject(t *testing.T) {
	if _, err := clouddns.New(nil, clouddns.Config{}); err == nil {
		t.Error("New without a project succeeded")
	}
	if _, err := clouddns.New(nil, clouddns.Config{Project: "p", Visibility: "internal"}); err == nil {
		t.Error("New with visibility internal succeeded")
	}
}

func TestDefaultCredentialsNameTheProject(t *testing.T) {
	fake := clouddnsfake.New()
	defer fake.Close()
	fake.AddZone("from-credentials", "kfed-test", "kfed.test.")
	// A token endpoint for the service account below: the client may ask
	// it for an access token before calling Cloud DNS.
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"fake-token","token_type":"Bearer","expires_in":3600}`)
	}))
	defer tokens.Close()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	account, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "from-credentials", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "kfed@from-credentials.iam.gserviceaccount.com", "client_id": "1", "token_uri": tokens.URL,
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "account.json")
	if err := os.WriteFile(path, account, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)

	p, err := clouddns.NewWithDefaultCredentials(context.Background(), clouddns.Config{}, option.WithEndpoint(fake.URL+"/"))
	if err != nil {
		t.Fatal(err)
	}
	zones, err := p.Zones(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(zones) != 1 || zones[0].ID() != "kfed-test" {
		t.Errorf("zones of the credentials' project = %v", zones)
	}
}

// A proximity policy is a geo policy with each cluster under its nearest
// Google Cloud region: two clusters in Virginia share us-east4's item, and
// the weighted policy's identifier record goes with it.
func TestProximityIsAGeoPolicyByNearestRegion(t *testing.T) {
	fake, p, z := setup(t, clouddns.Config{})
	ctx := context.Background()
	at := func(lat, lon float64) *dnsprovider.Location {
		return &dnsprovider.Location{Latitude: lat, Longitude: lon}
	}
	desired := func(proximity bool) []dnsprovider.RecordSet {
		out := []dnsprovider.RecordSet{
			{Name: "web.kfed.test", Type: "A", TTL: 30, SetIdentifier: "ashburn", Weight: 2, Targets: []string{"10.0.0.1"}, Location: at(39.04, -77.49)},
			{Name: "web.kfed.test", Type: "A", TTL: 60, SetIdentifier: "reston", Weight: 1, Targets: []string{"10.0.0.2"}, Location: at(38.96, -77.36)},
			{Name: "web.kfed.test", Type: "A", TTL: 30, SetIdentifier: "frankfurt", Weight: 1, Targets: []string{"10.0.0.3"}, Location: at(50.11, 8.68)},
			{Name: "web.kfed.test", Type: "A", TTL: 30, SetIdentifier: "tokyo", Weight: 0, Targets: []string{"10.0.0.4"}, Location: at(35.68, 139.69)},
		}
		if !proximity {
			for i := range out {
				out[i].Location = nil
			}
		}
		return out
	}
	if _, err := dnsprovider.Sync(ctx, p, z, planner(t), desired(false)); err != nil {
		t.Fatal(err)
	}
	if find(fake.RecordSets(project, "kfed-test"), clouddns.SetIdentifiersName("web.kfed.test", "A")+".", "TXT") == nil {
		t.Fatal("the weighted policy has no identifier record")
	}
	if _, err := dnsprovider.Sync(ctx, p, z, planner(t), desired(true)); err != nil {
		t.Fatal(err)
	}
	sets := fake.RecordSets(project, "kfed-test")
	rs := find(sets, "web.kfed.test.", "A")
	if rs == nil || rs.RoutingPolicy == nil || rs.RoutingPolicy.Geo == nil || rs.RoutingPolicy.Wrr != nil || rs.RoutingPolicy.Geo.EnableFencing {
		t.Fatalf("web.kfed.test A is %+v, want a geo policy without fencing", rs)
	}
	var got []string
	for _, it := range rs.RoutingPolicy.Geo.Items {
		got = append(got, it.Location+"="+strings.Join(it.Rrdatas, ","))
	}
	// Tokyo has weight 0 while others have weight: it leaves the policy.
	if want := []string{"europe-west3=10.0.0.3", "us-east4=10.0.0.1,10.0.0.2"}; !slices.Equal(got, want) {
		t.Errorf("geo items %v, want %v", got, want)
	}
	if rs.TTL != 30 {
		t.Errorf("TTL %d, want the lowest, 30", rs.TTL)
	}
	if ids := find(sets, clouddns.SetIdentifiersName("web.kfed.test", "A")+".", "TXT"); ids != nil {
		t.Errorf("the weighted policy's identifier record is left: %+v", ids)
	}
	listed, err := z.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if plan := planner(t).Plan(z.Name(), p.Adjust(desired(true)), listed); !plan.Empty() {
		t.Errorf("a second sync plans changes:\n%s", plan)
	}
	if _, err := dnsprovider.Sync(ctx, p, z, planner(t), desired(false)); err != nil {
		t.Fatalf("switching back to weighted: %v", err)
	}
	if rs := find(fake.RecordSets(project, "kfed-test"), "web.kfed.test.", "A"); rs == nil || rs.RoutingPolicy == nil || rs.RoutingPolicy.Wrr == nil || len(rs.RoutingPolicy.Wrr.Items) != 4 {
		t.Errorf("after switching back, web.kfed.test A is %+v", rs)
	}
}
