package route53_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awsroute53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnsprovider/conformance"
	"github.com/kfed-io/kfed/dns/dnsprovider/route53"
	"github.com/kfed-io/kfed/test/route53fake"
)

// client is the real SDK client pointed at the fake, with static
// credentials (the fake checks a SigV4 Authorization header is present).
func client(fake *route53fake.Server) *awsroute53.Client {
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDKFEDTEST", "secret", ""),
	}
	return awsroute53.NewFromConfig(cfg, func(o *awsroute53.Options) { o.BaseEndpoint = aws.String(fake.URL) })
}

// fast is a config for tests: no pacing to speak of, short backoff.
func fast(cfg route53.Config) route53.Config {
	if cfg.RequestsPerSecond == 0 {
		cfg.RequestsPerSecond = 10000
	}
	cfg.BaseBackoff, cfg.MaxBackoff = time.Millisecond, 5*time.Millisecond
	return cfg
}

func setup(t *testing.T, cfg route53.Config) (*route53fake.Server, *route53.Provider, dnsprovider.Zone) {
	t.Helper()
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	id := fake.AddZone("kfed.test", false)
	cfg.ZoneIDs = []string{id}
	p := route53.New(client(fake), fast(cfg))
	zones, err := p.Zones(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(zones) != 1 {
		t.Fatalf("zones = %v", zones)
	}
	return fake, p, zones[0]
}

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) conformance.Target {
		_, p, z := setup(t, route53.Config{})
		return conformance.Target{Provider: p, Zone: z, Weighted: true, Geo: true, ChangesPerRequest: route53.MaxRecordsPerRequest}
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

func TestOneRequestPerZoneWhenChangesFit(t *testing.T) {
	fake, p, z := setup(t, route53.Config{})
	// 200 Services × 3 clusters = 600 record sets + 200 marks: 800 records.
	if _, err := dnsprovider.Sync(context.Background(), p, z, planner(t), services(200)); err != nil {
		t.Fatal(err)
	}
	if got := fake.Batches(); len(got) != 1 || got[0] != 800 {
		t.Errorf("ChangeResourceRecordSets batches = %v, want one of 800 changes", got)
	}
}

func TestChangesSplitAtRoute53Limits(t *testing.T) {
	fake, p, z := setup(t, route53.Config{})
	// 1,000 Services: 3,000 weighted record sets + 1,000 marks of ~90
	// characters each: over 32,000 characters, so the marks decide.
	if _, err := dnsprovider.Sync(context.Background(), p, z, planner(t), services(1000)); err != nil {
		t.Fatal(err)
	}
	batches := fake.Batches()
	total := 0
	for _, b := range batches {
		total += b
	}
	if total != 4000 || len(batches) < 4 {
		t.Fatalf("batches = %v (total %d), want 4,000 changes in several requests", batches, total)
	}
	t.Logf("1,000 Services × 3 clusters: %d changes in %d requests: %v", total, len(batches), batches)

	// Updating every weight: a DELETE and a CREATE each, so twice the records.
	desired := services(1000)
	for i := range desired {
		desired[i].Weight = 2
	}
	before := len(fake.Batches())
	if _, err := dnsprovider.Sync(context.Background(), p, z, planner(t), desired); err != nil {
		t.Fatal(err)
	}
	for _, b := range fake.Batches()[before:] {
		if b > route53fake.MaxRecordsPerRequest {
			t.Errorf("a request of %d changes passed; the fake should refuse it", b)
		}
	}
}

func TestFakeRefusesBatchesOverTheLimits(t *testing.T) {
	fake := route53fake.New()
	defer fake.Close()
	id := fake.AddZone("kfed.test", false)
	c := client(fake)
	upsert := func(n int, value string) error {
		var changes []types.Change
		for i := range n {
			changes = append(changes, types.Change{Action: types.ChangeActionUpsert, ResourceRecordSet: &types.ResourceRecordSet{
				Name: aws.String(fmt.Sprintf("n%d.kfed.test.", i)), Type: types.RRTypeTxt, TTL: aws.Int64(30),
				ResourceRecords: []types.ResourceRecord{{Value: aws.String(value)}},
			}})
		}
		_, err := c.ChangeResourceRecordSets(context.Background(), &awsroute53.ChangeResourceRecordSetsInput{
			HostedZoneId: aws.String(id), ChangeBatch: &types.ChangeBatch{Changes: changes}})
		return err
	}
	tests := []struct {
		name    string
		n       int
		value   string
		wantMsg string
	}{
		{"500 UPSERTs are 1,000 records and pass", 500, `"x"`, ""},
		{"501 UPSERTs count as 1,002 records", 501, `"x"`, "Number of records limit of 1000 exceeded."},
		{"UPSERT values count twice against 32,000 characters", 200, `"` + strings.Repeat("x", 80) + `"`, "RDATA character limit of 32000 exceeded."},
		{"an unquoted TXT value is refused", 1, "x", "InvalidCharacterString"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := upsert(tt.n, tt.value)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var icb *types.InvalidChangeBatch
			if !errors.As(err, &icb) || len(icb.Messages) == 0 || !strings.Contains(icb.Messages[0], tt.wantMsg) {
				t.Fatalf("err = %v, want InvalidChangeBatch %q", err, tt.wantMsg)
			}
		})
	}
}

func TestThrottlingIsRetriedAndCounted(t *testing.T) {
	for _, code := range []string{"Throttling", "PriorRequestNotComplete"} {
		t.Run(code, func(t *testing.T) {
			fake, p, z := setup(t, route53.Config{})
			fake.FailNext(code, code, code)
			before := p.Stats()
			if _, err := dnsprovider.Sync(context.Background(), p, z, planner(t), services(2)); err != nil {
				t.Fatal(err)
			}
			got := p.Stats()
			if got.ThrottledRetries-before.ThrottledRetries != 3 || got.Requests-before.Requests != 5 || got.Changes-before.Changes != 8 {
				t.Errorf("stats went from %+v to %+v; want 3 throttled retries, 5 requests (3 refused, a listing, a change), 8 changes", before, got)
			}
		})
	}
}

func TestServerErrorsAreRetriedWithoutCountingAsThrottling(t *testing.T) {
	fake, p, z := setup(t, route53.Config{})
	fake.FailNext("InternalFailure", "ServiceUnavailable")
	before := p.Stats()
	if _, err := dnsprovider.Sync(context.Background(), p, z, planner(t), services(2)); err != nil {
		t.Fatalf("a sync meeting two passing 5xx answers failed: %v", err)
	}
	got := p.Stats()
	if got.ThrottledRetries != before.ThrottledRetries || got.Requests-before.Requests != 4 || got.Changes-before.Changes != 8 {
		t.Errorf("stats went from %+v to %+v; want no throttled retry, 4 requests (2 refused, a listing, a change), 8 changes", before, got)
	}
}

func TestThrottlingGivesUpAfterMaxRetries(t *testing.T) {
	fake, p, z := setup(t, route53.Config{MaxRetries: 2})
	fake.FailNext("Throttling", "Throttling", "Throttling")
	_, err := z.Records(context.Background())
	if err == nil || !strings.Contains(err.Error(), "Throttling") {
		t.Fatalf("err = %v, want Throttling after 2 retries", err)
	}
	if s := p.Stats(); s.Requests != 4 || s.ThrottledRetries != 2 { // 1 ListHostedZones + 3 tries
		t.Errorf("stats = %+v", s)
	}
}

func TestSharedRateLimiterAvoidsThrottling(t *testing.T) {
	// The account allows 20 requests per second. Three zones synced at once
	// by one provider paced a little below that (other tools share the
	// account) are never throttled; unpaced, the same work is.
	for _, c := range []struct {
		name          string
		perSecond     float64
		wantThrottled bool
	}{
		{"paced below the account's rate", 16, false},
		{"unpaced", 10000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := route53fake.New()
			defer fake.Close()
			var ids []string
			for i := range 3 {
				ids = append(ids, fake.AddZone(fmt.Sprintf("z%d.kfed.test", i), false))
			}
			fake.LimitRate(20)
			p := route53.New(client(fake), fast(route53.Config{ZoneIDs: ids, RequestsPerSecond: c.perSecond}))
			zones, err := p.Zones(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error)
			for _, z := range zones {
				go func() {
					var err error
					for round := range 6 { // each round: a listing and a change
						desired := []dnsprovider.RecordSet{{Name: "s." + z.Name(), Type: "A", Targets: []string{fmt.Sprintf("10.0.0.%d", round+1)}}}
						if _, err = dnsprovider.Sync(context.Background(), p, z, planner(t), desired); err != nil {
							break
						}
					}
					done <- err
				}()
			}
			for range zones {
				// Unpaced, a sync may give up after its retries.
				if err := <-done; err != nil && !c.wantThrottled {
					t.Fatal(err)
				}
			}
			s := p.Stats()
			if (s.ThrottledRetries > 0) != c.wantThrottled {
				t.Errorf("stats = %+v, want throttled retries: %v", s, c.wantThrottled)
			}
			t.Logf("%d requests, %d throttled retries", s.Requests, s.ThrottledRetries)
		})
	}
}

func TestListingFollowsPages(t *testing.T) {
	fake, p, z := setup(t, route53.Config{})
	if _, err := dnsprovider.Sync(context.Background(), p, z, planner(t), services(250)); err != nil {
		t.Fatal(err)
	}
	before := fake.Requests("ListResourceRecordSets")
	rs, err := z.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// 750 weighted record sets + 250 marks (NS and SOA are not listed back).
	if len(rs) != 1000 {
		t.Errorf("listing has %d record sets, want 1000", len(rs))
	}
	if got := fake.Requests("ListResourceRecordSets") - before; got != 4 {
		t.Errorf("listing 1,002 record sets took %d requests, want 4 pages of 300", got)
	}
}

func TestZonesFilterPrivateAndPublic(t *testing.T) {
	fake := route53fake.New()
	defer fake.Close()
	pub := fake.AddZone("example.com", false)
	priv := fake.AddZone("example.com", true)
	for _, c := range []struct {
		typ  string
		want []string
	}{{"", []string{pub, priv}}, {"public", []string{pub}}, {"private", []string{priv}}} {
		zones, err := route53.New(client(fake), route53.Config{ZoneType: c.typ}).Zones(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, z := range zones {
			got = append(got, z.ID())
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("zone type %q: zones %v, want %v", c.typ, got, c.want)
		}
	}
}

func TestLoadBalancerHostnameBecomesWeightedAlias(t *testing.T) {
	fake, p, z := setup(t, route53.Config{})
	desired := []dnsprovider.RecordSet{
		{Name: "web.kfed.test", Type: "A", SetIdentifier: "cluster-1", Weight: 1, Targets: []string{"10.0.0.1"},
			Hostname: "a1b2-123.us-west-2.elb.amazonaws.com"},
		{Name: "web.kfed.test", Type: "A", SetIdentifier: "cluster-2", Weight: 1, Targets: []string{"10.0.0.2"},
			Hostname: "net-lb-9.elb.eu-west-1.amazonaws.com"},
		{Name: "web.kfed.test", Type: "A", SetIdentifier: "cluster-3", Weight: 1, Targets: []string{"10.0.0.3"},
			Hostname: "lb.example.net"}, // not AWS: published as addresses
	}
	if _, err := dnsprovider.Sync(context.Background(), p, z, planner(t), desired); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, rs := range fake.RecordSets(z.ID()) {
		if rs.Type == "A" {
			if rs.AliasTarget != nil {
				got[rs.SetIdentifier] = rs.AliasTarget.HostedZoneID + " " + rs.AliasTarget.DNSName
			} else {
				got[rs.SetIdentifier] = rs.ResourceRecords[0].Value
			}
		}
	}
	want := map[string]string{
		"cluster-1": "Z1H1FL5HABSF5 a1b2-123.us-west-2.elb.amazonaws.com.",
		"cluster-2": "Z2IFOLAFXWLO4F net-lb-9.elb.eu-west-1.amazonaws.com.",
		"cluster-3": "10.0.0.3",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("A record sets = %v, want %v", got, want)
	}
	// Listed back, the aliases plan no change.
	rs, err := z.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if plan := planner(t).Plan(z.Name(), p.Adjust(desired), rs); !plan.Empty() {
		t.Errorf("aliases plan changes after publishing:\n%s", plan)
	}
}

func TestWeightsAbove255AreScaled(t *testing.T) {
	p := route53.New(nil, route53.Config{})
	got := p.Adjust([]dnsprovider.RecordSet{
		{Name: "w.kfed.test", Type: "A", SetIdentifier: "a", Weight: 1000, Targets: []string{"10.0.0.1"}},
		{Name: "w.kfed.test", Type: "A", SetIdentifier: "b", Weight: 500, Targets: []string{"10.0.0.2"}},
		{Name: "w.kfed.test", Type: "A", SetIdentifier: "c", Weight: 1, Targets: []string{"10.0.0.3"}},
		{Name: "w.kfed.test", Type: "A", SetIdentifier: "d", Weight: 0, Targets: []string{"10.0.0.4"}},
	})
	var weights []int64
	for _, rs := range got {
		weights = append(weights, rs.Weight)
	}
	if fmt.Sprint(weights) != "[255 127 1 0]" {
		t.Errorf("weights = %v, want [255 127 1 0]", weights)
	}
}

func TestAllZeroWeightsBecomeEqualShares(t *testing.T) {
	p := route53.New(nil, route53.Config{})
	got := p.Adjust([]dnsprovider.RecordSet{
		{Name: "z.kfed.test", Type: "A", SetIdentifier: "a", Weight: 0, Targets: []string{"10.0.0.1"}},
		{Name: "z.kfed.test", Type: "A", SetIdentifier: "b", Weight: 0, Targets: []string{"10.0.0.2"}},
		{Name: "w.kfed.test", Type: "A", SetIdentifier: "a", Weight: 3, Targets: []string{"10.0.0.1"}},
		{Name: "w.kfed.test", Type: "A", SetIdentifier: "b", Weight: 0, Targets: []string{"10.0.0.2"}},
		{Name: "plain.kfed.test", Type: "A", Targets: []string{"10.0.0.3"}},
	})
	var weights []int64
	for _, rs := range got {
		weights = append(weights, rs.Weight)
	}
	if fmt.Sprint(weights) != "[1 1 3 0 0]" {
		t.Errorf("weights = %v, want [1 1 3 0 0]: all-zero names get 1 each, others keep theirs", weights)
	}
}

// A proximity policy is geoproximity record sets by coordinates, as Route53
// takes them (two decimals, no weight, no bias), and a load balancer's alias
// keeps its place in it. Switching policy is one request.
func TestProximityIsGeoproximityByCoordinates(t *testing.T) {
	fake, p, z := setup(t, route53.Config{})
	desired := func(proximity bool) []dnsprovider.RecordSet {
		out := []dnsprovider.RecordSet{
			{Name: "web.kfed.test", Type: "A", SetIdentifier: "cluster-1", Weight: 4, Targets: []string{"10.0.0.1"},
				Hostname: "a1b2-123.us-west-2.elb.amazonaws.com", Location: &dnsprovider.Location{Latitude: 45.5152, Longitude: -122.6784}},
			{Name: "web.kfed.test", Type: "A", SetIdentifier: "cluster-2", Weight: 1, Targets: []string{"10.0.0.2"},
				Location: &dnsprovider.Location{Latitude: -33.8688, Longitude: 151.2093}},
			{Name: "web.kfed.test", Type: "A", SetIdentifier: "cluster-3", Weight: 0, Targets: []string{"10.0.0.3"},
				Location: &dnsprovider.Location{Latitude: 50.11, Longitude: 8.68}}, // no ready replica: left out
		}
		if !proximity {
			for i := range out {
				out[i].Location = nil
			}
		}
		return out
	}
	ctx := context.Background()
	if _, err := dnsprovider.Sync(ctx, p, z, planner(t), desired(false)); err != nil {
		t.Fatal(err)
	}
	batches := len(fake.Batches())
	if _, err := dnsprovider.Sync(ctx, p, z, planner(t), desired(true)); err != nil {
		t.Fatal(err)
	}
	if got := len(fake.Batches()) - batches; got != 1 {
		t.Errorf("switching to proximity took %d requests, want 1", got)
	}
	got := map[string]string{}
	for _, rs := range fake.RecordSets(z.ID()) {
		if rs.Type != "A" {
			continue
		}
		g := rs.GeoProximityLocation
		if g == nil || g.Coordinates == nil || rs.Weight != nil || g.Bias != nil || g.AWSRegion != "" {
			t.Errorf("%s is not a geoproximity record set by coordinates alone: %+v", rs.SetIdentifier, rs)
			continue
		}
		got[rs.SetIdentifier] = g.Coordinates.Latitude + "," + g.Coordinates.Longitude
	}
	want := map[string]string{"cluster-1": "45.52,-122.68", "cluster-2": "-33.87,151.21"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("geoproximity record sets %v, want %v", got, want)
	}
	rs, err := z.Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if plan := planner(t).Plan(z.Name(), p.Adjust(desired(true)), rs); !plan.Empty() {
		t.Errorf("a second sync plans changes:\n%s", plan)
	}
	if _, err := dnsprovider.Sync(ctx, p, z, planner(t), desired(false)); err != nil {
		t.Fatalf("switching back to weighted: %v", err)
	}
	for _, rs := range fake.RecordSets(z.ID()) {
		if rs.Type == "A" && (rs.GeoProximityLocation != nil || rs.Weight == nil) {
			t.Errorf("after switching back, %s is %+v", rs.SetIdentifier, rs)
		}
	}
}

// A record set of kfed's that someone tuned by hand (a bias, a health
// check) is deleted as it was listed when kfed must change it: deleting it
// as kfed would write it would not match, and Route53 would refuse the whole
// batch, every other name's changes with it, at every sync.
func TestHandTunedRecordSetsAreReplacedAsListed(t *testing.T) {
	fake, p, z := setup(t, route53.Config{})
	ctx := context.Background()
	at := func(lat, lon float64) *dnsprovider.Location {
		return &dnsprovider.Location{Latitude: lat, Longitude: lon}
	}
	desired := []dnsprovider.RecordSet{
		{Name: "web.kfed.test", Type: "A", SetIdentifier: "cluster-1", Weight: 1, Targets: []string{"10.0.0.1"}, Location: at(40.71, -74.01)},
		{Name: "web.kfed.test", Type: "A", SetIdentifier: "cluster-2", Weight: 1, Targets: []string{"10.0.0.2"}, Location: at(50.11, 8.68)},
		{Name: "api.kfed.test", Type: "A", SetIdentifier: "cluster-1", Weight: 1, Targets: []string{"10.0.1.1"}},
		{Name: "api.kfed.test", Type: "A", SetIdentifier: "cluster-2", Weight: 1, Targets: []string{"10.0.1.2"}},
	}
	if _, err := dnsprovider.Sync(ctx, p, z, planner(t), desired); err != nil {
		t.Fatal(err)
	}
	bias := int32(20)
	for _, rs := range fake.RecordSets(z.ID()) {
		switch {
		case rs.Name == "web.kfed.test." && rs.SetIdentifier == "cluster-1":
			rs.GeoProximityLocation.Bias = &bias
			fake.Put(z.ID(), rs)
		case rs.Name == "api.kfed.test." && rs.SetIdentifier == "cluster-1":
			rs.HealthCheckID = "hc-1"
			fake.Put(z.ID(), rs)
		}
	}
	// Unchanged, the tuned record sets stay as they are.
	plan, err := dnsprovider.Sync(ctx, p, z, planner(t), desired)
	if err != nil || !plan.Empty() {
		t.Fatalf("an unchanged desired state planned\n%s(%v)", plan, err)
	}
	// Changed, they are replaced, in one batch with the rest.
	desired[0].Targets, desired[2].Targets = []string{"10.0.0.9"}, []string{"10.0.1.9"}
	desired = append(desired, dnsprovider.RecordSet{Name: "new.kfed.test", Type: "A", Targets: []string{"10.0.2.1"}})
	if _, err := dnsprovider.Sync(ctx, p, z, planner(t), desired); err != nil {
		t.Fatalf("replacing hand-tuned record sets: %v", err)
	}
	for _, rs := range fake.RecordSets(z.ID()) {
		if rs.SetIdentifier == "cluster-1" && (rs.HealthCheckID != "" || (rs.GeoProximityLocation != nil && rs.GeoProximityLocation.Bias != nil)) {
			t.Errorf("%s %s kept what was set by hand: %+v", rs.Name, rs.SetIdentifier, rs)
		}
	}
	if plan, err := dnsprovider.Sync(ctx, p, z, planner(t), desired); err != nil || !plan.Empty() {
		t.Errorf("a second sync planned\n%s(%v)", plan, err)
	}
}
