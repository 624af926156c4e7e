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

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
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
	if q.From == "" {
		v = v.For(q.Subnet) // the subnet's own draw, as the edge gives it
	}
	e := &Explanation{Name: name, Type: dns.TypeToString[q.Type], Vantage: vantageOf(q), Rcode: "NOERROR"}
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
		step := Step{Name: name, Objects: objectsAt(name, admitted, w)}
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
			fillAnswer(e, &step, x, records, q.Type, v, intn)
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

// fillAnswer fills e's answer and step's order from name's records.
func fillAnswer(e *Explanation, step *Step, x *index.Index, r *index.Records, qtype uint16, v index.Vantage, intn func(int) int) {
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
	out := Ranked{Cluster: rk.Cluster, Group: rk.Group, Drawn: rk.Drawn, Weight: rk.Weight, Local: rk.Local, Spilled: rk.Spilled, ClusterIPs: rk.ClusterIPs}
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

// objectsAt explains each admitted DNSEndpoint with records at name.
func objectsAt(name string, admitted map[string]*extdnsv1alpha1.DNSEndpoint, w World) []Object {
	var out []Object
	for _, key := range slices.Sorted(maps.Keys(admitted)) {
		ep := admitted[key]
		if !hasName(ep, name) {
			continue
		}
		out = append(out, object(name, key, ep, w))
	}
	return out
}

// hasName reports whether ep has an endpoint at name (fully qualified, lower
// case).
func hasName(ep *extdnsv1alpha1.DNSEndpoint, name string) bool {
	for _, e := range ep.Spec.Endpoints {
		if dns.Fqdn(strings.ToLower(e.DNSName)) == name {
			return true
		}
	}
	return false
}

func anyHas(eps []extdnsv1alpha1.DNSEndpoint, name string) bool {
	for i := range eps {
		if hasName(&eps[i], name) {
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

// vantageOf says who asks, in words.
func vantageOf(q Query) string {
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
