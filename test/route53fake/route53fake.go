// Package route53fake is a local HTTP endpoint that answers the Route53 API
// operations kfed uses, in Route53's own REST/XML wire format, so that the
// real aws-sdk-go-v2 client can be tested against it: ListHostedZones,
// ListResourceRecordSets (paged as Route53 pages), ChangeResourceRecordSets
// (with Route53's batch validation: at most 1,000 ResourceRecord elements and
// 32,000 characters of values per request, an UPSERT counting twice;
// all-or-nothing batches, checked as the whole batch leaves the zone; one
// routing policy per name and type; geoproximity record sets with exactly
// one of AWSRegion, LocalZoneGroup and Coordinates, coordinates as the API
// reference's patterns and ranges allow, a bias within ±99; labels of at most
// 63 bytes and names of at most 255 (DomainLabelTooLong, DomainNameTooLong);
// InvalidChangeBatch
// with its <InvalidChangeBatch><Messages> body) and GetChange. Throttling and
// PriorRequestNotComplete can be switched on, for a number of requests or as
// a rate limit like Route53's five requests per second, and any of them or a
// 5xx (InternalFailure, ServiceUnavailable) on a random share of requests.
//
// No Route53 emulator can be installed on the machines kfed is tested on; this
// is not one either, only the part kfed speaks, written from Route53's API
// reference. Anything else answers 400 InvalidAction.
package route53fake

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

const (
	apiPrefix = "/2013-04-01"
	xmlns     = "https://route53.amazonaws.com/doc/2013-04-01/"

	// MaxRecordsPerRequest and MaxValueCharsPerRequest are Route53's limits
	// on one ChangeResourceRecordSets request.
	MaxRecordsPerRequest    = 1000
	MaxValueCharsPerRequest = 32000
)

// Server is a fake Route53 on a local port.
type Server struct {
	// URL is the endpoint to give the SDK as BaseEndpoint.
	URL string

	srv *httptest.Server

	mu       sync.Mutex
	zones    map[string]*zone
	zoneIDs  []string
	changes  map[string]time.Time
	nextID   int
	failNext []string
	limiter  *rate.Limiter
	requests map[string]int
	batches  []int
	// faultShare of requests are refused with one of faultCodes, drawn at
	// random; off while faultShare is 0.
	faultShare float64
	faultCodes []string
	faults     map[string]int
}

type zone struct {
	id, name string // name with trailing dot
	private  bool
	sets     map[setKey]*RecordSet
	// order is sets in listing order, kept until sets changes: sorting
	// tens of thousands of sets for every page made a listing quadratic.
	order []*RecordSet
}

type setKey struct{ name, typ, set string }

// New starts a fake Route53; it is closed when the test ends via Close.
func New() *Server {
	s := &Server{zones: map[string]*zone{}, changes: map[string]time.Time{}, requests: map[string]int{}, faults: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// AddZone creates a hosted zone with its SOA and NS record sets and returns
// its ID (without the /hostedzone/ prefix).
func (s *Server) AddZone(name string, private bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	id := fmt.Sprintf("Z%013d", s.nextID)
	name = canonical(name)
	z := &zone{id: id, name: name, private: private, sets: map[setKey]*RecordSet{}}
	ttl := int64(172800)
	z.sets[setKey{name, "NS", ""}] = &RecordSet{Name: name, Type: "NS", TTL: &ttl, ResourceRecords: []ResourceRecord{{Value: "ns-1.awsdns-fake.net."}}}
	soaTTL := int64(900)
	z.sets[setKey{name, "SOA", ""}] = &RecordSet{Name: name, Type: "SOA", TTL: &soaTTL, ResourceRecords: []ResourceRecord{{Value: "ns-1.awsdns-fake.net. awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400"}}}
	s.zones[id] = z
	s.zoneIDs = append(s.zoneIDs, id)
	return id
}

// FailNext makes the next requests answer with the given error codes, one
// each, in order: "Throttling" or "PriorRequestNotComplete" (400),
// "InternalFailure" (500) or "ServiceUnavailable" (503).
func (s *Server) FailNext(codes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = append(s.failNext, codes...)
}

// FailRandomly refuses each request with probability share (0 switches
// it off, the default), answering one of codes picked at random: the
// throttling answers of FailNext, or "InternalFailure" (500) and
// "ServiceUnavailable" (503). A refused request changes nothing.
func (s *Server) FailRandomly(share float64, codes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faultShare, s.faultCodes = share, slices.Clone(codes)
}

// Faults returns how many requests FailRandomly refused, by code.
func (s *Server) Faults() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.faults {
		out[k] = v
	}
	return out
}

// LimitRate answers Throttling to requests beyond perSecond (burst of the
// same size), as Route53 does per account; 0 removes the limit.
func (s *Server) LimitRate(perSecond float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if perSecond == 0 {
		s.limiter = nil
		return
	}
	s.limiter = rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond)))
}

// Requests returns how many requests of an operation ("ListHostedZones",
// "ListResourceRecordSets", "ChangeResourceRecordSets", "GetChange") were
// answered, refused ones included; "" counts all.
func (s *Server) Requests(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if op == "" {
		n := 0
		for _, v := range s.requests {
			n += v
		}
		return n
	}
	return s.requests[op]
}

// Batches returns the number of changes in each ChangeResourceRecordSets
// request accepted, in order.
func (s *Server) Batches() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

// RecordSets returns a zone's record sets, as Route53 would list them.
func (s *Server) RecordSets(zoneID string) []RecordSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []RecordSet
	for _, rs := range sorted(s.zones[zoneID]) {
		out = append(out, *rs)
	}
	return out
}

// Put stores a record set in zone zoneID as another tool would have made
// it, without a request; it replaces one of the same name, type and set
// identifier.
func (s *Server) Put(zoneID string, rs RecordSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs.Name = canonical(rs.Name)
	z := s.zones[zoneID]
	z.sets[setKey{rs.Name, rs.Type, rs.SetIdentifier}] = &rs
	z.order = nil
}

// XML shapes, as the Route53 API reference names them.

// RecordSet is a ResourceRecordSet.
type RecordSet struct {
	Name            string           `xml:"Name"`
	Type            string           `xml:"Type"`
	SetIdentifier   string           `xml:"SetIdentifier,omitempty"`
	Weight          *int64           `xml:"Weight,omitempty"`
	Region          string           `xml:"Region,omitempty"`
	Failover        string           `xml:"Failover,omitempty"`
	TTL             *int64           `xml:"TTL,omitempty"`
	ResourceRecords []ResourceRecord `xml:"ResourceRecords>ResourceRecord,omitempty"`
	AliasTarget     *AliasTarget     `xml:"AliasTarget,omitempty"`
	HealthCheckID   string           `xml:"HealthCheckId,omitempty"`
	// GeoProximityLocation makes the record set one of a geoproximity
	// policy.
	GeoProximityLocation *GeoProximityLocation `xml:"GeoProximityLocation,omitempty"`
}

// GeoProximityLocation is where a geoproximity record set's resource is:
// exactly one of AWSRegion, LocalZoneGroup and Coordinates, and a Bias.
type GeoProximityLocation struct {
	AWSRegion      string       `xml:"AWSRegion,omitempty"`
	LocalZoneGroup string       `xml:"LocalZoneGroup,omitempty"`
	Coordinates    *Coordinates `xml:"Coordinates,omitempty"`
	Bias           *int32       `xml:"Bias,omitempty"`
}

// Coordinates are decimal degrees, written as strings (the API reference's
// patterns: at most two decimals).
type Coordinates struct {
	Latitude  string `xml:"Latitude"`
	Longitude string `xml:"Longitude"`
}

// ResourceRecord is one value.
type ResourceRecord struct {
	Value string `xml:"Value"`
}

// AliasTarget is an alias record set's target.
type AliasTarget struct {
	HostedZoneID         string `xml:"HostedZoneId"`
	DNSName              string `xml:"DNSName"`
	EvaluateTargetHealth bool   `xml:"EvaluateTargetHealth"`
}

type change struct {
	Action string    `xml:"Action"`
	Set    RecordSet `xml:"ResourceRecordSet"`
}

type changeRequest struct {
	XMLName xml.Name `xml:"ChangeResourceRecordSetsRequest"`
	Comment string   `xml:"ChangeBatch>Comment"`
	Changes []change `xml:"ChangeBatch>Changes>Change"`
}

type changeInfo struct {
	ID          string `xml:"Id"`
	Status      string `xml:"Status"`
	SubmittedAt string `xml:"SubmittedAt"`
}

type hostedZone struct {
	ID              string `xml:"Id"`
	Name            string `xml:"Name"`
	CallerReference string `xml:"CallerReference"`
	Comment         string `xml:"Config>Comment,omitempty"`
	PrivateZone     bool   `xml:"Config>PrivateZone"`
	RecordSetCount  int    `xml:"ResourceRecordSetCount"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, apiPrefix)
	parts := strings.Split(strings.Trim(path, "/"), "/")
	op := ""
	switch {
	case r.Method == http.MethodGet && len(parts) == 1 && parts[0] == "hostedzone":
		op = "ListHostedZones"
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "hostedzone" && parts[2] == "rrset":
		op = "ListResourceRecordSets"
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "hostedzone" && parts[2] == "rrset":
		op = "ChangeResourceRecordSets"
	case r.Method == http.MethodGet && len(parts) == 2 && parts[0] == "change":
		op = "GetChange"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[op]++
	if op == "" {
		writeError(w, http.StatusBadRequest, "InvalidAction", "The action "+r.Method+" "+r.URL.Path+" is not valid for this web service.")
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		writeError(w, http.StatusForbidden, "MissingAuthenticationToken", "Missing Authentication Token")
		return
	}
	if len(s.failNext) > 0 {
		code := s.failNext[0]
		s.failNext = s.failNext[1:]
		s.refuse(w, code)
		return
	}
	if s.faultShare > 0 && len(s.faultCodes) > 0 && rand.Float64() < s.faultShare {
		code := s.faultCodes[rand.IntN(len(s.faultCodes))]
		s.faults[code]++
		s.refuse(w, code)
		return
	}
	if s.limiter != nil && !s.limiter.Allow() {
		s.refuse(w, "Throttling")
		return
	}
	switch op {
	case "ListHostedZones":
		s.listHostedZones(w, r)
	case "ListResourceRecordSets":
		s.listRecordSets(w, r, parts[1])
	case "ChangeResourceRecordSets":
		s.changeRecordSets(w, r, parts[1])
	case "GetChange":
		s.getChange(w, parts[1])
	}
}

func (s *Server) refuse(w http.ResponseWriter, code string) {
	switch code {
	case "PriorRequestNotComplete":
		writeError(w, http.StatusBadRequest, code, "The request was rejected because Route 53 was still processing a prior request.")
	case "InternalFailure":
		writeError(w, http.StatusInternalServerError, code, "The request processing has failed because of an unknown error, exception or failure.")
	case "ServiceUnavailable":
		writeError(w, http.StatusServiceUnavailable, code, "The request has failed due to a temporary failure of the server.")
	default:
		writeError(w, http.StatusBadRequest, "Throttling", "Rate exceeded")
	}
}

func (s *Server) requestID() string {
	s.nextID++
	return fmt.Sprintf("fake-%08d", s.nextID)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	type errBody struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	writeXML(w, status, struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		Xmlns     string   `xml:"xmlns,attr"`
		Error     errBody  `xml:"Error"`
		RequestID string   `xml:"RequestId"`
	}{Xmlns: xmlns, Error: errBody{"Sender", code, msg}, RequestID: "fake-error"})
}

func writeXML(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", "fake")
	w.WriteHeader(status)
	io.WriteString(w, xml.Header)
	xml.NewEncoder(w).Encode(v)
}

func (s *Server) listHostedZones(w http.ResponseWriter, r *http.Request) {
	maxItems := intParam(r, "maxitems", 100, 100)
	start := 0
	if m := r.URL.Query().Get("marker"); m != "" {
		start = slices.Index(s.zoneIDs, m)
		if start < 0 {
			writeError(w, http.StatusBadRequest, "InvalidInput", "Invalid marker "+m)
			return
		}
	}
	var zones []hostedZone
	end := min(len(s.zoneIDs), start+maxItems)
	for _, id := range s.zoneIDs[start:end] {
		z := s.zones[id]
		zones = append(zones, hostedZone{ID: "/hostedzone/" + id, Name: z.name, CallerReference: id, PrivateZone: z.private, RecordSetCount: len(z.sets)})
	}
	resp := struct {
		XMLName     xml.Name     `xml:"ListHostedZonesResponse"`
		Xmlns       string       `xml:"xmlns,attr"`
		HostedZones []hostedZone `xml:"HostedZones>HostedZone"`
		Marker      string       `xml:"Marker"`
		IsTruncated bool         `xml:"IsTruncated"`
		NextMarker  string       `xml:"NextMarker,omitempty"`
		MaxItems    int          `xml:"MaxItems"`
	}{Xmlns: xmlns, HostedZones: zones, Marker: r.URL.Query().Get("marker"), MaxItems: maxItems}
	if end < len(s.zoneIDs) {
		resp.IsTruncated, resp.NextMarker = true, s.zoneIDs[end]
	}
	writeXML(w, http.StatusOK, resp)
}

func intParam(r *http.Request, name string, def, limit int) int {
	v, err := strconv.Atoi(r.URL.Query().Get(name))
	if err != nil || v <= 0 {
		return def
	}
	return min(v, limit)
}

// sorted returns a zone's record sets in Route53's listing order: by name
// with its labels reversed (com.example.www), then type, then set
// identifier.
func sorted(z *zone) []*RecordSet {
	if z == nil {
		return nil
	}
	if z.order != nil {
		return z.order
	}
	type keyed struct {
		rs  *RecordSet
		rev string
	}
	ks := make([]keyed, 0, len(z.sets))
	for _, rs := range z.sets {
		ks = append(ks, keyed{rs, reversed(rs.Name)})
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if c := strings.Compare(a.rev, b.rev); c != 0 {
			return c
		}
		if c := strings.Compare(a.rs.Type, b.rs.Type); c != 0 {
			return c
		}
		return strings.Compare(a.rs.SetIdentifier, b.rs.SetIdentifier)
	})
	z.order = make([]*RecordSet, len(ks))
	for i, k := range ks {
		z.order[i] = k.rs
	}
	return z.order
}

func reversed(name string) string {
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".")
}

func compareKey(a, b setKey) int {
	if c := strings.Compare(reversed(a.name), reversed(b.name)); c != 0 {
		return c
	}
	if c := strings.Compare(a.typ, b.typ); c != 0 {
		return c
	}
	return strings.Compare(a.set, b.set)
}

func (s *Server) listRecordSets(w http.ResponseWriter, r *http.Request, id string) {
	z := s.zones[id]
	if z == nil {
		writeError(w, http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: "+id)
		return
	}
	q := r.URL.Query()
	maxItems := intParam(r, "maxitems", 300, 300)
	all := sorted(z)
	start := 0
	if name := q.Get("name"); name != "" {
		from := setKey{canonical(name), q.Get("type"), q.Get("identifier")}
		start, _ = slices.BinarySearchFunc(all, from, func(rs *RecordSet, k setKey) int {
			return compareKey(setKey{rs.Name, rs.Type, rs.SetIdentifier}, k)
		})
	} else if q.Get("type") != "" {
		writeError(w, http.StatusBadRequest, "InvalidInput", "The input is not valid: type without name")
		return
	}
	end := min(len(all), start+maxItems)
	resp := struct {
		XMLName              xml.Name    `xml:"ListResourceRecordSetsResponse"`
		Xmlns                string      `xml:"xmlns,attr"`
		Sets                 []RecordSet `xml:"ResourceRecordSets>ResourceRecordSet"`
		IsTruncated          bool        `xml:"IsTruncated"`
		NextRecordName       string      `xml:"NextRecordName,omitempty"`
		NextRecordType       string      `xml:"NextRecordType,omitempty"`
		NextRecordIdentifier string      `xml:"NextRecordIdentifier,omitempty"`
		MaxItems             int         `xml:"MaxItems"`
	}{Xmlns: xmlns, MaxItems: maxItems}
	for _, rs := range all[start:end] {
		resp.Sets = append(resp.Sets, *rs)
	}
	if end < len(all) {
		next := all[end]
		resp.IsTruncated, resp.NextRecordName, resp.NextRecordType, resp.NextRecordIdentifier = true, next.Name, next.Type, next.SetIdentifier
	}
	writeXML(w, http.StatusOK, resp)
}

func (s *Server) getChange(w http.ResponseWriter, id string) {
	at, ok := s.changes[id]
	if !ok {
		writeError(w, http.StatusNotFound, "NoSuchChange", "A change with the specified change ID does not exist.")
		return
	}
	writeXML(w, http.StatusOK, struct {
		XMLName xml.Name   `xml:"GetChangeResponse"`
		Xmlns   string     `xml:"xmlns,attr"`
		Info    changeInfo `xml:"ChangeInfo"`
	}{Xmlns: xmlns, Info: changeInfo{ID: "/change/" + id, Status: "INSYNC", SubmittedAt: at.UTC().Format(time.RFC3339)}})
}

// canonical is a name as Route53 stores it: lower case, trailing dot, and
// '*' written \052.
func canonical(name string) string {
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return strings.ReplaceAll(name, "*", `\052`)
}

func describe(rs RecordSet) string {
	s := fmt.Sprintf("[name='%s', type='%s'", rs.Name, rs.Type)
	if rs.SetIdentifier != "" {
		s += fmt.Sprintf(", set-identifier='%s'", rs.SetIdentifier)
	}
	return s + "]"
}

// changeRecordSets applies a ChangeResourceRecordSets batch as Route53
// does: whole or not at all. It is longer than 80 lines because it checks
// the request-wide limits and every change's rule in turn before it
// applies any of it, so that the provider tested against it meets the same
// refusals.
func (s *Server) changeRecordSets(w http.ResponseWriter, r *http.Request, id string) {
	z := s.zones[id]
	if z == nil {
		writeError(w, http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: "+id)
		return
	}
	var req changeRequest
	if err := xml.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "InvalidInput", "Invalid XML: "+err.Error())
		return
	}
	if len(req.Changes) == 0 {
		writeError(w, http.StatusBadRequest, "InvalidInput", "1 validation error detected: Value null at 'changeBatch.changes' failed to satisfy constraint: Member must not be null")
		return
	}

	// Request-wide limits, counted as Route53 counts them.
	records, chars := 0, 0
	for _, c := range req.Changes {
		n := 1
		if c.Action == "UPSERT" {
			n = 2
		}
		for _, v := range c.Set.ResourceRecords {
			records += n
			chars += n * len(v.Value)
		}
	}
	var msgs []string
	if records > MaxRecordsPerRequest {
		msgs = append(msgs, fmt.Sprintf("Number of records limit of %d exceeded.", MaxRecordsPerRequest))
	}
	if chars > MaxValueCharsPerRequest {
		msgs = append(msgs, fmt.Sprintf("RDATA character limit of %d exceeded.", MaxValueCharsPerRequest))
	}
	if len(msgs) > 0 {
		s.invalidBatch(w, msgs)
		return
	}

	// Apply to a copy; keep it only if every change is valid.
	sets := make(map[setKey]*RecordSet, len(z.sets))
	for k, v := range z.sets {
		sets[k] = v
	}
	for _, c := range req.Changes {
		rs := c.Set
		rs.Name = canonical(rs.Name)
		if msg, code := validate(rs, z.name); msg != "" {
			if code == "InvalidInput" {
				writeError(w, http.StatusBadRequest, code, msg)
				return
			}
			msgs = append(msgs, msg)
			continue
		}
		k := setKey{rs.Name, rs.Type, rs.SetIdentifier}
		cur, exists := sets[k]
		switch c.Action {
		case "CREATE":
			if exists {
				msgs = append(msgs, "Tried to create resource record set "+describe(rs)+" but it already exists")
				continue
			}
			sets[k] = &rs
		case "UPSERT":
			sets[k] = &rs
		case "DELETE":
			switch {
			case !exists:
				msgs = append(msgs, "Tried to delete resource record set "+describe(rs)+" but it was not found")
			case !sameValues(*cur, rs):
				msgs = append(msgs, "Tried to delete resource record set "+describe(rs)+" but the values provided do not match the current values")
			default:
				delete(sets, k)
			}
		default:
			writeError(w, http.StatusBadRequest, "InvalidInput", "Invalid action "+c.Action)
			return
		}
	}
	msgs = append(msgs, conflicts(sets, req.Changes, z.name)...)
	if len(msgs) > 0 {
		s.invalidBatch(w, msgs)
		return
	}
	z.sets, z.order = sets, nil
	cid := fmt.Sprintf("C%013d", len(s.changes)+1)
	s.changes[cid] = time.Now()
	s.batches = append(s.batches, len(req.Changes))
	writeXML(w, http.StatusOK, struct {
		XMLName xml.Name   `xml:"ChangeResourceRecordSetsResponse"`
		Xmlns   string     `xml:"xmlns,attr"`
		Info    changeInfo `xml:"ChangeInfo"`
	}{Xmlns: xmlns, Info: changeInfo{ID: "/change/" + cid, Status: "PENDING", SubmittedAt: time.Now().UTC().Format(time.RFC3339)}})
}

func (s *Server) invalidBatch(w http.ResponseWriter, msgs []string) {
	writeXML(w, http.StatusBadRequest, struct {
		XMLName   xml.Name `xml:"InvalidChangeBatch"`
		Xmlns     string   `xml:"xmlns,attr"`
		Messages  []string `xml:"Messages>Message"`
		RequestID string   `xml:"RequestId"`
	}{Xmlns: xmlns, Messages: msgs, RequestID: s.requestID()})
}

// validate checks one record set on its own. It returns the message and
// whether Route53 reports it as InvalidInput (a malformed request) or inside
// an InvalidChangeBatch.
func validate(rs RecordSet, zoneName string) (string, string) {
	if rs.Name != zoneName && !strings.HasSuffix(rs.Name, "."+zoneName) {
		return fmt.Sprintf("RRSet with DNS name %s is not permitted in zone %s", rs.Name, zoneName), "InvalidChangeBatch"
	}
	// Labels of at most 63 bytes, names of at most 255 (the developer
	// guide's "DNS domain name format").
	for _, l := range strings.Split(strings.TrimSuffix(rs.Name, "."), ".") {
		if len(l) > 63 {
			return "FATAL problem: DomainLabelTooLong (Domain label is too long) encountered with '" + l + "'", "InvalidChangeBatch"
		}
	}
	if len(rs.Name) > 255 {
		return "FATAL problem: DomainNameTooLong (Domain name is too long) encountered with '" + rs.Name + "'", "InvalidChangeBatch"
	}
	hasAlias, hasRecords := rs.AliasTarget != nil, rs.TTL != nil || len(rs.ResourceRecords) > 0
	if hasAlias == hasRecords {
		return fmt.Sprintf("Invalid request: Expected exactly one of [AliasTarget, all of [TTL, and ResourceRecords]], but found %s in Change with [Action=?, Name=%s, Type=%s, SetIdentifier=%s]",
			map[bool]string{true: "more than one", false: "none"}[hasAlias], rs.Name, rs.Type, rs.SetIdentifier), "InvalidInput"
	}
	if !hasAlias && (rs.TTL == nil || len(rs.ResourceRecords) == 0) {
		return "Invalid request: TTL and ResourceRecords must both be given for " + describe(rs), "InvalidInput"
	}
	if policies := policies(rs); (rs.SetIdentifier != "") != (len(policies) > 0) || len(policies) > 1 {
		return fmt.Sprintf("Invalid request: a SetIdentifier needs exactly one routing policy (Weight, Region, Failover, GeoProximityLocation) and one may only be given with a SetIdentifier, but found [%s] in %s",
			strings.Join(policies, ", "), describe(rs)), "InvalidInput"
	}
	if rs.Weight != nil && (*rs.Weight < 0 || *rs.Weight > 255) {
		return fmt.Sprintf("Invalid request: Weight %d is not in [0, 255] in %s", *rs.Weight, describe(rs)), "InvalidInput"
	}
	if g := rs.GeoProximityLocation; g != nil {
		if msg := validateGeoProximity(*g); msg != "" {
			return msg + " in " + describe(rs), "InvalidInput"
		}
	}
	switch rs.Type {
	case "A", "AAAA", "CNAME", "SRV", "TXT", "MX", "NS", "PTR", "CAA", "SPF", "NAPTR", "DS":
	case "SOA":
		return "Invalid request: SOA records may only be changed with UPSERT at the apex", "InvalidChangeBatch"
	default:
		return "Invalid request: unknown type " + rs.Type, "InvalidInput"
	}
	for _, v := range rs.ResourceRecords {
		switch rs.Type {
		case "A":
			if ip := net.ParseIP(v.Value); ip == nil || ip.To4() == nil || strings.Contains(v.Value, ":") {
				return "ARRDATAIllegalIPv4Address (Value is not a valid IPv4 address) encountered with '" + v.Value + "'", "InvalidChangeBatch"
			}
		case "AAAA":
			if ip := net.ParseIP(v.Value); ip == nil || !strings.Contains(v.Value, ":") {
				return "AAAARRDATAIllegalIPv6Address (Value is not a valid IPv6 address) encountered with '" + v.Value + "'", "InvalidChangeBatch"
			}
		case "TXT":
			if !strings.HasPrefix(v.Value, `"`) || !strings.HasSuffix(v.Value, `"`) {
				return "Invalid Resource Record: FATAL problem: InvalidCharacterString (Value should be enclosed in quotation marks) encountered with '" + v.Value + "'", "InvalidChangeBatch"
			}
		}
	}
	if rs.Type == "CNAME" && len(rs.ResourceRecords) > 1 {
		return "RRSet of type CNAME with DNS name " + rs.Name + " has more than one value", "InvalidChangeBatch"
	}
	return "", ""
}

// policies names the routing policies a record set gives.
func policies(rs RecordSet) []string {
	var out []string
	for _, p := range []struct {
		name string
		set  bool
	}{{"Weight", rs.Weight != nil}, {"Region", rs.Region != ""}, {"Failover", rs.Failover != ""}, {"GeoProximityLocation", rs.GeoProximityLocation != nil}} {
		if p.set {
			out = append(out, p.name)
		}
	}
	return out
}

// Patterns of Coordinates' Latitude and Longitude in the API reference,
// which also bounds their lengths (6 and 7).
var (
	latitudePattern  = regexp.MustCompile(`^[-+]?[0-9]{1,2}(\.[0-9]{0,2})?$`)
	longitudePattern = regexp.MustCompile(`^[-+]?[0-9]{1,3}(\.[0-9]{0,2})?$`)
)

// validateGeoProximity checks a GeoProximityLocation as the API reference
// documents it; it returns what is wrong, or "".
func validateGeoProximity(g GeoProximityLocation) string {
	var given []string
	if g.AWSRegion != "" {
		given = append(given, "AWSRegion")
	}
	if g.LocalZoneGroup != "" {
		given = append(given, "LocalZoneGroup")
	}
	if g.Coordinates != nil {
		given = append(given, "Coordinates")
	}
	if len(given) != 1 {
		return fmt.Sprintf("Invalid request: Expected exactly one of [AWSRegion, LocalZoneGroup, Coordinates] in GeoProximityLocation, but found [%s]", strings.Join(given, ", "))
	}
	if len(g.AWSRegion) > 64 || len(g.LocalZoneGroup) > 64 {
		return "1 validation error detected: GeoProximityLocation's AWSRegion or LocalZoneGroup failed to satisfy constraint: Member must have length less than or equal to 64"
	}
	if b := g.Bias; b != nil && (*b < -99 || *b > 99) {
		return fmt.Sprintf("1 validation error detected: Value '%d' at 'geoProximityLocation.bias' failed to satisfy constraint: Member must have value between -99 and 99", *b)
	}
	if c := g.Coordinates; c != nil {
		for _, f := range []struct {
			field, value string
			pattern      *regexp.Regexp
			maxLen       int
			limit        float64
		}{{"latitude", c.Latitude, latitudePattern, 6, 90}, {"longitude", c.Longitude, longitudePattern, 7, 180}} {
			if len(f.value) > f.maxLen || !f.pattern.MatchString(f.value) {
				return fmt.Sprintf("1 validation error detected: Value '%s' at 'geoProximityLocation.coordinates.%s' failed to satisfy constraint: Member must satisfy regular expression pattern: %s with length at most %d",
					f.value, f.field, strings.Trim(f.pattern.String(), "^$"), f.maxLen)
			}
			if v, err := strconv.ParseFloat(f.value, 64); err != nil || v < -f.limit || v > f.limit {
				return fmt.Sprintf("Invalid request: %s '%s' is not within -%v and %v", f.field, f.value, f.limit, f.limit)
			}
		}
	}
	return ""
}

// sameValues reports whether a DELETE names a record set exactly as it is:
// every value, its routing policy and health check included.
func sameValues(a, b RecordSet) bool {
	values := func(rs RecordSet) []string {
		var v []string
		for _, r := range rs.ResourceRecords {
			v = append(v, r.Value)
		}
		slices.Sort(v)
		return v
	}
	eq := func(x, y *int64) bool { return (x == nil && y == nil) || (x != nil && y != nil && *x == *y) }
	aliasEq := (a.AliasTarget == nil && b.AliasTarget == nil) ||
		(a.AliasTarget != nil && b.AliasTarget != nil && strings.EqualFold(strings.TrimSuffix(a.AliasTarget.DNSName, "."), strings.TrimSuffix(b.AliasTarget.DNSName, ".")) &&
			a.AliasTarget.HostedZoneID == b.AliasTarget.HostedZoneID && a.AliasTarget.EvaluateTargetHealth == b.AliasTarget.EvaluateTargetHealth)
	geoEq := (a.GeoProximityLocation == nil) == (b.GeoProximityLocation == nil)
	if geoEq && a.GeoProximityLocation != nil {
		ga, gb := *a.GeoProximityLocation, *b.GeoProximityLocation
		bias := func(b *int32) int32 {
			if b == nil {
				return 0
			}
			return *b
		}
		geoEq = ga.AWSRegion == gb.AWSRegion && ga.LocalZoneGroup == gb.LocalZoneGroup && bias(ga.Bias) == bias(gb.Bias) &&
			(ga.Coordinates == nil) == (gb.Coordinates == nil) && (ga.Coordinates == nil || *ga.Coordinates == *gb.Coordinates)
	}
	return eq(a.TTL, b.TTL) && eq(a.Weight, b.Weight) && slices.Equal(values(a), values(b)) && aliasEq && geoEq &&
		a.HealthCheckID == b.HealthCheckID && a.Region == b.Region && a.Failover == b.Failover
}

// conflicts checks the zone as the batch leaves it, for the names the batch
// touched: a CNAME allows no other record set at its name, a name and type
// hold either one plain record set or only ones with set identifiers, and
// those all of one routing policy (weighted, latency, failover,
// geoproximity). Route53 applies a batch as one transaction, so a policy is
// changed by deleting every record set of the old one and creating the new
// ones in the same batch.
func conflicts(sets map[setKey]*RecordSet, changes []change, zoneName string) []string {
	touched := map[string]bool{}
	for _, c := range changes {
		touched[canonical(c.Set.Name)] = true
	}
	byName := map[string][]*RecordSet{}
	for k, rs := range sets {
		if touched[k.name] {
			byName[k.name] = append(byName[k.name], rs)
		}
	}
	var msgs []string
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range byName {
			if !yield(n) {
				return
			}
		}
	}) {
		list := byName[name]
		types := map[string]bool{}
		plain, weighted := map[string]bool{}, map[string]bool{}
		kinds := map[string]map[string]bool{}
		for _, rs := range list {
			types[rs.Type] = true
			if rs.SetIdentifier == "" {
				plain[rs.Type] = true
			} else {
				weighted[rs.Type] = true
				if kinds[rs.Type] == nil {
					kinds[rs.Type] = map[string]bool{}
				}
				for _, p := range policies(*rs) {
					kinds[rs.Type][p] = true
				}
			}
		}
		for _, t := range slices.Sorted(maps.Keys(kinds)) {
			if len(kinds[t]) > 1 {
				msgs = append(msgs, fmt.Sprintf("RRSet with DNS name %s, type %s cannot be created because other RRSets with the same name and type use a different routing policy (%s).",
					name, t, strings.Join(slices.Sorted(maps.Keys(kinds[t])), ", ")))
			}
		}
		if types["CNAME"] && len(types) > 1 {
			msgs = append(msgs, fmt.Sprintf("RRSet of type CNAME with DNS name %s is not permitted as it conflicts with other records with the same DNS name in zone %s", name, zoneName))
		}
		for t := range plain {
			if weighted[t] {
				msgs = append(msgs, fmt.Sprintf("RRSet with DNS name %s, type %s cannot be created as a non-weighted set exists with the same name and type.", name, t))
			}
		}
	}
	return msgs
}
