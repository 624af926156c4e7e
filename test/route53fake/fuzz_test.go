package route53fake

import (
	"bytes"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fuzzServer is a fake with one zone holding a record set kfed does not own,
// built without a listener: the fuzz targets call its handler directly.
func fuzzServer() (*Server, string) {
	s := &Server{zones: map[string]*zone{}, changes: map[string]time.Time{}, requests: map[string]int{}}
	id := s.AddZone("kfed.test", false)
	ttl, w := int64(300), int64(10)
	s.Put(id, RecordSet{Name: "other.kfed.test", Type: "A", TTL: &ttl, ResourceRecords: []ResourceRecord{{Value: "192.0.2.1"}}})
	s.Put(id, RecordSet{Name: "web.kfed.test", Type: "A", SetIdentifier: "c1", Weight: &w, TTL: &ttl, ResourceRecords: []ResourceRecord{{Value: "192.0.2.2"}}})
	return s, id
}

func call(s *Server, method, target string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, bytes.NewReader(body))
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=fuzz")
	w := httptest.NewRecorder()
	s.serve(w, r)
	return w
}

// errorResponse is what every refusal must parse as: Route53's
// ErrorResponse or its InvalidChangeBatch.
type errorResponse struct {
	XMLName  xml.Name
	Code     string   `xml:"Error>Code"`
	Messages []string `xml:"Messages>Message"`
}

// checkRefusal fails unless w is a 4xx whose body is a well-formed Route53
// error naming what went wrong.
func checkRefusal(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	if w.Code < 400 || w.Code >= 500 {
		t.Fatalf("refusal with status %d", w.Code)
	}
	var e errorResponse
	if err := xml.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body does not parse: %v\n%s", err, w.Body)
	}
	switch e.XMLName.Local {
	case "ErrorResponse":
		if e.Code == "" {
			t.Fatalf("ErrorResponse without a code:\n%s", w.Body)
		}
	case "InvalidChangeBatch":
		if len(e.Messages) == 0 {
			t.Fatalf("InvalidChangeBatch without a message:\n%s", w.Body)
		}
	default:
		t.Fatalf("error body is a %s:\n%s", e.XMLName.Local, w.Body)
	}
}

// FuzzChangeResourceRecordSets posts arbitrary bodies to
// ChangeResourceRecordSets. The handler must not panic; a refused batch
// answers a well-formed Route53 error and leaves the zone as it was (batches
// are all-or-nothing); an accepted one answers a ChangeInfo, leaves only
// names inside the zone, and leaves a zone that lists back, through the
// XML, exactly as stored.
func FuzzChangeResourceRecordSets(f *testing.F) {
	for _, body := range []string{
		`<ChangeResourceRecordSetsRequest xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><ChangeBatch><Changes>
<Change><Action>CREATE</Action><ResourceRecordSet><Name>new.kfed.test.</Name><Type>A</Type><TTL>30</TTL><ResourceRecords><ResourceRecord><Value>192.0.2.9</Value></ResourceRecord></ResourceRecords></ResourceRecordSet></Change>
<Change><Action>UPSERT</Action><ResourceRecordSet><Name>txt.kfed.test</Name><Type>TXT</Type><TTL>30</TTL><ResourceRecords><ResourceRecord><Value>"heritage=kfed"</Value></ResourceRecord></ResourceRecords></ResourceRecordSet></Change>
</Changes></ChangeBatch></ChangeResourceRecordSetsRequest>`,
		`<ChangeResourceRecordSetsRequest><ChangeBatch><Changes><Change><Action>DELETE</Action><ResourceRecordSet><Name>other.kfed.test.</Name><Type>A</Type><TTL>300</TTL><ResourceRecords><ResourceRecord><Value>192.0.2.1</Value></ResourceRecord></ResourceRecords></ResourceRecordSet></Change></Changes></ChangeBatch></ChangeResourceRecordSetsRequest>`,
		`<ChangeResourceRecordSetsRequest><ChangeBatch><Changes><Change><Action>UPSERT</Action><ResourceRecordSet><Name>web.kfed.test.</Name><Type>A</Type><SetIdentifier>c2</SetIdentifier><Weight>255</Weight><TTL>30</TTL><ResourceRecords><ResourceRecord><Value>192.0.2.3</Value></ResourceRecord></ResourceRecords></ResourceRecordSet></Change>
<Change><Action>CREATE</Action><ResourceRecordSet><Name>web.kfed.test.</Name><Type>A</Type><TTL>30</TTL><ResourceRecords><ResourceRecord><Value>192.0.2.4</Value></ResourceRecord></ResourceRecords></ResourceRecordSet></Change></Changes></ChangeBatch></ChangeResourceRecordSetsRequest>`,
		`<ChangeResourceRecordSetsRequest><ChangeBatch><Changes><Change><Action>CREATE</Action><ResourceRecordSet><Name>*.kfed.test.</Name><Type>CNAME</Type><AliasTarget><HostedZoneId>Z1</HostedZoneId><DNSName>elb.example.org</DNSName><EvaluateTargetHealth>true</EvaluateTargetHealth></AliasTarget></ResourceRecordSet></Change>
<Change><Action>CREATE</Action><ResourceRecordSet><Name>out.example.org.</Name><Type>AAAA</Type><TTL>1</TTL><ResourceRecords><ResourceRecord><Value>::1</Value></ResourceRecord></ResourceRecords></ResourceRecordSet></Change></Changes></ChangeBatch></ChangeResourceRecordSetsRequest>`,
		`<ChangeResourceRecordSetsRequest><ChangeBatch><Changes></Changes></ChangeBatch></ChangeResourceRecordSetsRequest>`,
		`<ChangeResourceRecordSetsRequest><ChangeBatch><Changes><Change><Action>MOVE</Action>`,
		``,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s, id := fuzzServer()
		before := s.RecordSets(id)
		w := call(s, http.MethodPost, apiPrefix+"/hostedzone/"+id+"/rrset", body)
		after := s.RecordSets(id)
		if w.Code != http.StatusOK {
			checkRefusal(t, w)
			if !reflect.DeepEqual(after, before) || len(s.Batches()) != 0 {
				t.Fatalf("a refused batch changed the zone:\nbefore %v\nafter  %v", before, after)
			}
			return
		}
		var ok struct {
			XMLName xml.Name
			ID      string `xml:"ChangeInfo>Id"`
		}
		if err := xml.Unmarshal(w.Body.Bytes(), &ok); err != nil || ok.XMLName.Local != "ChangeResourceRecordSetsResponse" || !strings.HasPrefix(ok.ID, "/change/") {
			t.Fatalf("accepted batch answers %v:\n%s", err, w.Body)
		}
		for _, rs := range after {
			if rs.Name != "kfed.test." && !strings.HasSuffix(rs.Name, ".kfed.test.") {
				t.Fatalf("accepted batch left %s in zone kfed.test.", rs.Name)
			}
		}
		checkListing(t, s, id, after)
	})
}

// checkListing lists the zone through the handler and checks that the XML
// reads back as the record sets stored.
func checkListing(t *testing.T, s *Server, id string, want []RecordSet) {
	t.Helper()
	var got []RecordSet
	q := url.Values{"maxitems": {"300"}}
	for page := 0; ; page++ {
		w := call(s, http.MethodGet, apiPrefix+"/hostedzone/"+id+"/rrset?"+q.Encode(), nil)
		if w.Code != http.StatusOK {
			t.Fatalf("listing answers %d:\n%s", w.Code, w.Body)
		}
		var resp struct {
			Sets                 []RecordSet `xml:"ResourceRecordSets>ResourceRecordSet"`
			IsTruncated          bool
			NextRecordName       string
			NextRecordType       string
			NextRecordIdentifier string
		}
		if err := xml.Unmarshal(w.Body.Bytes(), &resp); err != nil {
			t.Fatalf("listing does not parse: %v\n%s", err, w.Body)
		}
		got = append(got, resp.Sets...)
		if !resp.IsTruncated {
			break
		}
		if page > len(want) {
			t.Fatalf("listing does not end")
		}
		q = url.Values{"maxitems": {"300"}, "name": {resp.NextRecordName}, "type": {resp.NextRecordType}, "identifier": {resp.NextRecordIdentifier}}
	}
	if len(got) != len(want) {
		t.Fatalf("listing holds %d record sets, the zone %d", len(got), len(want))
	}
	for i := range want {
		if !sameSet(got[i], want[i]) {
			t.Fatalf("record set %d lists as %+v, stored as %+v", i, got[i], want[i])
		}
	}
}

// sameSet compares record sets as they travel in XML, where an empty list
// and none, or text that XML cannot carry, look alike.
func sameSet(a, b RecordSet) bool {
	a.ResourceRecords, b.ResourceRecords = cleanRecords(a.ResourceRecords), cleanRecords(b.ResourceRecords)
	if a.AliasTarget != nil && b.AliasTarget != nil {
		x, y := *a.AliasTarget, *b.AliasTarget
		x.HostedZoneID, y.HostedZoneID = xmlText(x.HostedZoneID), xmlText(y.HostedZoneID)
		x.DNSName, y.DNSName = xmlText(x.DNSName), xmlText(y.DNSName)
		a.AliasTarget, b.AliasTarget = &x, &y
	}
	for _, rs := range []*RecordSet{&a, &b} {
		rs.Name, rs.Type, rs.SetIdentifier = xmlText(rs.Name), xmlText(rs.Type), xmlText(rs.SetIdentifier)
		rs.Region, rs.Failover, rs.HealthCheckID = xmlText(rs.Region), xmlText(rs.Failover), xmlText(rs.HealthCheckID)
	}
	return reflect.DeepEqual(a, b)
}

func cleanRecords(rrs []ResourceRecord) []ResourceRecord {
	var out []ResourceRecord
	for _, r := range rrs {
		out = append(out, ResourceRecord{Value: xmlText(r.Value)})
	}
	return out
}

// xmlText is s as it reads back from XML: characters XML 1.0 cannot hold are
// replaced, and a carriage return reads as a newline.
func xmlText(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	var back struct {
		V string `xml:"v"`
	}
	_ = xml.Unmarshal([]byte("<x><v>"+b.String()+"</v></x>"), &back)
	return back.V
}

// FuzzListResourceRecordSets lists the zone with arbitrary query
// parameters: the handler must not panic, must answer a listing or a
// well-formed error, must never change the zone, and a page holds at most
// the items asked for, in Route53's order.
func FuzzListResourceRecordSets(f *testing.F) {
	f.Add("web.kfed.test", "A", "c1", "1")
	f.Add("", "A", "", "0")
	f.Add("ZZZ.", "", "", "-3")
	f.Add("*.kfed.test", "TXT", "x", "100000")
	f.Fuzz(func(t *testing.T, name, typ, identifier, maxItems string) {
		s, id := fuzzServer()
		before := s.RecordSets(id)
		q := url.Values{"name": {name}, "type": {typ}, "identifier": {identifier}, "maxitems": {maxItems}}
		w := call(s, http.MethodGet, apiPrefix+"/hostedzone/"+id+"/rrset?"+q.Encode(), nil)
		if !reflect.DeepEqual(s.RecordSets(id), before) {
			t.Fatalf("listing changed the zone")
		}
		if w.Code != http.StatusOK {
			checkRefusal(t, w)
			return
		}
		var resp struct {
			Sets     []RecordSet `xml:"ResourceRecordSets>ResourceRecordSet"`
			MaxItems int
		}
		if err := xml.Unmarshal(w.Body.Bytes(), &resp); err != nil {
			t.Fatalf("listing does not parse: %v\n%s", err, w.Body)
		}
		if resp.MaxItems < 1 || len(resp.Sets) > resp.MaxItems {
			t.Fatalf("page of %d with MaxItems %d", len(resp.Sets), resp.MaxItems)
		}
		for i := 1; i < len(resp.Sets); i++ {
			a, b := resp.Sets[i-1], resp.Sets[i]
			if compareKey(setKey{a.Name, a.Type, a.SetIdentifier}, setKey{b.Name, b.Type, b.SetIdentifier}) >= 0 {
				t.Fatalf("listing out of order: %s before %s", describe(a), describe(b))
			}
		}
	})
}
