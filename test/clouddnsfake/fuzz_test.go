package clouddnsfake

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

const (
	fuzzProject = "p"
	fuzzZone    = "kfed-test"
)

// fuzzServer is a fake with one zone holding a record set kfed does not own
// and a weighted one, built without a listener: the fuzz targets call its
// handler directly.
func fuzzServer() *Server {
	s := &Server{requests: map[string]int{}, maxRRSets: 20}
	s.AddZone(fuzzProject, fuzzZone, "kfed.test.")
	z := s.zone(fuzzProject, fuzzZone)
	z.sets[setKey{"other.kfed.test.", "A"}] = &RecordSet{Kind: "dns#resourceRecordSet", Name: "other.kfed.test.", Type: "A", TTL: 300, Rrdatas: []string{"192.0.2.1"}}
	z.sets[setKey{"web.kfed.test.", "A"}] = &RecordSet{Kind: "dns#resourceRecordSet", Name: "web.kfed.test.", Type: "A", TTL: 30,
		RoutingPolicy: &RoutingPolicy{Wrr: &WRRPolicy{Items: []WRRItem{{Weight: 1, Rrdatas: []string{"192.0.2.2"}}, {Weight: 0, Rrdatas: []string{"192.0.2.3"}}}}}}
	return s
}

func call(s *Server, method, target string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, bytes.NewReader(body))
	w := httptest.NewRecorder()
	s.serve(w, r)
	return w
}

// wire is what a value looks like to a client: its JSON.
func wire(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkRefusal fails unless w is a googleapi error body whose code is its
// status and which names a reason.
func checkRefusal(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Errors  []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body does not parse: %v\n%s", err, w.Body)
	}
	if w.Code < 400 || w.Code >= 500 || e.Error.Code != w.Code || e.Error.Message == "" || len(e.Error.Errors) == 0 || e.Error.Errors[0].Reason == "" {
		t.Fatalf("refusal with status %d is not a googleapi error:\n%s", w.Code, w.Body)
	}
}

// FuzzCreateChange posts arbitrary bodies to changes.create. The handler
// must not panic; a refused change answers a googleapi error and leaves the
// zone as it was (changes are atomic); an accepted one answers the Change,
// which changes.get then finds, holds every addition, only names inside the
// zone, and lists back through the JSON exactly as stored.
func FuzzCreateChange(f *testing.F) {
	for _, body := range []string{
		`{"additions":[{"name":"new.kfed.test.","type":"A","ttl":30,"rrdatas":["192.0.2.9"]},{"name":"txt.kfed.test.","type":"TXT","ttl":30,"rrdatas":["\"heritage=kfed\""]}]}`,
		`{"deletions":[{"name":"other.kfed.test.","type":"A","ttl":300,"rrdatas":["192.0.2.1"]}],"additions":[{"name":"other.kfed.test.","type":"A","ttl":60,"rrdatas":["192.0.2.1","192.0.2.5"]}]}`,
		`{"deletions":[{"name":"web.kfed.test.","type":"A","ttl":30,"routingPolicy":{"wrr":{"items":[{"weight":1,"rrdatas":["192.0.2.2"]},{"weight":0,"rrdatas":["192.0.2.3"]}]}}}],
		  "additions":[{"name":"web.kfed.test.","type":"A","ttl":30,"routingPolicy":{"wrr":{"items":[{"weight":2.5,"rrdatas":["192.0.2.2"]}]}}}]}`,
		`{"additions":[{"name":"x.kfed.test.","type":"CNAME","ttl":30,"rrdatas":["elb.example.org."]},{"name":"x.kfed.test.","type":"TXT","ttl":30,"rrdatas":["a"]}]}`,
		`{"additions":[{"name":"_http._tcp.kfed.test.","type":"SRV","ttl":30,"rrdatas":["0 1 80 web.kfed.test."]},{"name":"out.example.org.","type":"AAAA","ttl":30,"rrdatas":["::1"]}]}`,
		`{"deletions":[{"name":"kfed.test.","type":"SOA","ttl":21600,"rrdatas":["ns-cloud-a1.googledomains.com. cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300"]}]}`,
		`{"additions":[{"name":"g.kfed.test.","type":"A","ttl":30,"routingPolicy":{"geo":{"items":[]}}}]}`,
		`{"additions":[]}`, `{`, `[]`, ``,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s := fuzzServer()
		before := wire(t, s.RecordSets(fuzzProject, fuzzZone))
		w := call(s, http.MethodPost, "/dns/v1/projects/"+fuzzProject+"/managedZones/"+fuzzZone+"/changes", body)
		after := s.RecordSets(fuzzProject, fuzzZone)
		if w.Code != http.StatusOK {
			checkRefusal(t, w)
			if got := wire(t, after); got != before || len(s.Batches()) != 0 {
				t.Fatalf("a refused change changed the zone:\nbefore %s\nafter  %s", before, got)
			}
			return
		}
		var c Change
		if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil || c.ID == "" || c.Kind != "dns#change" {
			t.Fatalf("accepted change answers %v:\n%s", err, w.Body)
		}
		if len(c.Additions)+len(c.Deletions) == 0 {
			t.Fatalf("accepted an empty change:\n%s", body)
		}
		got := call(s, http.MethodGet, "/dns/v1/projects/"+fuzzProject+"/managedZones/"+fuzzZone+"/changes/"+url.PathEscape(c.ID), nil)
		if got.Code != http.StatusOK {
			t.Fatalf("changes.get of accepted change %s answers %d:\n%s", c.ID, got.Code, got.Body)
		}
		have := map[setKey]RecordSet{}
		for _, rs := range after {
			if rs.Name != "kfed.test." && !strings.HasSuffix(rs.Name, ".kfed.test.") {
				t.Fatalf("accepted change left %s in zone kfed.test.", rs.Name)
			}
			have[setKey{rs.Name, rs.Type}] = rs
		}
		for _, add := range c.Additions {
			rs, ok := have[setKey{canonical(add.Name), add.Type}]
			if !ok || wire(t, rs.Rrdatas) != wire(t, add.Rrdatas) || rs.TTL != add.TTL {
				t.Fatalf("addition %s is stored as %+v", wire(t, add), rs)
			}
		}
		checkListing(t, s, after)
	})
}

// checkListing lists the zone page by page through the handler and checks
// that the JSON reads back as the record sets stored.
func checkListing(t *testing.T, s *Server, want []RecordSet) {
	t.Helper()
	var got []RecordSet
	q := url.Values{"maxResults": {"7"}}
	for page := 0; ; page++ {
		w := call(s, http.MethodGet, "/dns/v1/projects/"+fuzzProject+"/managedZones/"+fuzzZone+"/rrsets?"+q.Encode(), nil)
		if w.Code != http.StatusOK {
			t.Fatalf("listing answers %d:\n%s", w.Code, w.Body)
		}
		var resp struct {
			Rrsets        []RecordSet `json:"rrsets"`
			NextPageToken string      `json:"nextPageToken"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
			t.Fatalf("listing does not parse: %v\n%s", err, w.Body)
		}
		got = append(got, resp.Rrsets...)
		if resp.NextPageToken == "" {
			break
		}
		if page > len(want) {
			t.Fatalf("listing does not end")
		}
		q.Set("pageToken", resp.NextPageToken)
	}
	if g, w := wire(t, got), wire(t, want); g != w {
		t.Fatalf("listing reads back as\n%s\nstored\n%s", g, w)
	}
}

// FuzzListRecordSets lists the zone with arbitrary query parameters: the
// handler must not panic, must answer a listing or a googleapi error, must
// never change the zone, and a page holds at most the items asked for, in
// order, each matching the name and type asked for.
func FuzzListRecordSets(f *testing.F) {
	f.Add("web.kfed.test.", "A", "1", "")
	f.Add("", "A", "", "")
	f.Add("", "", "-1", "")
	f.Add("", "", "2", "d2ViLmtmZWQudGVzdC4gQQ")
	f.Add("", "", "0", "!!")
	f.Fuzz(func(t *testing.T, name, typ, maxResults, token string) {
		s := fuzzServer()
		before := wire(t, s.RecordSets(fuzzProject, fuzzZone))
		q := url.Values{}
		for k, v := range map[string]string{"name": name, "type": typ, "maxResults": maxResults, "pageToken": token} {
			if v != "" {
				q.Set(k, v)
			}
		}
		w := call(s, http.MethodGet, "/dns/v1/projects/"+fuzzProject+"/managedZones/"+fuzzZone+"/rrsets?"+q.Encode(), nil)
		if wire(t, s.RecordSets(fuzzProject, fuzzZone)) != before {
			t.Fatalf("listing changed the zone")
		}
		if w.Code != http.StatusOK {
			checkRefusal(t, w)
			return
		}
		var resp struct {
			Rrsets []RecordSet `json:"rrsets"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
			t.Fatalf("listing does not parse: %v\n%s", err, w.Body)
		}
		limit := defaultPageSize
		if n, err := strconv.Atoi(maxResults); err == nil && n > 0 {
			limit = min(n, maxPageSize)
		}
		if len(resp.Rrsets) > limit {
			t.Fatalf("page of %d, asked for %d", len(resp.Rrsets), limit)
		}
		for i, rs := range resp.Rrsets {
			if i > 0 && sortKey(setKey{resp.Rrsets[i-1].Name, resp.Rrsets[i-1].Type}) >= sortKey(setKey{rs.Name, rs.Type}) {
				t.Fatalf("listing out of order at %s", describe(rs))
			}
			if (name != "" && rs.Name != canonical(name)) || (typ != "" && rs.Type != typ) {
				t.Fatalf("asked for %q %q, listed %s", name, typ, describe(rs))
			}
		}
	})
}
