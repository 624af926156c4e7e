// Package clouddnsfake is a local HTTP endpoint that answers the Google Cloud
// DNS v1 REST operations kfed uses, in the JSON the google.golang.org/api
// client sends and expects, so that the real client can be tested against
// it: managedZones.list and get, resourceRecordSets.list (paged with
// pageToken, nextPageToken and maxResults), changes.create and changes.get.
//
// changes.create is applied atomically, as Cloud DNS applies it: deletions
// first, each of which must match the record set as it is (name, type, TTL,
// rrdatas and routing policy) or the whole change fails with 412
// conditionNotMet (404 notFound when there is nothing to delete); then
// additions, which fail with 409 alreadyExists over an existing record set;
// then a CNAME beside other data at its name is refused with 400, as is a
// name with a label over 63 octets. Cloud DNS's
// documented limits ("Quotas and limits": 1,000 additions and 1,000 deletions
// per change, 100,000 bytes of record data per change, 100 records per record
// set, 10,000 record sets per zone) are enforced. Weighted round robin
// routing policies (routingPolicy.wrr.items[{weight, rrdatas}]) and geo ones
// (routingPolicy.geo.items[{location, rrdatas}], each location a Google Cloud
// region and at most one item per location; enableFencing) are stored and
// listed back; a policy with both, and other routing policies, are refused. Errors are googleapi.Error
// JSON bodies ({"error": {"code", "message", "errors": [{"reason"}]}}), so
// the client returns them typed. 429 rateLimitExceeded and 5xx answers can be
// switched on, for a number of requests, as a rate limit, or on a random
// share of requests.
//
// No Cloud DNS emulator can be installed on the machines kfed is tested on;
// this is not one either, only the part kfed speaks, written from the API
// reference. Authentication is not checked (the tests use
// option.WithoutAuthentication). Anything else answers 404 notFound.
package clouddnsfake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Cloud DNS's limits, from its "Quotas and limits" page.
const (
	MaxAdditionsPerChange    = 1000
	MaxDeletionsPerChange    = 1000
	MaxRrdataBytesPerChange  = 100000
	MaxRecordsPerRecordSet   = 100
	DefaultMaxRecordSetsZone = 10000
)

// Page sizes of resourceRecordSets.list and managedZones.list: the server
// decides when maxResults is absent, and caps it.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// Server is a fake Cloud DNS on a local port.
type Server struct {
	// URL is the endpoint; give the client option.WithEndpoint(URL + "/").
	URL string

	srv *httptest.Server

	mu        sync.Mutex
	zones     []*zone // in creation order
	nextID    uint64
	failNext  []int
	limiter   *rate.Limiter
	maxRRSets int
	requests  map[string]int
	batches   []int
	// faultShare of requests are refused with one of faultStatuses, drawn
	// at random; off while faultShare is 0.
	faultShare    float64
	faultStatuses []int
	faults        map[int]int
}

type zone struct {
	project, name, dnsName, visibility string
	id                                 uint64
	sets                               map[setKey]*RecordSet
	// order is sets in listing order, kept until sets changes: sorting
	// tens of thousands of sets for every page made a listing quadratic.
	order   []*RecordSet
	changes []*Change
}

type setKey struct{ name, typ string }

// New starts a fake Cloud DNS. Close it when the test ends.
func New() *Server {
	s := &Server{requests: map[string]int{}, faults: map[int]int{}, maxRRSets: DefaultMaxRecordSetsZone}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// AddZone creates a public managed zone named name (the resource name, such
// as "kfed-test") for dnsName in project, with its SOA and NS record sets,
// and returns its numeric ID.
func (s *Server) AddZone(project, name, dnsName string) uint64 {
	return s.addZone(project, name, dnsName, "public")
}

// AddPrivateZone is AddZone for a zone visible only to VPC networks.
func (s *Server) AddPrivateZone(project, name, dnsName string) uint64 {
	return s.addZone(project, name, dnsName, "private")
}

func (s *Server) addZone(project, name, dnsName, visibility string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	dnsName = canonical(dnsName)
	z := &zone{project: project, name: name, dnsName: dnsName, visibility: visibility, id: 1000000 + s.nextID, sets: map[setKey]*RecordSet{}}
	z.sets[setKey{dnsName, "SOA"}] = &RecordSet{Kind: "dns#resourceRecordSet", Name: dnsName, Type: "SOA", TTL: 21600,
		Rrdatas: []string{"ns-cloud-a1.googledomains.com. cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300"}}
	z.sets[setKey{dnsName, "NS"}] = &RecordSet{Kind: "dns#resourceRecordSet", Name: dnsName, Type: "NS", TTL: 21600,
		Rrdatas: []string{"ns-cloud-a1.googledomains.com.", "ns-cloud-a2.googledomains.com."}}
	s.zones = append(s.zones, z)
	return z.id
}

// FailNext makes the next requests answer with the given HTTP statuses, one
// each, in order: 429 (rateLimitExceeded), 500 (internalError) or 503
// (backendError).
func (s *Server) FailNext(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = append(s.failNext, statuses...)
}

// FailRandomly refuses each request with probability share (0 switches
// it off, the default), answering one of statuses picked at random: 429
// (rateLimitExceeded), 500 (internalError) or 503 (backendError). A refused
// request changes nothing.
func (s *Server) FailRandomly(share float64, statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faultShare, s.faultStatuses = share, slices.Clone(statuses)
}

// Faults returns how many requests FailRandomly refused, by HTTP status.
func (s *Server) Faults() map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]int{}
	for k, v := range s.faults {
		out[k] = v
	}
	return out
}

// LimitRate answers 429 rateLimitExceeded to requests beyond perSecond
// (burst of the same size); 0 removes the limit.
func (s *Server) LimitRate(perSecond float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if perSecond == 0 {
		s.limiter = nil
		return
	}
	s.limiter = rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond)))
}

// LimitRecordSets sets the number of record sets a zone may hold, SOA and NS
// included (Cloud DNS's default is 10,000, raised on request); 0 removes the
// limit.
func (s *Server) LimitRecordSets(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxRRSets = n
}

// Requests returns how many requests of an operation
// ("managedZones.list", "managedZones.get", "resourceRecordSets.list",
// "changes.create", "changes.get") were answered, refused ones included; ""
// counts all.
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

// Batches returns the number of additions plus deletions of each change
// accepted, in order.
func (s *Server) Batches() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

// RecordSets returns the record sets of zone (its name or ID) in project, in
// listing order.
func (s *Server) RecordSets(project, zone string) []RecordSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	z := s.zone(project, zone)
	if z == nil {
		return nil
	}
	var out []RecordSet
	for _, rs := range sorted(z) {
		out = append(out, *rs)
	}
	return out
}

// JSON shapes, as the Cloud DNS v1 REST reference names them.

// RecordSet is a ResourceRecordSet.
type RecordSet struct {
	Kind             string         `json:"kind,omitempty"`
	Name             string         `json:"name"`
	Type             string         `json:"type"`
	TTL              int64          `json:"ttl,omitempty"`
	Rrdatas          []string       `json:"rrdatas,omitempty"`
	SignatureRrdatas []string       `json:"signatureRrdatas,omitempty"`
	RoutingPolicy    *RoutingPolicy `json:"routingPolicy,omitempty"`
}

// RoutingPolicy is an RRSetRoutingPolicy. wrr and geo are supported;
// primaryBackup is kept raw so that a request naming it can be refused.
type RoutingPolicy struct {
	Kind          string          `json:"kind,omitempty"`
	Wrr           *WRRPolicy      `json:"wrr,omitempty"`
	Geo           *GeoPolicy      `json:"geo,omitempty"`
	PrimaryBackup json.RawMessage `json:"primaryBackup,omitempty"`
	HealthCheck   string          `json:"healthCheck,omitempty"`
}

// GeoPolicy routes by where the querying user is: an item per Google Cloud
// region.
type GeoPolicy struct {
	Kind          string    `json:"kind,omitempty"`
	EnableFencing bool      `json:"enableFencing,omitempty"`
	Items         []GeoItem `json:"items"`
}

// GeoItem is one region's bucket of record data.
type GeoItem struct {
	Kind                 string          `json:"kind,omitempty"`
	Location             string          `json:"location"`
	Rrdatas              []string        `json:"rrdatas,omitempty"`
	HealthCheckedTargets json.RawMessage `json:"healthCheckedTargets,omitempty"`
}

// Regions are the Google Cloud regions a geo item may name, from Google
// Cloud's list of locations (cloud.google.com/about/locations).
var Regions = []string{
	"africa-south1",
	"asia-east1", "asia-east2", "asia-northeast1", "asia-northeast2", "asia-northeast3",
	"asia-south1", "asia-south2", "asia-southeast1", "asia-southeast2",
	"australia-southeast1", "australia-southeast2",
	"europe-central2", "europe-north1", "europe-north2", "europe-southwest1",
	"europe-west1", "europe-west2", "europe-west3", "europe-west4", "europe-west6",
	"europe-west8", "europe-west9", "europe-west10", "europe-west12",
	"me-central1", "me-central2", "me-west1",
	"northamerica-northeast1", "northamerica-northeast2", "northamerica-south1",
	"southamerica-east1", "southamerica-west1",
	"us-central1", "us-east1", "us-east4", "us-east5", "us-south1",
	"us-west1", "us-west2", "us-west3", "us-west4",
}

// WRRPolicy is a weighted round robin policy.
type WRRPolicy struct {
	Kind  string    `json:"kind,omitempty"`
	Items []WRRItem `json:"items"`
}

// WRRItem is one weighted bucket of record data.
type WRRItem struct {
	Kind                 string          `json:"kind,omitempty"`
	Weight               float64         `json:"weight"`
	Rrdatas              []string        `json:"rrdatas,omitempty"`
	HealthCheckedTargets json.RawMessage `json:"healthCheckedTargets,omitempty"`
}

// Change is a Change resource.
type Change struct {
	Kind      string      `json:"kind,omitempty"`
	ID        string      `json:"id,omitempty"`
	Status    string      `json:"status,omitempty"`
	StartTime string      `json:"startTime,omitempty"`
	Additions []RecordSet `json:"additions,omitempty"`
	Deletions []RecordSet `json:"deletions,omitempty"`
}

type managedZone struct {
	Kind        string   `json:"kind"`
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	DNSName     string   `json:"dnsName"`
	Description string   `json:"description"`
	NameServers []string `json:"nameServers"`
	Visibility  string   `json:"visibility"`
}

// apiError is the googleapi.Error a failed request answers with.
type apiError struct {
	status          int
	reason, message string
}

func errorf(status int, reason, format string, args ...any) *apiError {
	return &apiError{status, reason, fmt.Sprintf(format, args...)}
}

func (e *apiError) write(w http.ResponseWriter) {
	type item struct {
		Domain  string `json:"domain"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	type body struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Errors  []item `json:"errors"`
	}
	writeJSON(w, e.status, struct {
		Error body `json:"error"`
	}{body{e.status, e.message, []item{{"global", e.reason, e.message}}}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// route names the operation of a request and its path parameters.
func route(r *http.Request) (op, project, zone, id string) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/dns/v1/projects/")
	if !ok {
		return "", "", "", ""
	}
	p := strings.Split(rest, "/")
	if len(p) < 2 || p[1] != "managedZones" {
		return "", "", "", ""
	}
	switch {
	case len(p) == 2 && r.Method == http.MethodGet:
		return "managedZones.list", p[0], "", ""
	case len(p) == 3 && r.Method == http.MethodGet:
		return "managedZones.get", p[0], p[2], ""
	case len(p) == 4 && p[3] == "rrsets" && r.Method == http.MethodGet:
		return "resourceRecordSets.list", p[0], p[2], ""
	case len(p) == 4 && p[3] == "changes" && r.Method == http.MethodPost:
		return "changes.create", p[0], p[2], ""
	case len(p) == 5 && p[3] == "changes" && r.Method == http.MethodGet:
		return "changes.get", p[0], p[2], p[4]
	}
	return "", "", "", ""
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	op, project, zoneName, id := route(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[op]++
	if op == "" {
		errorf(http.StatusNotFound, "notFound", "The requested URL %s %s was not found on this server.", r.Method, r.URL.Path).write(w)
		return
	}
	if len(s.failNext) > 0 {
		status := s.failNext[0]
		s.failNext = s.failNext[1:]
		refuse(status).write(w)
		return
	}
	if s.faultShare > 0 && len(s.faultStatuses) > 0 && rand.Float64() < s.faultShare {
		status := s.faultStatuses[rand.IntN(len(s.faultStatuses))]
		s.faults[status]++
		refuse(status).write(w)
		return
	}
	if s.limiter != nil && !s.limiter.Allow() {
		refuse(http.StatusTooManyRequests).write(w)
		return
	}
	var err *apiError
	switch op {
	case "managedZones.list":
		err = s.listZones(w, r, project)
	case "managedZones.get":
		err = s.getZone(w, project, zoneName)
	case "resourceRecordSets.list":
		err = s.listRecordSets(w, r, project, zoneName)
	case "changes.create":
		err = s.createChange(w, r, project, zoneName)
	case "changes.get":
		err = s.getChange(w, project, zoneName, id)
	}
	if err != nil {
		err.write(w)
	}
}

func refuse(status int) *apiError {
	switch status {
	case http.StatusTooManyRequests:
		return errorf(status, "rateLimitExceeded", "Rate Limit Exceeded")
	case http.StatusServiceUnavailable:
		return errorf(status, "backendError", "Backend Error")
	default:
		return errorf(status, "internalError", "Internal Error")
	}
}

// zone finds a zone by its resource name or numeric ID, as the API accepts
// either.
func (s *Server) zone(project, nameOrID string) *zone {
	for _, z := range s.zones {
		if z.project == project && (z.name == nameOrID || strconv.FormatUint(z.id, 10) == nameOrID) {
			return z
		}
	}
	return nil
}

func (s *Server) zoneOrError(project, nameOrID string) (*zone, *apiError) {
	if z := s.zone(project, nameOrID); z != nil {
		return z, nil
	}
	return nil, errorf(http.StatusNotFound, "notFound", "The 'parameters.managedZone' resource named '%s' does not exist.", nameOrID)
}

func (z *zone) resource() managedZone {
	return managedZone{Kind: "dns#managedZone", ID: strconv.FormatUint(z.id, 10), Name: z.name, DNSName: z.dnsName,
		NameServers: z.sets[setKey{z.dnsName, "NS"}].Rrdatas, Visibility: z.visibility}
}

// pageParams reads maxResults and pageToken. Tokens are opaque to clients;
// here a token is the base64 key of the first item of the next page, so
// that a page does not shift when earlier items are added or removed.
func pageParams(r *http.Request) (size int, from string, err *apiError) {
	q := r.URL.Query()
	size = defaultPageSize
	if v := q.Get("maxResults"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 0 {
			return 0, "", errorf(http.StatusBadRequest, "invalid", "Invalid value for 'maxResults': '%s'", v)
		}
		if n > 0 {
			size = min(n, maxPageSize)
		}
	}
	if t := q.Get("pageToken"); t != "" {
		b, derr := base64.RawURLEncoding.DecodeString(t)
		if derr != nil {
			return 0, "", errorf(http.StatusBadRequest, "invalid", "Invalid value for 'pageToken': '%s'", t)
		}
		from = string(b)
	}
	return size, from, nil
}

func pageToken(key string) string { return base64.RawURLEncoding.EncodeToString([]byte(key)) }

func (s *Server) listZones(w http.ResponseWriter, r *http.Request, project string) *apiError {
	size, from, err := pageParams(r)
	if err != nil {
		return err
	}
	filter := r.URL.Query().Get("dnsName")
	var all []*zone
	for _, z := range s.zones {
		if z.project == project && (filter == "" || canonical(filter) == z.dnsName) {
			all = append(all, z)
		}
	}
	start := 0
	if from != "" {
		start = slices.IndexFunc(all, func(z *zone) bool { return strconv.FormatUint(z.id, 10) == from })
		if start < 0 {
			return errorf(http.StatusBadRequest, "invalid", "Invalid value for 'pageToken'")
		}
	}
	end := min(len(all), start+size)
	resp := struct {
		Kind          string        `json:"kind"`
		ManagedZones  []managedZone `json:"managedZones"`
		NextPageToken string        `json:"nextPageToken,omitempty"`
	}{Kind: "dns#managedZonesListResponse", ManagedZones: []managedZone{}}
	for _, z := range all[start:end] {
		resp.ManagedZones = append(resp.ManagedZones, z.resource())
	}
	if end < len(all) {
		resp.NextPageToken = pageToken(strconv.FormatUint(all[end].id, 10))
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (s *Server) getZone(w http.ResponseWriter, project, name string) *apiError {
	z, err := s.zoneOrError(project, name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, z.resource())
	return nil
}

// sortKey orders record sets in a listing: by name, then type.
func sortKey(k setKey) string { return k.name + " " + k.typ }

func sorted(z *zone) []*RecordSet {
	if z.order != nil {
		return z.order
	}
	out := make([]*RecordSet, 0, len(z.sets))
	for _, rs := range z.sets {
		out = append(out, rs)
	}
	slices.SortFunc(out, func(a, b *RecordSet) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
	z.order = out
	return out
}

func (s *Server) listRecordSets(w http.ResponseWriter, r *http.Request, project, zoneName string) *apiError {
	z, err := s.zoneOrError(project, zoneName)
	if err != nil {
		return err
	}
	size, from, err := pageParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	name, typ := q.Get("name"), q.Get("type")
	if typ != "" && name == "" {
		return errorf(http.StatusBadRequest, "invalid", "The 'type' parameter requires the 'name' parameter.")
	}
	var all []*RecordSet
	for _, rs := range sorted(z) {
		if (name == "" || rs.Name == canonical(name)) && (typ == "" || rs.Type == typ) {
			all = append(all, rs)
		}
	}
	start := 0
	if from != "" {
		start, _ = slices.BinarySearchFunc(all, from, func(rs *RecordSet, k string) int {
			return strings.Compare(sortKey(setKey{rs.Name, rs.Type}), k)
		})
	}
	end := min(len(all), start+size)
	resp := struct {
		Kind          string      `json:"kind"`
		Rrsets        []RecordSet `json:"rrsets"`
		NextPageToken string      `json:"nextPageToken,omitempty"`
	}{Kind: "dns#resourceRecordSetsListResponse", Rrsets: []RecordSet{}}
	for _, rs := range all[start:end] {
		resp.Rrsets = append(resp.Rrsets, *rs)
	}
	if end < len(all) {
		next := all[end]
		resp.NextPageToken = pageToken(sortKey(setKey{next.Name, next.Type}))
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (s *Server) getChange(w http.ResponseWriter, project, zoneName, id string) *apiError {
	z, err := s.zoneOrError(project, zoneName)
	if err != nil {
		return err
	}
	for _, c := range z.changes {
		if c.ID == id {
			done := *c
			done.Status = "done"
			writeJSON(w, http.StatusOK, done)
			return nil
		}
	}
	return errorf(http.StatusNotFound, "notFound", "The 'parameters.changeId' resource named '%s' does not exist.", id)
}

// canonical is a name as Cloud DNS stores it: lower case with a trailing
// dot. (Names sent without the dot are refused before this is applied.)
func canonical(name string) string {
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}

func describe(rs RecordSet) string { return fmt.Sprintf("%s (%s)", rs.Name, rs.Type) }

// rrdatas returns every record of a record set: its rrdatas, or those of
// every item of its routing policy.
func rrdatas(rs RecordSet) []string {
	var out []string
	for _, item := range items(rs) {
		out = append(out, item...)
	}
	return out
}

// items returns the record data of each item of a record set's routing
// policy, or its rrdatas as one item.
func items(rs RecordSet) [][]string {
	var out [][]string
	switch p := rs.RoutingPolicy; {
	case p != nil && p.Wrr != nil:
		for _, it := range p.Wrr.Items {
			out = append(out, it.Rrdatas)
		}
	case p != nil && p.Geo != nil:
		for _, it := range p.Geo.Items {
			out = append(out, it.Rrdatas)
		}
	default:
		out = append(out, rs.Rrdatas)
	}
	return out
}

// createChange applies a change to a zone as Cloud DNS does: whole or not
// at all. It is longer than 80 lines because it checks every rule of the
// real API in turn (the per-change quotas, deletions that must match,
// additions that must not exist yet, a CNAME that may not share its name,
// the zone's quota) before it applies any of it,
// so that a provider tested against it meets the same refusals.
func (s *Server) createChange(w http.ResponseWriter, r *http.Request, project, zoneName string) *apiError {
	z, aerr := s.zoneOrError(project, zoneName)
	if aerr != nil {
		return aerr
	}
	var req Change
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return errorf(http.StatusBadRequest, "parseError", "Parse Error: %v", err)
	}
	if len(req.Additions) == 0 && len(req.Deletions) == 0 {
		return errorf(http.StatusBadRequest, "required", "The 'entity.change' parameter is required but was missing.")
	}
	if len(req.Additions) > MaxAdditionsPerChange {
		return errorf(http.StatusForbidden, "quotaExceeded", "Quota exceeded for 'rrsetAdditionsPerChange': %d additions, limit %d.", len(req.Additions), MaxAdditionsPerChange)
	}
	if len(req.Deletions) > MaxDeletionsPerChange {
		return errorf(http.StatusForbidden, "quotaExceeded", "Quota exceeded for 'rrsetDeletionsPerChange': %d deletions, limit %d.", len(req.Deletions), MaxDeletionsPerChange)
	}
	size := 0
	for _, list := range [][]RecordSet{req.Deletions, req.Additions} {
		for _, rs := range list {
			for _, d := range rrdatas(rs) {
				size += len(d)
			}
		}
	}
	if size > MaxRrdataBytesPerChange {
		return errorf(http.StatusForbidden, "quotaExceeded", "Quota exceeded for 'totalRrdataSizePerChange': %d bytes, limit %d.", size, MaxRrdataBytesPerChange)
	}
	for i, rs := range req.Deletions {
		if err := validate(rs, z.dnsName, fmt.Sprintf("entity.change.deletions[%d]", i)); err != nil {
			return err
		}
	}
	for i, rs := range req.Additions {
		if err := validate(rs, z.dnsName, fmt.Sprintf("entity.change.additions[%d]", i)); err != nil {
			return err
		}
	}

	// Apply to a copy; keep it only if every change applies.
	sets := make(map[setKey]*RecordSet, len(z.sets))
	for k, v := range z.sets {
		sets[k] = v
	}
	touched := map[string]bool{}
	for i, rs := range req.Deletions {
		rs.Name = canonical(rs.Name)
		k := setKey{rs.Name, rs.Type}
		cur, ok := sets[k]
		switch {
		case !ok:
			return errorf(http.StatusNotFound, "notFound", "The 'entity.change.deletions[%d]' resource named '%s' does not exist.", i, describe(rs))
		case !sameRecordSet(*cur, rs):
			return errorf(http.StatusPreconditionFailed, "conditionNotMet", "Precondition not met for 'entity.change.deletions[%d]'", i)
		case k.typ == "SOA" || (k.typ == "NS" && k.name == z.dnsName):
			return errorf(http.StatusBadRequest, "invalidOperation", "The resource record set 'entity.change.deletions[%d]' is required at the zone apex and cannot be deleted.", i)
		}
		delete(sets, k)
		touched[rs.Name] = true
	}
	for i, rs := range req.Additions {
		rs.Name = canonical(rs.Name)
		rs.Kind = "dns#resourceRecordSet"
		k := setKey{rs.Name, rs.Type}
		if _, ok := sets[k]; ok {
			return errorf(http.StatusConflict, "alreadyExists", "The resource 'entity.change.additions[%d]' named '%s' already exists", i, describe(rs))
		}
		sets[k] = &rs
		touched[rs.Name] = true
	}
	for i, rs := range req.Additions {
		name := canonical(rs.Name)
		if rs.Type != "CNAME" {
			if _, ok := sets[setKey{name, "CNAME"}]; !ok {
				continue
			}
		}
		for k := range sets {
			if k.name == name && k.typ != rs.Type {
				return errorf(http.StatusBadRequest, "cnameResourceRecordSetConflict",
					"The resource 'entity.change.additions[%d]' named '%s' cannot be created because a CNAME and another resource record set would share the name.", i, describe(rs))
			}
		}
	}
	if s.maxRRSets > 0 && len(sets) > s.maxRRSets && len(sets) > len(z.sets) {
		return errorf(http.StatusForbidden, "quotaExceeded", "Quota exceeded for 'rrsetsPerManagedZone': the change leaves %d record sets, limit %d.", len(sets), s.maxRRSets)
	}
	z.sets, z.order = sets, nil
	s.nextID++
	c := &Change{Kind: "dns#change", ID: strconv.FormatUint(s.nextID, 10), Status: "pending", StartTime: time.Now().UTC().Format(time.RFC3339Nano),
		Additions: req.Additions, Deletions: req.Deletions}
	z.changes = append(z.changes, c)
	s.batches = append(s.batches, len(req.Additions)+len(req.Deletions))
	writeJSON(w, http.StatusOK, c)
	return nil
}

// validate checks one record set of a change on its own, as Cloud DNS does
// before applying anything.
func validate(rs RecordSet, zoneName, field string) *apiError {
	invalid := func(format string, args ...any) *apiError {
		return errorf(http.StatusBadRequest, "invalid", "Invalid value for '%s': %s", field, fmt.Sprintf(format, args...))
	}
	if !strings.HasSuffix(rs.Name, ".") {
		return invalid("name '%s' is not fully qualified (no trailing dot)", rs.Name)
	}
	if name := canonical(rs.Name); name != zoneName && !strings.HasSuffix(name, "."+zoneName) {
		return invalid("name '%s' is not in the zone '%s'", rs.Name, zoneName)
	}
	// A DNS name's labels hold at most 63 octets, the name 255 (RFC 1035
	// 2.3.4): Cloud DNS refuses another name as an invalid value.
	tooLong := len(rs.Name) > 255
	for _, l := range strings.Split(strings.TrimSuffix(rs.Name, "."), ".") {
		tooLong = tooLong || len(l) > 63
	}
	if tooLong {
		return errorf(http.StatusBadRequest, "invalid", "Invalid value for '%s.name': '%s'", field, rs.Name)
	}
	switch rs.Type {
	case "A", "AAAA", "CNAME", "SRV", "TXT", "MX", "NS", "PTR", "CAA", "SOA", "SPF", "DS":
	default:
		return invalid("type '%s' is not supported", rs.Type)
	}
	if rs.TTL < 0 {
		return invalid("ttl %d is negative", rs.TTL)
	}
	policy := rs.RoutingPolicy != nil
	if policy == (len(rs.Rrdatas) > 0) {
		return invalid("a resource record set needs exactly one of 'rrdatas' and 'routingPolicy'")
	}
	if policy {
		if err := validatePolicy(rs.RoutingPolicy, invalid); err != nil {
			return err
		}
	}
	all := rrdatas(rs)
	if len(all) > MaxRecordsPerRecordSet {
		return errorf(http.StatusForbidden, "quotaExceeded", "Quota exceeded for 'resourceRecordsPerRrset' in '%s': %d records, limit %d.", field, len(all), MaxRecordsPerRecordSet)
	}
	if rs.Type == "CNAME" && slices.ContainsFunc(items(rs), func(item []string) bool { return len(item) > 1 }) {
		return invalid("a CNAME resource record set has more than one rrdata")
	}
	for _, d := range all {
		if msg := checkRrdata(rs.Type, d); msg != "" {
			return invalid("rrdata '%s': %s", d, msg)
		}
	}
	return nil
}

// validatePolicy checks a routing policy: exactly one of wrr and geo, items
// with record data, weights not negative, geo items each in a different
// known Google Cloud region.
func validatePolicy(p *RoutingPolicy, invalid func(string, ...any) *apiError) *apiError {
	switch {
	case len(p.PrimaryBackup) > 0 || p.HealthCheck != "":
		return invalid("only weighted round robin ('wrr') and geo ('geo') routing policies are supported by this fake")
	case (p.Wrr == nil) == (p.Geo == nil):
		return invalid("a routing policy needs exactly one of 'wrr', 'geo' and 'primaryBackup'")
	case p.Wrr != nil:
		if len(p.Wrr.Items) == 0 {
			return invalid("'routingPolicy.wrr.items' is empty")
		}
		for j, it := range p.Wrr.Items {
			if it.Weight < 0 {
				return invalid("'routingPolicy.wrr.items[%d].weight' %v is negative", j, it.Weight)
			}
			if len(it.Rrdatas) == 0 {
				return invalid("'routingPolicy.wrr.items[%d].rrdatas' is empty", j)
			}
			if len(it.HealthCheckedTargets) > 0 {
				return invalid("health-checked targets are not supported by this fake")
			}
		}
	default:
		if len(p.Geo.Items) == 0 {
			return invalid("'routingPolicy.geo.items' is empty")
		}
		seen := map[string]bool{}
		for j, it := range p.Geo.Items {
			switch {
			case !slices.Contains(Regions, it.Location):
				return invalid("'routingPolicy.geo.items[%d].location' '%s' is not a Google Cloud region", j, it.Location)
			case seen[it.Location]:
				return invalid("'routingPolicy.geo.items[%d].location' '%s' is given by more than one item", j, it.Location)
			case len(it.Rrdatas) == 0:
				return invalid("'routingPolicy.geo.items[%d].rrdatas' is empty", j)
			case len(it.HealthCheckedTargets) > 0:
				return invalid("health-checked targets are not supported by this fake")
			}
			seen[it.Location] = true
		}
	}
	return nil
}

// checkRrdata checks one record's data in zone-file form for the types kfed
// writes; it returns what is wrong, or "".
func checkRrdata(typ, d string) string {
	switch typ {
	case "A":
		if ip, err := netip.ParseAddr(d); err != nil || !ip.Is4() {
			return "not an IPv4 address"
		}
	case "AAAA":
		if ip, err := netip.ParseAddr(d); err != nil || !ip.Is6() || ip.Is4In6() {
			return "not an IPv6 address"
		}
	case "CNAME":
		if !strings.HasSuffix(d, ".") || d == "." {
			return "the target is not a fully qualified name (no trailing dot)"
		}
	case "SRV":
		f := strings.Fields(d)
		if len(f) != 4 {
			return "not 'priority weight port target'"
		}
		for _, n := range f[:3] {
			if _, err := strconv.ParseUint(n, 10, 16); err != nil {
				return "'" + n + "' is not a 16-bit number"
			}
		}
		if !strings.HasSuffix(f[3], ".") {
			return "the target is not a fully qualified name (no trailing dot)"
		}
	case "TXT":
		if len(d) == 0 {
			return "empty"
		}
	}
	return ""
}

// sameRecordSet reports whether a deletion names a record set exactly as it
// is: TTL, rrdatas (in any order) and routing policy (items in order, each
// with its weight and rrdatas in any order).
func sameRecordSet(cur, del RecordSet) bool {
	same := func(a, b []string) bool {
		return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
	}
	if cur.TTL != del.TTL || !same(cur.Rrdatas, del.Rrdatas) || (cur.RoutingPolicy == nil) != (del.RoutingPolicy == nil) {
		return false
	}
	if cur.RoutingPolicy == nil {
		return true
	}
	if a, b := cur.RoutingPolicy.Geo, del.RoutingPolicy.Geo; a != nil || b != nil {
		if a == nil || b == nil || a.EnableFencing != b.EnableFencing || len(a.Items) != len(b.Items) {
			return false
		}
		for i := range a.Items {
			if a.Items[i].Location != b.Items[i].Location || !same(a.Items[i].Rrdatas, b.Items[i].Rrdatas) {
				return false
			}
		}
		return true
	}
	a, b := cur.RoutingPolicy.Wrr, del.RoutingPolicy.Wrr
	if a == nil || b == nil || len(a.Items) != len(b.Items) {
		return false
	}
	for i := range a.Items {
		if a.Items[i].Weight != b.Items[i].Weight || !same(a.Items[i].Rrdatas, b.Items[i].Rrdatas) {
			return false
		}
	}
	return true
}
