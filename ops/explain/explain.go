// Package explain says what the kfed CoreDNS plugin answers one client for
// one name now, and why: the DNSEndpoint and object that publish the name and
// the tenancy rule's word on it, the routing policy and failover state, each
// cluster's health verdict and every checker's vote on it, and the order the
// plugin gives the clusters (its own cluster, tiers and round-trip times
// inside a cluster, distances at the edge, weights), with what each DNS
// provider has published of the object.
//
// It computes the answer with the plugin's own functions, not a copy of
// them: the tenancy rule (tenancy.Endpoints), the plugin's index
// (plugin/kfed/index) built from the same DNSEndpoints and round-trip times,
// its answer order (Records.AppendFrom) and that order explained
// (Index.Rank). It calls no API itself: kfed explain reads the control
// plane and the GeoIP database and hands them over as a World, with a
// function that reads the object of each DNSEndpoint explained.
package explain

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/internal/geo"
	"github.com/kfed-io/kfed/plugin/kfed/index"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// Query is the question and who asks it.
type Query struct {
	// Name is the name asked for; any case, with or without the final dot.
	Name string
	// Type is dns.TypeA, dns.TypeAAAA or dns.TypeSRV.
	Type uint16
	// From is the member whose CoreDNS is asked (the plugin with `cluster
	// From`); "" asks the edge CoreDNS, the plugin of no cluster.
	From string
	// Subnet is the client's subnet at the edge (its EDNS Client Subnet),
	// and Location where the GeoIP database places it; nil when it places
	// it nowhere, or without a subnet.
	Subnet   netip.Prefix
	Location *geo.Point
}

// World is what the answer depends on, as kfed explain read it.
type World struct {
	Federation string
	// Trusted are the namespaces that may publish names that are no
	// namespace's (the plugin's trusted_namespaces).
	Trusted []string
	// Endpoints are the federation's DNSEndpoints.
	Endpoints []extdnsv1alpha1.DNSEndpoint
	// Reports are the federation's HealthReports: those of From's checkers
	// give the round-trip times that order clusters within a tier.
	Reports []kfedv1alpha1.HealthReport
	// Health is the checkers' quorum as the controller reads it, for each
	// checker's vote.
	Health publish.Health
	// Owner reads the object a DNSEndpoint publishes, false when it finds
	// none; it is asked only of the DNSEndpoints explained. Nil finds none.
	Owner func(*extdnsv1alpha1.DNSEndpoint) (Owner, bool)
	// TTL is the plugin's TTL for endpoints without their own (30).
	TTL uint32
}

// Owner is the federated object that a DNSEndpoint publishes.
type Owner struct {
	Kind, Namespace, Name string
	Annotations           map[string]string
}

// Explanation is the answer and why, as kfed explain prints it.
type Explanation struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Vantage string `json:"vantage"`
	// Rcode is NOERROR or NXDOMAIN.
	Rcode string `json:"rcode"`
	// Answer is one answer as the plugin draws it now; within a group of
	// equally near clusters the order is drawn anew for every query.
	Answer []string `json:"answer"`
	// Additional are the addresses of SRV targets.
	Additional []string `json:"additional,omitempty"`
	// Steps are the names followed, the asked name first, then each CNAME
	// target in the federation's records.
	Steps []Step `json:"steps"`
	// Refused are endpoints at the names that the tenancy rule keeps out.
	Refused []string `json:"refused,omitempty"`
}

// Step is one name of the answer and why it answers as it does.
type Step struct {
	Name string `json:"name"`
	// Objects are the DNSEndpoints with records at the name.
	Objects []Object `json:"objects,omitempty"`
	// CNAME is where the name points, when it is an alias: a place with no
	// serving cluster falls back to the place above.
	CNAME string `json:"cname,omitempty"`
	// Order is the clusters answered, in the plugin's order.
	Order []Ranked `json:"order,omitempty"`
	SRV   []string `json:"srv,omitempty"`
}

// Object is one DNSEndpoint with records at a step's name.
type Object struct {
	DNSEndpoint string `json:"dnsEndpoint"`
	// Owner is the federated object, "Kind namespace/name", when known.
	Owner string `json:"owner,omitempty"`
	// Tenancy says why the namespace may publish the name.
	Tenancy string `json:"tenancy"`
	Routing string `json:"routing"`
	// FailoverOrder, Pin and Active are a failover-routed object's order
	// of places, its pin, and the place serving now (since Since).
	FailoverOrder []string   `json:"failoverOrder,omitempty"`
	Pin           string     `json:"pin,omitempty"`
	Active        string     `json:"active,omitempty"`
	Since         *time.Time `json:"since,omitempty"`
	// Clusters are every cluster of the object's table, answered at the
	// name or not, and why.
	Clusters   []Cluster   `json:"clusters"`
	Publishers []Publisher `json:"publishers"`
}

// Cluster is one cluster of a DNSEndpoint's table.
type Cluster struct {
	Name      string   `json:"name"`
	Region    string   `json:"region,omitempty"`
	Zones     []string `json:"zones,omitempty"`
	Weight    int      `json:"weight"`
	Addresses []string `json:"addresses"`
	// Healthy is the verdict the DNSEndpoint carries, Verdict how the
	// checkers reach it now, and Votes each checker's ballot.
	Healthy bool `json:"healthy"`
	// Drained says an operator drained the cluster (kfed drain): out of
	// every name while another cluster can answer (publish.Drained).
	Drained bool   `json:"drained,omitempty"`
	Verdict string `json:"verdict,omitempty"`
	Votes   []Vote `json:"votes,omitempty"`
	// Reason is what the first checker that finds it down says.
	Reason string `json:"reason,omitempty"`
	// Answered says whether the name answers the cluster's addresses;
	// Why says why not, or why last.
	Answered bool   `json:"answered"`
	Why      string `json:"why,omitempty"`
}

// Vote is one checker's ballot on a cluster's endpoint.
type Vote struct {
	Checker  string `json:"checker"`
	Fresh    bool   `json:"fresh"`
	Degraded bool   `json:"degraded,omitempty"`
	Down     bool   `json:"down"`
}

// Ranked is a cluster's place in the answer order (index.Ranked).
type Ranked struct {
	Cluster   string   `json:"cluster"`
	Addresses []string `json:"addresses"`
	// Group: clusters of one group are equally near; Drawn groups are
	// drawn in proportion to Weight for each query.
	Group      int    `json:"group"`
	Drawn      bool   `json:"drawn,omitempty"`
	Weight     int    `json:"weight"`
	Local      bool   `json:"local,omitempty"`
	ClusterIPs bool   `json:"clusterIPs,omitempty"`
	Tier       string `json:"tier,omitempty"`
	RTT        string `json:"rtt,omitempty"`
	// DistanceKm is from the client at the edge; -1 for a cluster of no
	// known place.
	DistanceKm *float64 `json:"distanceKm,omitempty"`
}

// Publisher is what one DNS provider has published of an object.
type Publisher struct {
	Provider string `json:"provider"`
	// Current says the provider has the object's latest generation.
	Current    bool     `json:"current"`
	Generation int64    `json:"generation"`
	Conflicts  []string `json:"conflicts,omitempty"`
}

// ErrNoSuchName is returned when no DNSEndpoint of the federation has the
// name at all, admitted or not.
var ErrNoSuchName = errors.New("no DNSEndpoint has the name")

// Explain says what the plugin answers q in w, and why. intn draws the
// order within a group, as the plugin draws it (rand.IntN).
func Explain(q Query, w World, intn func(int) int) (*Explanation, error) {
	if intn == nil {
		intn = rand.IntN
	}
	name := dns.Fqdn(strings.ToLower(q.Name))
	if _, ok := dns.IsDomainName(name); !ok || name == "." {
		return nil, fmt.Errorf("%q is not a DNS name", q.Name)
	}
	switch q.Type {
	case dns.TypeA, dns.TypeAAAA, dns.TypeSRV:
	default:
		return nil, fmt.Errorf("type %s: explain answers A, AAAA and SRV", dns.TypeToString[q.Type])
	}
	x, admitted, refused := build(q, w)
	v := x.Inside()
	if q.From == "" && q.Location != nil {
		v = x.At(*q.Location)
	}
	e := &Explanation{Name: name, Type: dns.TypeToString[q.Type], Vantage: vantage(q), Rcode: "NOERROR"}
	for hop := 0; ; hop++ {
		e.Refused = append(e.Refused, refusalsAt(refused, name)...)
		records, exists := x.Lookup(name)
		if !exists {
			if hop == 0 && !anyHas(w.Endpoints, name) {
				return nil, fmt.Errorf("%s: %w of federation %s", name, ErrNoSuchName, w.Federation)
			}
			e.Rcode = "NXDOMAIN"
			return e, nil
		}
		step := Step{Name: name, Objects: objects(name, admitted, w)}
		if c := cnameOf(records); c != nil {
			step.CNAME = c.Target
			e.Answer = append(e.Answer, c.String())
			e.Steps = append(e.Steps, step)
			if _, ok := x.Lookup(c.Target); !ok || hop+1 == index.MaxChain || slices.ContainsFunc(e.Steps, func(s Step) bool { return s.Name == c.Target }) {
				return e, nil // the client's resolver follows it from here
			}
			name = c.Target
			continue
		}
		if records != nil {
			answer(e, &step, x, records, q.Type, v, intn)
		}
		e.Steps = append(e.Steps, step)
		return e, nil
	}
}

// build is the plugin's index for q's vantage, filled as the plugin fills
// it: each DNSEndpoint as the tenancy rule admits it, parsed with its
// cluster table and routing, and From's RTTs. It returns the admitted
// objects and the refusals, by object key.
func build(q Query, w World) (*index.Index, map[string]*extdnsv1alpha1.DNSEndpoint, map[string][]tenancy.Refusal) {
	x := index.New(q.From, cmp.Or(w.TTL, 30))
	rule := tenancy.NewEndpoints(w.Federation, w.Trusted)
	admitted := map[string]*extdnsv1alpha1.DNSEndpoint{}
	refused := map[string][]tenancy.Refusal{}
	for i := range w.Endpoints {
		ep, r := rule.Admit(&w.Endpoints[i])
		key := ep.Namespace + "/" + ep.Name
		clusters, _ := dnsendpoint.ReadClusters(ep)
		// What the plugin cannot serve it leaves out, as here.
		_ = x.SetObject(key, x.ParseRouted(ep.Spec.Endpoints, clusters, dnsendpoint.ByDistance(ep)))
		admitted[key], refused[key] = ep, r
	}
	if q.From != "" {
		var mine []*kfedv1alpha1.HealthReport
		for i := range w.Reports {
			if r := &w.Reports[i]; r.Cluster == q.From && r.Federation == w.Federation {
				mine = append(mine, r)
			}
		}
		x.SetRTTs(index.CombineRTTs(mine))
	}
	return x, admitted, refused
}

// answer fills e's answer and step's order from name's records.
func answer(e *Explanation, step *Step, x *index.Index, r *index.Records, qtype uint16, v index.Vantage, intn func(int) int) {
	switch qtype {
	case dns.TypeA, dns.TypeAAAA:
		rrs, _ := r.AppendFrom(nil, qtype, v, intn)
		e.Answer = append(e.Answer, rrStrings(rrs)...)
		for _, rk := range x.Rank(r, qtype, v) {
			step.Order = append(step.Order, ranked(rk))
		}
	case dns.TypeSRV:
		srvs := r.SRV()
		e.Answer = append(e.Answer, rrStrings(srvs)...)
		step.SRV = rrStrings(srvs)
		for _, rr := range srvs {
			if t, _ := x.Lookup(rr.(*dns.SRV).Target); t != nil {
				// As the plugin: a per-cluster name, the same to every client.
				a, _ := t.AppendFrom(nil, dns.TypeA, x.Inside(), intn)
				aaaa, _ := t.AppendFrom(nil, dns.TypeAAAA, x.Inside(), intn)
				e.Additional = append(e.Additional, rrStrings(append(a, aaaa...))...)
			}
		}
	}
}

func ranked(rk index.Ranked) Ranked {
	out := Ranked{Cluster: rk.Cluster, Group: rk.Group, Drawn: rk.Drawn, Weight: rk.Weight, Local: rk.Local, ClusterIPs: rk.ClusterIPs}
	for _, a := range rk.Addresses {
		out.Addresses = append(out.Addresses, a.String())
	}
	switch {
	case rk.ByDistance:
		d := -1.0
		if rk.Distance < 1e9 {
			d = float64(int(rk.Distance + 0.5))
		}
		out.DistanceKm = &d
	default:
		out.Tier = tierNames[rk.Tier]
		if rk.RTTMeasured {
			out.RTT = rk.RTT.String()
		}
	}
	return out
}

var tierNames = []string{"own cluster", "own zone", "own region", "elsewhere"}

// objects explains each admitted DNSEndpoint with records at name.
func objects(name string, admitted map[string]*extdnsv1alpha1.DNSEndpoint, w World) []Object {
	var out []Object
	for _, key := range slices.Sorted(maps.Keys(admitted)) {
		ep := admitted[key]
		if !has(ep, name) {
			continue
		}
		out = append(out, object(name, key, ep, w))
	}
	return out
}

// has reports whether ep has an endpoint at name (fully qualified, lower
// case).
func has(ep *extdnsv1alpha1.DNSEndpoint, name string) bool {
	for _, e := range ep.Spec.Endpoints {
		if dns.Fqdn(strings.ToLower(e.DNSName)) == name {
			return true
		}
	}
	return false
}

func anyHas(eps []extdnsv1alpha1.DNSEndpoint, name string) bool {
	for i := range eps {
		if has(&eps[i], name) {
			return true
		}
	}
	return false
}

func cnameOf(r *index.Records) *dns.CNAME {
	if r == nil {
		return nil
	}
	return r.CNAME()
}

func rrStrings(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		out = append(out, rr.String())
	}
	return out
}

// refusalsAt are the refusals of endpoints at name, each with its object.
func refusalsAt(refused map[string][]tenancy.Refusal, name string) []string {
	var out []string
	for _, key := range slices.Sorted(maps.Keys(refused)) {
		for _, r := range refused[key] {
			if dns.Fqdn(strings.ToLower(r.Name)) == name {
				out = append(out, key+": "+r.String())
			}
		}
	}
	return out
}

// vantage says who asks, in words.
func vantage(q Query) string {
	switch {
	case q.From != "":
		return q.From + "'s CoreDNS (the plugin with cluster " + q.From + ")"
	case !q.Subnet.IsValid():
		return "the edge CoreDNS, a client of no known place"
	case q.Location == nil:
		return fmt.Sprintf("the edge CoreDNS, a client in %s, which the GeoIP database places nowhere", q.Subnet)
	}
	return fmt.Sprintf("the edge CoreDNS, a client in %s, placed by GeoIP at %.2f, %.2f", q.Subnet, q.Location.Latitude, q.Location.Longitude)
}
