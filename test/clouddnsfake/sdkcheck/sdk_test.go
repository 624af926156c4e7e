package sdkcheck_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/kfed-io/kfed/test/clouddnsfake"
)

const project = "p"

func newClient(t *testing.T) (*clouddnsfake.Server, *dns.Service) {
	t.Helper()
	fake := clouddnsfake.New()
	t.Cleanup(fake.Close)
	fake.AddZone(project, "example", "example.com.")
	svc, err := dns.NewService(context.Background(), option.WithEndpoint(fake.URL+"/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return fake, svc
}

func a(name string, ttl int64, values ...string) *dns.ResourceRecordSet {
	return &dns.ResourceRecordSet{Name: name, Type: "A", Ttl: ttl, Rrdatas: values}
}

func wrr(name string, weights ...float64) *dns.ResourceRecordSet {
	p := &dns.RRSetRoutingPolicyWrrPolicy{}
	for i, w := range weights {
		p.Items = append(p.Items, &dns.RRSetRoutingPolicyWrrPolicyWrrPolicyItem{Weight: w, Rrdatas: []string{fmt.Sprintf("10.0.0.%d", i+1)}, ForceSendFields: []string{"Weight"}})
	}
	return &dns.ResourceRecordSet{Name: name, Type: "A", Ttl: 30, RoutingPolicy: &dns.RRSetRoutingPolicy{Wrr: p}}
}

func many(n int, value string) []*dns.ResourceRecordSet {
	var out []*dns.ResourceRecordSet
	for i := range n {
		out = append(out, &dns.ResourceRecordSet{Name: fmt.Sprintf("n%d.example.com.", i), Type: "TXT", Ttl: 30, Rrdatas: []string{value}})
	}
	return out
}

func TestChangeValidation(t *testing.T) {
	cname := &dns.ResourceRecordSet{Name: "web.example.com.", Type: "CNAME", Ttl: 30, Rrdatas: []string{"other.example.com."}}
	var hundredAndOne []string
	for i := range 101 {
		hundredAndOne = append(hundredAndOne, fmt.Sprintf("10.1.0.%d", i+1))
	}
	tests := []struct {
		name       string
		change     dns.Change
		wantCode   int // 0: accepted
		wantReason string
	}{
		{"adding an existing record set is refused",
			dns.Change{Additions: []*dns.ResourceRecordSet{a("web.example.com.", 30, "10.0.0.9")}},
			http.StatusConflict, "alreadyExists"},
		{"deleting with other rrdatas is refused",
			dns.Change{Deletions: []*dns.ResourceRecordSet{a("web.example.com.", 30, "10.0.0.2")}},
			http.StatusPreconditionFailed, "conditionNotMet"},
		{"deleting with another TTL is refused",
			dns.Change{Deletions: []*dns.ResourceRecordSet{a("web.example.com.", 60, "10.0.0.1")}},
			http.StatusPreconditionFailed, "conditionNotMet"},
		{"deleting a weighted record set with another weight is refused",
			dns.Change{Deletions: []*dns.ResourceRecordSet{wrr("w.example.com.", 1, 3)}},
			http.StatusPreconditionFailed, "conditionNotMet"},
		{"deleting a record set that does not exist is refused",
			dns.Change{Deletions: []*dns.ResourceRecordSet{a("nope.example.com.", 30, "10.0.0.1")}},
			http.StatusNotFound, "notFound"},
		{"a CNAME beside A records is refused",
			dns.Change{Additions: []*dns.ResourceRecordSet{cname}},
			http.StatusBadRequest, "cnameResourceRecordSetConflict"},
		{"A records replaced by a CNAME in one change are accepted",
			dns.Change{Deletions: []*dns.ResourceRecordSet{a("web.example.com.", 30, "10.0.0.1")}, Additions: []*dns.ResourceRecordSet{cname}},
			0, ""},
		{"a name outside the zone is refused",
			dns.Change{Additions: []*dns.ResourceRecordSet{a("web.example.org.", 30, "10.0.0.1")}},
			http.StatusBadRequest, "invalid"},
		{"a name without its trailing dot is refused",
			dns.Change{Additions: []*dns.ResourceRecordSet{a("new.example.com", 30, "10.0.0.1")}},
			http.StatusBadRequest, "invalid"},
		{"an IPv6 address in an A record is refused",
			dns.Change{Additions: []*dns.ResourceRecordSet{a("v6.example.com.", 30, "2001:db8::1")}},
			http.StatusBadRequest, "invalid"},
		{"a CNAME target without its trailing dot is refused",
			dns.Change{Additions: []*dns.ResourceRecordSet{{Name: "c.example.com.", Type: "CNAME", Ttl: 30, Rrdatas: []string{"web.example.com"}}}},
			http.StatusBadRequest, "invalid"},
		{"a record set with both rrdatas and a routing policy is refused",
			dns.Change{Additions: []*dns.ResourceRecordSet{{Name: "x.example.com.", Type: "A", Ttl: 30, Rrdatas: []string{"10.0.0.1"}, RoutingPolicy: wrr("x", 1).RoutingPolicy}}},
			http.StatusBadRequest, "invalid"},
		{"a weighted record set with the listed weights is deleted",
			dns.Change{Deletions: []*dns.ResourceRecordSet{wrr("w.example.com.", 1, 2)}},
			0, ""},
		{"1,000 additions are accepted",
			dns.Change{Additions: many(1000, `"x"`)},
			0, ""},
		{"1,001 additions are over the limit",
			dns.Change{Additions: many(1001, `"x"`)},
			http.StatusForbidden, "quotaExceeded"},
		{"over 100,000 bytes of record data are over the limit",
			dns.Change{Additions: many(101, strings.Repeat("x", 1000))},
			http.StatusForbidden, "quotaExceeded"},
		{"101 records in one record set are over the limit",
			dns.Change{Additions: []*dns.ResourceRecordSet{a("big.example.com.", 30, hundredAndOne...)}},
			http.StatusForbidden, "quotaExceeded"},
		{"a change that fails half-way applies nothing",
			dns.Change{Additions: []*dns.ResourceRecordSet{a("fresh.example.com.", 30, "10.0.0.1"), a("web.example.com.", 30, "10.0.0.1")}},
			http.StatusConflict, "alreadyExists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, svc := newClient(t)
			setup := &dns.Change{Additions: []*dns.ResourceRecordSet{a("web.example.com.", 30, "10.0.0.1"), wrr("w.example.com.", 1, 2)}}
			if _, err := svc.Changes.Create(project, "example", setup).Do(); err != nil {
				t.Fatal(err)
			}
			before := len(fake.RecordSets(project, "example"))
			_, err := svc.Changes.Create(project, "example", &tt.change).Do()
			if tt.wantCode == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ge *googleapi.Error
			if !errors.As(err, &ge) || ge.Code != tt.wantCode || len(ge.Errors) != 1 || ge.Errors[0].Reason != tt.wantReason {
				t.Fatalf("err = %#v, want a googleapi.Error %d %s", err, tt.wantCode, tt.wantReason)
			}
			if after := len(fake.RecordSets(project, "example")); after != before {
				t.Errorf("a refused change altered the zone: %d record sets, was %d", after, before)
			}
		})
	}
}

func TestWeightedRoundRobinIsListedBack(t *testing.T) {
	_, svc := newClient(t)
	if _, err := svc.Changes.Create(project, "example", &dns.Change{Additions: []*dns.ResourceRecordSet{wrr("w.example.com.", 3, 0, 1)}}).Do(); err != nil {
		t.Fatal(err)
	}
	resp, err := svc.ResourceRecordSets.List(project, "example").Name("w.example.com.").Type("A").Do()
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Rrsets) != 1 || resp.Rrsets[0].RoutingPolicy == nil || resp.Rrsets[0].RoutingPolicy.Wrr == nil {
		t.Fatalf("listing = %+v", resp.Rrsets)
	}
	var got []string
	for _, it := range resp.Rrsets[0].RoutingPolicy.Wrr.Items {
		got = append(got, fmt.Sprint(it.Weight, it.Rrdatas))
	}
	if want := "[3 [10.0.0.1] 0 [10.0.0.2] 1 [10.0.0.3]]"; fmt.Sprint(got) != want {
		t.Errorf("items = %v, want %s", got, want)
	}
}

func TestListingIsPaged(t *testing.T) {
	fake, svc := newClient(t)
	if _, err := svc.Changes.Create(project, "example", &dns.Change{Additions: many(25, `"v"`)}).Do(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		max       int64
		wantPages int
	}{
		{"the server's page size when none is asked", 0, 1},
		{"pages of the size asked", 10, 3},
		{"one record set per page", 1, 27},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fake.Requests("resourceRecordSets.list")
			call := svc.ResourceRecordSets.List(project, "example")
			if tt.max > 0 {
				call.MaxResults(tt.max)
			}
			seen := map[string]bool{}
			err := call.Pages(context.Background(), func(resp *dns.ResourceRecordSetsListResponse) error {
				for _, rs := range resp.Rrsets {
					k := rs.Name + " " + rs.Type
					if seen[k] {
						return fmt.Errorf("%s listed twice", k)
					}
					seen[k] = true
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != 27 { // 25, SOA and NS
				t.Errorf("listed %d record sets, want 27", len(seen))
			}
			if got := fake.Requests("resourceRecordSets.list") - before; got != tt.wantPages {
				t.Errorf("%d pages, want %d", got, tt.wantPages)
			}
		})
	}
}

func TestZonesAndChanges(t *testing.T) {
	fake, svc := newClient(t)
	fake.AddPrivateZone(project, "internal", "example.internal.")
	zones, err := svc.ManagedZones.List(project).Do()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, z := range zones.ManagedZones {
		got = append(got, z.Name+" "+z.DnsName+" "+z.Visibility)
	}
	if want := "[example example.com. public internal example.internal. private]"; fmt.Sprint(got) != want {
		t.Errorf("zones = %v, want %s", got, want)
	}
	byID, err := svc.ManagedZones.Get(project, fmt.Sprint(zones.ManagedZones[1].Id)).Do()
	if err != nil || byID.Name != "internal" {
		t.Errorf("get by ID = %+v, %v", byID, err)
	}
	_, err = svc.ManagedZones.Get(project, "missing").Do()
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != http.StatusNotFound {
		t.Errorf("get of a missing zone: err = %v, want 404", err)
	}

	c, err := svc.Changes.Create(project, "example", &dns.Change{Additions: []*dns.ResourceRecordSet{a("x.example.com.", 30, "10.0.0.1")}}).Do()
	if err != nil || c.Id == "" || c.Status != "pending" {
		t.Fatalf("create = %+v, %v", c, err)
	}
	got2, err := svc.Changes.Get(project, "example", c.Id).Do()
	if err != nil || got2.Status != "done" || len(got2.Additions) != 1 {
		t.Errorf("get = %+v, %v", got2, err)
	}
}

func TestFailuresCanBeSwitchedOn(t *testing.T) {
	tests := []struct {
		name       string
		fail       func(*clouddnsfake.Server)
		wantCode   int
		wantReason string
	}{
		{"the next request is rate limited", func(s *clouddnsfake.Server) { s.FailNext(429) }, 429, "rateLimitExceeded"},
		{"the next request meets a backend error", func(s *clouddnsfake.Server) { s.FailNext(503) }, 503, "backendError"},
		{"requests beyond a rate are limited", func(s *clouddnsfake.Server) { s.LimitRate(1) }, 429, "rateLimitExceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, svc := newClient(t)
			tt.fail(fake)
			var err error
			for range 3 {
				if _, err = svc.ManagedZones.List(project).Do(); err != nil {
					break
				}
			}
			var ge *googleapi.Error
			if !errors.As(err, &ge) || ge.Code != tt.wantCode || len(ge.Errors) == 0 || ge.Errors[0].Reason != tt.wantReason {
				t.Fatalf("err = %v, want %d %s", err, tt.wantCode, tt.wantReason)
			}
		})
	}
}

func TestRecordSetsPerZoneAreLimited(t *testing.T) {
	fake, svc := newClient(t)
	fake.LimitRecordSets(12) // SOA, NS and 10 more
	if _, err := svc.Changes.Create(project, "example", &dns.Change{Additions: many(10, `"x"`)}).Do(); err != nil {
		t.Fatal(err)
	}
	_, err := svc.Changes.Create(project, "example", &dns.Change{Additions: []*dns.ResourceRecordSet{a("one-more.example.com.", 30, "10.0.0.1")}}).Do()
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != http.StatusForbidden || ge.Errors[0].Reason != "quotaExceeded" {
		t.Fatalf("err = %v, want 403 quotaExceeded", err)
	}
}

func TestFailRandomlyRefusesAShareOfRequestsAndChangesNothing(t *testing.T) {
	reasons := map[int]string{429: "rateLimitExceeded", 500: "internalError", 503: "backendError"}
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
			fake, svc := newClient(t)
			if tt.share > 0 {
				fake.FailRandomly(tt.share, 429, 500, 503)
			}
			refused, created := 0, 0
			for i := range 400 {
				_, err := svc.Changes.Create(project, "example", &dns.Change{Additions: []*dns.ResourceRecordSet{a(fmt.Sprintf("n%d.example.com.", i), 30, "10.0.0.1")}}).Do()
				if err == nil {
					created++
					continue
				}
				var ge *googleapi.Error
				if !errors.As(err, &ge) || reasons[ge.Code] == "" || len(ge.Errors) == 0 || ge.Errors[0].Reason != reasons[ge.Code] {
					t.Fatalf("refusal %v: want 429, 500 or 503 with its reason", err)
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
			if got := len(fake.RecordSets(project, "example")) - 2; got != created { // SOA and NS
				t.Errorf("zone holds %d record sets, %d were accepted: a refused request changed the zone", got, created)
			}
		})
	}
}

// geoRRSet is a geo policy at name with an item per location, each holding
// one address.
func geoRRSet(name string, locations ...string) *dns.ResourceRecordSet {
	p := &dns.RRSetRoutingPolicyGeoPolicy{}
	for i, l := range locations {
		p.Items = append(p.Items, &dns.RRSetRoutingPolicyGeoPolicyGeoPolicyItem{Location: l, Rrdatas: []string{fmt.Sprintf("10.0.0.%d", i+1)}})
	}
	return &dns.ResourceRecordSet{Name: name, Type: "A", Ttl: 30, RoutingPolicy: &dns.RRSetRoutingPolicy{Geo: p}}
}

func TestGeoPolicyValidation(t *testing.T) {
	both := geoRRSet("g.example.com.", "us-east1")
	both.RoutingPolicy.Wrr = wrr("g.example.com.", 1).RoutingPolicy.Wrr
	emptyItem := geoRRSet("g.example.com.", "us-east1")
	emptyItem.RoutingPolicy.Geo.Items[0].Rrdatas = nil
	tests := []struct {
		name    string
		rs      *dns.ResourceRecordSet
		wantMsg string // empty: accepted
	}{
		{"an item per region is accepted", geoRRSet("g.example.com.", "us-east1", "europe-west1", "asia-northeast1"), ""},
		{"an AWS region name is refused", geoRRSet("g.example.com.", "us-east-1"), "is not a Google Cloud region"},
		{"a made-up region is refused", geoRRSet("g.example.com.", "mars-north1"), "is not a Google Cloud region"},
		{"two items for one region are refused", geoRRSet("g.example.com.", "us-east1", "us-east1"), "more than one item"},
		{"geo and wrr at once are refused", both, "exactly one of 'wrr', 'geo'"},
		{"an item without records is refused", emptyItem, "'routingPolicy.geo.items[0].rrdatas' is empty"},
		{"no items are refused", geoRRSet("g.example.com."), "'routingPolicy.geo.items' is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, svc := newClient(t)
			_, err := svc.Changes.Create(project, "example", &dns.Change{Additions: []*dns.ResourceRecordSet{tt.rs}}).Do()
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ge *googleapi.Error
			if !errors.As(err, &ge) || ge.Code != http.StatusBadRequest || !strings.Contains(ge.Message, tt.wantMsg) {
				t.Fatalf("err = %v, want 400 saying %q", err, tt.wantMsg)
			}
			for _, rs := range fake.RecordSets(project, "example") {
				if rs.Name == "g.example.com." {
					t.Errorf("a refused change added %+v", rs)
				}
			}
		})
	}
}

func TestGeoPolicyIsListedBackAndReplacedWholly(t *testing.T) {
	_, svc := newClient(t)
	w := wrr("g.example.com.", 1, 2)
	g := geoRRSet("g.example.com.", "us-east1", "europe-west1")
	if _, err := svc.Changes.Create(project, "example", &dns.Change{Additions: []*dns.ResourceRecordSet{w}}).Do(); err != nil {
		t.Fatal(err)
	}
	// The weighted record set is replaced by the geo one in one change.
	if _, err := svc.Changes.Create(project, "example", &dns.Change{Deletions: []*dns.ResourceRecordSet{w}, Additions: []*dns.ResourceRecordSet{g}}).Do(); err != nil {
		t.Fatal(err)
	}
	resp, err := svc.ResourceRecordSets.List(project, "example").Name("g.example.com.").Type("A").Do()
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Rrsets) != 1 || resp.Rrsets[0].RoutingPolicy == nil || resp.Rrsets[0].RoutingPolicy.Geo == nil || resp.Rrsets[0].RoutingPolicy.Wrr != nil {
		t.Fatalf("listing = %+v", resp.Rrsets)
	}
	var got []string
	for _, it := range resp.Rrsets[0].RoutingPolicy.Geo.Items {
		got = append(got, it.Location+" "+fmt.Sprint(it.Rrdatas))
	}
	if want := "[us-east1 [10.0.0.1] europe-west1 [10.0.0.2]]"; fmt.Sprint(got) != want {
		t.Errorf("items = %v, want %s", got, want)
	}
	// A deletion naming other items does not match.
	stale := geoRRSet("g.example.com.", "us-east1", "europe-west3")
	var ge *googleapi.Error
	if _, err := svc.Changes.Create(project, "example", &dns.Change{Deletions: []*dns.ResourceRecordSet{stale}}).Do(); !errors.As(err, &ge) || ge.Code != http.StatusPreconditionFailed {
		t.Errorf("deleting with other items: %v, want 412", err)
	}
}
