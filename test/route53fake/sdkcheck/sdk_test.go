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
