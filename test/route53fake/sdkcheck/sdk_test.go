package sdkcheck_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"

	"github.com/kfed-io/kfed/test/route53fake"
)

func newClient(t *testing.T) (*route53fake.Server, *route53.Client, string) {
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	id := fake.AddZone("example.com", false)
	c := route53.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")},
		func(o *route53.Options) { o.BaseEndpoint = aws.String(fake.URL); o.Retryer = aws.NopRetryer{} })
	return fake, c, id
}

func a(name string, set string, weight int64, values ...string) *types.ResourceRecordSet {
	rs := &types.ResourceRecordSet{Name: aws.String(name), Type: types.RRTypeA, TTL: aws.Int64(30)}
	if set != "" {
		rs.SetIdentifier, rs.Weight = aws.String(set), aws.Int64(weight)
	}
	for _, v := range values {
		rs.ResourceRecords = append(rs.ResourceRecords, types.ResourceRecord{Value: aws.String(v)})
	}
	return rs
}

func change(ctx context.Context, c *route53.Client, id string, changes ...types.Change) error {
	_, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(id), ChangeBatch: &types.ChangeBatch{Changes: changes}})
	return err
}

func TestChangeBatchValidation(t *testing.T) {
	ctx := context.Background()
	cname := &types.ResourceRecordSet{Name: aws.String("web.example.com"), Type: types.RRTypeCname, TTL: aws.Int64(30),
		ResourceRecords: []types.ResourceRecord{{Value: aws.String("other.example.com")}}}
	tests := []struct {
		name    string
		batch   []types.Change
		wantMsg string // empty: accepted
	}{
		{"creating an existing record set is refused",
			[]types.Change{{Action: types.ChangeActionCreate, ResourceRecordSet: a("web.example.com", "", 0, "10.0.0.1")}},
			"Tried to create resource record set [name='web.example.com.', type='A'] but it already exists"},
		{"deleting with other values is refused",
			[]types.Change{{Action: types.ChangeActionDelete, ResourceRecordSet: a("web.example.com", "", 0, "10.0.0.2")}},
			"but the values provided do not match the current values"},
		{"deleting a missing record set is refused",
			[]types.Change{{Action: types.ChangeActionDelete, ResourceRecordSet: a("nope.example.com", "", 0, "10.0.0.2")}},
			"but it was not found"},
		{"a CNAME beside A records is refused",
			[]types.Change{{Action: types.ChangeActionCreate, ResourceRecordSet: cname}},
			"RRSet of type CNAME with DNS name web.example.com. is not permitted"},
		{"a weighted set beside a plain one is refused",
			[]types.Change{{Action: types.ChangeActionCreate, ResourceRecordSet: a("web.example.com", "c1", 1, "10.0.0.3")}},
			"cannot be created as a non-weighted set exists"},
		{"a name outside the zone is refused",
			[]types.Change{{Action: types.ChangeActionCreate, ResourceRecordSet: a("web.example.org", "", 0, "10.0.0.3")}},
			"is not permitted in zone example.com."},
		{"an IPv6 address in an A record is refused",
			[]types.Change{{Action: types.ChangeActionCreate, ResourceRecordSet: a("v6.example.com", "", 0, "2001:db8::1")}},
			"ARRDATAIllegalIPv4Address"},
		{"A records replaced by a CNAME in one batch are accepted",
			[]types.Change{{Action: types.ChangeActionDelete, ResourceRecordSet: a("web.example.com", "", 0, "10.0.0.1")}, {Action: types.ChangeActionCreate, ResourceRecordSet: cname}},
			""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, c, id := newClient(t)
			if err := change(ctx, c, id, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: a("web.example.com", "", 0, "10.0.0.1")}); err != nil {
				t.Fatal(err)
			}
			before := fake.RecordSets(id)
			err := change(ctx, c, id, tt.batch...)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var icb *types.InvalidChangeBatch
			if !errors.As(err, &icb) || !strings.Contains(strings.Join(icb.Messages, "\n"), tt.wantMsg) {
				t.Fatalf("err = %v, want InvalidChangeBatch with %q", err, tt.wantMsg)
			}
			if after := fake.RecordSets(id); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("a refused batch changed the zone")
			}
		})
	}
}

func TestBatchIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	fake, c, id := newClient(t)
	err := change(ctx, c, id,
		types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: a("ok.example.com", "", 0, "10.0.0.1")},
		types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: a("missing.example.com", "", 0, "10.0.0.1")})
	if err == nil {
		t.Fatal("batch with a bad change accepted")
	}
	if got := len(fake.RecordSets(id)); got != 2 { // SOA and NS
		t.Errorf("zone has %d record sets after a refused batch, want 2", got)
	}
}

func TestThrottlingCodesReachTheSDK(t *testing.T) {
	fake, c, _ := newClient(t)
	fake.FailNext("Throttling", "PriorRequestNotComplete")
	for _, want := range []string{"Throttling", "PriorRequestNotComplete"} {
		_, err := c.ListHostedZones(context.Background(), &route53.ListHostedZonesInput{})
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != want {
			t.Errorf("err = %v, want API error %s", err, want)
		}
	}
	if _, err := c.ListHostedZones(context.Background(), &route53.ListHostedZonesInput{}); err != nil {
		t.Errorf("after the switched-on failures: %v", err)
	}
}

func TestGetChangeReportsInSync(t *testing.T) {
	ctx := context.Background()
	_, c, id := newClient(t)
	out, err := c.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(id),
		ChangeBatch: &types.ChangeBatch{Changes: []types.Change{{Action: types.ChangeActionUpsert, ResourceRecordSet: a("x.example.com", "", 0, "10.0.0.1")}}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.ChangeInfo.Status != types.ChangeStatusPending {
		t.Errorf("status = %s, want PENDING", out.ChangeInfo.Status)
	}
	got, err := c.GetChange(ctx, &route53.GetChangeInput{Id: out.ChangeInfo.Id})
	if err != nil {
		t.Fatal(err)
	}
	if got.ChangeInfo.Status != types.ChangeStatusInsync {
		t.Errorf("status = %s, want INSYNC", got.ChangeInfo.Status)
	}
}

func TestListHostedZonesPages(t *testing.T) {
	fake, c, _ := newClient(t)
	for i := range 150 {
		fake.AddZone(fmt.Sprintf("z%d.example.com", i), i%2 == 0)
	}
	n, pages := 0, 0
	p := route53.NewListHostedZonesPaginator(c, &route53.ListHostedZonesInput{})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += len(out.HostedZones)
		pages++
	}
	if n != 151 || pages != 2 {
		t.Errorf("listed %d zones in %d pages, want 151 in 2", n, pages)
	}
}

func TestFailRandomlyRefusesAShareOfRequestsAndChangesNothing(t *testing.T) {
	codes := []string{"Throttling", "PriorRequestNotComplete", "InternalFailure", "ServiceUnavailable"}
	status := map[string]int{"Throttling": 400, "PriorRequestNotComplete": 400, "InternalFailure": 500, "ServiceUnavailable": 503}
	tests := []struct {
		name     string
		share    float64
		min, max int // refused of 400 requests
	}{
		{"off by default", 0, 0, 0},
		{"half of the requests are refused", 0.5, 150, 250},
		{"every request is refused", 1, 400, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, c, id := newClient(t)
			if tt.share > 0 {
				fake.FailRandomly(tt.share, codes...)
			}
			ctx := context.Background()
			refused, created := 0, 0
			for i := range 400 {
				err := change(ctx, c, id, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: a(fmt.Sprintf("n%d.example.com", i), "", 0, "10.0.0.1")})
				if err == nil {
					created++
					continue
				}
				var re interface{ HTTPStatusCode() int }
				var ae smithy.APIError
				if !errors.As(err, &ae) || !errors.As(err, &re) || status[ae.ErrorCode()] == 0 || re.HTTPStatusCode() != status[ae.ErrorCode()] {
					t.Fatalf("refusal %v: want one of %v with its HTTP status", err, codes)
				}
				refused++
			}
			if refused < tt.min || refused > tt.max {
				t.Errorf("%d of 400 requests refused, want %d to %d", refused, tt.min, tt.max)
			}
			faults := 0
			for _, n := range fake.Faults() {
				faults += n
			}
			if faults != refused {
				t.Errorf("Faults counts %d, the client saw %d", faults, refused)
			}
			if got := len(fake.RecordSets(id)) - 2; got != created { // SOA and NS
				t.Errorf("zone holds %d record sets, %d were accepted: a refused request changed the zone", got, created)
			}
		})
	}
}

// messages are an InvalidChangeBatch's messages, or the error.
func messages(err error) string {
	var icb *types.InvalidChangeBatch
	if errors.As(err, &icb) {
		return strings.Join(icb.Messages, "\n")
	}
	return fmt.Sprint(err)
}

// geo is a geoproximity A record set at web.example.com.
func geo(set string, loc types.GeoProximityLocation, values ...string) *types.ResourceRecordSet {
	rs := a("web.example.com", "", 0, values...)
	rs.SetIdentifier, rs.GeoProximityLocation = aws.String(set), &loc
	return rs
}

func at(lat, lon string) types.GeoProximityLocation {
	return types.GeoProximityLocation{Coordinates: &types.Coordinates{Latitude: aws.String(lat), Longitude: aws.String(lon)}}
}

func TestGeoProximityValidation(t *testing.T) {
	ctx := context.Background()
	create := func(rs *types.ResourceRecordSet) types.Change {
		return types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: rs}
	}
	weighted := a("web.example.com", "w1", 1, "10.0.0.9")
	tests := []struct {
		name    string
		batch   []types.Change
		wantMsg string // empty: accepted
	}{
		{"two clusters by their coordinates are accepted",
			[]types.Change{create(geo("c1", at("40.71", "-74.01"), "10.0.0.1")), create(geo("c2", at("-33.87", "151.21"), "10.0.0.2"))}, ""},
		{"an AWS region with a bias is accepted",
			[]types.Change{create(geo("c1", types.GeoProximityLocation{AWSRegion: aws.String("us-east-1"), Bias: aws.Int32(-20)}, "10.0.0.1"))}, ""},
		{"extremes are accepted",
			[]types.Change{create(geo("c1", at("-90", "180.00"), "10.0.0.1")), create(geo("c2", at("+90.0", "-180"), "10.0.0.2"))}, ""},
		{"coordinates beside an AWS region are refused",
			[]types.Change{create(geo("c1", types.GeoProximityLocation{AWSRegion: aws.String("us-east-1"), Coordinates: at("1", "2").Coordinates}, "10.0.0.1"))},
			"Expected exactly one of [AWSRegion, LocalZoneGroup, Coordinates]"},
		{"a location without a place is refused",
			[]types.Change{create(geo("c1", types.GeoProximityLocation{Bias: aws.Int32(5)}, "10.0.0.1"))},
			"Expected exactly one of [AWSRegion, LocalZoneGroup, Coordinates]"},
		{"three decimals are refused",
			[]types.Change{create(geo("c1", at("40.712", "-74.01"), "10.0.0.1"))}, "failed to satisfy constraint"},
		{"an exponent is refused",
			[]types.Change{create(geo("c1", at("4e1", "-74.01"), "10.0.0.1"))}, "failed to satisfy constraint"},
		{"a latitude beyond the pole is refused",
			[]types.Change{create(geo("c1", at("91", "0"), "10.0.0.1"))}, "is not within -90 and 90"},
		{"a longitude beyond 180 is refused",
			[]types.Change{create(geo("c1", at("0", "180.5"), "10.0.0.1"))}, "is not within -180 and 180"},
		{"a bias over 99 is refused",
			[]types.Change{create(geo("c1", types.GeoProximityLocation{AWSRegion: aws.String("us-east-1"), Bias: aws.Int32(100)}, "10.0.0.1"))}, "between -99 and 99"},
		{"a weight beside a location is refused",
			[]types.Change{create(func() *types.ResourceRecordSet {
				rs := geo("c1", at("1", "2"), "10.0.0.1")
				rs.Weight = aws.Int64(1)
				return rs
			}())},
			"needs exactly one routing policy"},
		{"a duplicate set identifier is refused",
			[]types.Change{create(geo("c1", at("1", "2"), "10.0.0.1")), create(geo("c1", at("3", "4"), "10.0.0.2"))}, "but it already exists"},
		{"a geoproximity set beside a weighted one is refused",
			[]types.Change{create(weighted), create(geo("c1", at("1", "2"), "10.0.0.1"))}, "use a different routing policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, c, id := newClient(t)
			err := change(ctx, c, id, tt.batch...)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatal(err)
				}
				var geos int
				for _, rs := range fake.RecordSets(id) {
					if rs.GeoProximityLocation != nil {
						geos++
					}
				}
				if geos != len(tt.batch) {
					t.Errorf("zone holds %d geoproximity record sets, want %d", geos, len(tt.batch))
				}
				return
			}
			if err == nil || !strings.Contains(messages(err), tt.wantMsg) {
				t.Fatalf("err = %v (%s), want one saying %q", err, messages(err), tt.wantMsg)
			}
			if n := len(fake.RecordSets(id)); n != 2 {
				t.Errorf("a refused batch left %d record sets, want SOA and NS", n)
			}
		})
	}
}

// A policy changes in one batch: Route53 checks the zone as the whole batch
// leaves it.
func TestRoutingPolicyIsReplacedInOneBatch(t *testing.T) {
	ctx := context.Background()
	_, c, id := newClient(t)
	w1, w2 := a("web.example.com", "c1", 1, "10.0.0.1"), a("web.example.com", "c2", 1, "10.0.0.2")
	if err := change(ctx, c, id, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: w1}, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: w2}); err != nil {
		t.Fatal(err)
	}
	g1, g2 := geo("c1", at("40.71", "-74.01"), "10.0.0.1"), geo("c2", at("50.11", "8.68"), "10.0.0.2")
	if err := change(ctx, c, id, types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: w1}, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: g1}); err == nil {
		t.Fatal("half a change of policy accepted")
	}
	if err := change(ctx, c, id,
		types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: w1}, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: g1},
		types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: w2}, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: g2}); err != nil {
		t.Fatal(err)
	}
	out, err := c.ListResourceRecordSets(ctx, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(id)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rs := range out.ResourceRecordSets {
		if g := rs.GeoProximityLocation; g != nil && g.Coordinates != nil {
			got = append(got, aws.ToString(rs.SetIdentifier)+" "+aws.ToString(g.Coordinates.Latitude)+","+aws.ToString(g.Coordinates.Longitude))
		}
		if rs.Weight != nil {
			t.Errorf("weighted record set %s left", aws.ToString(rs.SetIdentifier))
		}
	}
	if want := "[c1 40.71,-74.01 c2 50.11,8.68]"; fmt.Sprint(got) != want {
		t.Errorf("listed %v, want %s", got, want)
	}
	// Deleting with other coordinates is refused, as with other values.
	stale := geo("c1", at("40.7", "-74.01"), "10.0.0.1")
	if err := change(ctx, c, id, types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: stale}); err == nil || !strings.Contains(messages(err), "do not match") {
		t.Errorf("deleting with other coordinates: %v", err)
	}
}
