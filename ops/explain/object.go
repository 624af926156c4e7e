package explain

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/policy/failover"
)

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
	Drained bool `json:"drained,omitempty"`
	// Load is the endpoint's load as the table carries it (1 being its
	// target), nil without a figure; Shed says it is at or over its target
	// and out of the shared names while another has headroom.
	Load    *float64 `json:"load,omitempty"`
	Shed    bool     `json:"shed,omitempty"`
	Verdict string   `json:"verdict,omitempty"`
	Votes   []Vote   `json:"votes,omitempty"`
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
	Spilled    bool   `json:"spilled,omitempty"`
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

// object explains ep, admitted as key, at name: who publishes it and why
// its namespace may, its routing, and each cluster of its table.
func object(name, key string, ep *extdnsv1alpha1.DNSEndpoint, w World) Object {
	o := Object{DNSEndpoint: key, Tenancy: "namespace " + ep.Namespace + " may publish " + strings.TrimSuffix(name, ".") + " (tenancy rule)"}
	var (
		owner Owner
		found bool
	)
	if w.Owner != nil {
		owner, found = w.Owner(ep)
	}
	switch {
	case found:
		o.Owner = owner.Kind + " " + owner.Namespace + "/" + owner.Name
	case ep.Annotations[kfedv1alpha1.AnnotationHostnamesOf] != "":
		o.Owner = ep.Annotations[kfedv1alpha1.AnnotationHostnamesOf]
	}
	o.Routing = string(serviceconfig.RoutingWeighted)
	if found {
		// The object's own annotations, as the controller reads them;
		// what they get wrong is on the object's conditions.
		cfg, _ := serviceconfig.Parse(owner.Annotations)
		o.Routing, o.FailoverOrder, o.Pin = string(cfg.Routing), cfg.Failover.Order, cfg.Failover.Pin
	} else if dnsendpoint.ByDistance(ep) {
		o.Routing = dnsendpoint.RoutingProximity
	}
	state, _ := failover.ParseState(ep.Annotations[dnsendpoint.AnnotationFailover])
	if state.Active != "" {
		o.Routing = string(serviceconfig.RoutingFailover)
		o.Active = state.Active
		if !state.Since.IsZero() {
			o.Since = &state.Since
		}
	}
	at := addressesAt(ep, name)
	table, _ := dnsendpoint.ReadClusters(ep)
	for _, cn := range slices.Sorted(maps.Keys(table)) {
		o.Clusters = append(o.Clusters, cluster(table[cn], ep, at, o, w))
	}
	for _, p := range ep.Status.Publishers {
		o.Publishers = append(o.Publishers, Publisher{Provider: p.Provider, Generation: p.ObservedGeneration,
			Current: p.ObservedGeneration == ep.Generation, Conflicts: p.Conflicts})
	}
	return o
}

// cluster explains one cluster of ep's table at a name whose addresses are
// at.
func cluster(c *dnsendpoint.Cluster, ep *extdnsv1alpha1.DNSEndpoint, at map[netip.Addr]bool, o Object, w World) Cluster {
	out := Cluster{Name: c.Name, Region: c.Region, Zones: c.Zones, Weight: c.Weight, Healthy: !c.Unhealthy, Drained: c.Drained, Load: c.Load, Shed: c.Shed}
	for _, a := range c.Addresses {
		out.Addresses = append(out.Addresses, a.String())
		out.Answered = out.Answered || at[a]
	}
	if w.Health.Judged() {
		key := kfedv1alpha1.EndpointKey(ep.Namespace, ep.Name, c.Name)
		out.Verdict = w.Health.Verdict(key, !c.Unhealthy).Tally.String()
		ballots, reason := w.Health.Ballots(key)
		out.Reason = reason
		for _, b := range ballots {
			out.Votes = append(out.Votes, Vote{Checker: b.Checker, Fresh: b.Age < w.Health.Freshness(), Degraded: b.Degraded, Down: b.Unhealthy})
		}
	} else {
		out.Verdict = "no health checkers: every endpoint is healthy"
	}
	switch {
	case out.Answered && c.Weight == 0:
		out.Why = "weight 0 (no ready replicas): answered after every cluster with a weight"
	case out.Answered && c.Drained:
		out.Why = "drained (kfed drain), but kept: no other cluster that is neither drained nor down can answer"
	case out.Answered:
	case c.Drained:
		out.Why = "drained (kfed drain): out of every name while another cluster can answer"
	case c.Unhealthy:
		out.Why = "unhealthy by the checkers' verdict: left out of the shared names, kept at its own name"
		if out.Reason != "" {
			out.Why += " (a checker says: " + out.Reason + ")"
		}
	case c.Shed:
		out.Why = fmt.Sprintf("shed: its load %.2f is at or over its target while another cluster has headroom; out of the shared names, kept at its own name", *cmp.Or(c.Load, new(1.0)))
	case o.Active != "" && !inPlace(c, o.Active):
		out.Why = "a passive place: the failover order's active place is " + o.Active
	default:
		out.Why = "not in this name's region or zone"
	}
	return out
}

// inPlace reports whether c is in place, a region, zone or cluster name.
func inPlace(c *dnsendpoint.Cluster, place string) bool {
	return c.Name == place || c.Region == place || slices.Contains(c.Zones, place)
}

// addressesAt are the addresses ep publishes at name.
func addressesAt(ep *extdnsv1alpha1.DNSEndpoint, name string) map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	for _, e := range ep.Spec.Endpoints {
		if dns.Fqdn(strings.ToLower(e.DNSName)) != name || (e.RecordType != "A" && e.RecordType != "AAAA") {
			continue
		}
		for _, t := range e.Targets {
			if a, err := netip.ParseAddr(t); err == nil {
				out[a.Unmap()] = true
			}
		}
	}
	return out
}

// String is the explanation as kfed explain prints it for a person.
func (e *Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s, asked of %s: %s\n", strings.TrimSuffix(e.Name, "."), e.Type, e.Vantage, e.Rcode)
	for _, a := range e.Answer {
		fmt.Fprintf(&b, "  %s\n", a)
	}
	for _, a := range e.Additional {
		fmt.Fprintf(&b, "  (additional) %s\n", a)
	}
	for _, r := range e.Refused {
		fmt.Fprintf(&b, "refused by the tenancy rule, not served: %s\n", r)
	}
	for i, s := range e.Steps {
		b.WriteString("\n")
		s.write(&b, i+1)
	}
	return b.String()
}

func (s Step) write(b *strings.Builder, n int) {
	fmt.Fprintf(b, "%d. %s\n", n, strings.TrimSuffix(s.Name, "."))
	for _, o := range s.Objects {
		owner := o.Owner
		if owner == "" {
			owner = "an object not found"
		}
		fmt.Fprintf(b, "   published by DNSEndpoint %s for %s; %s\n", o.DNSEndpoint, owner, o.Tenancy)
		fmt.Fprintf(b, "   routing: %s", o.Routing)
		if len(o.FailoverOrder) > 0 {
			fmt.Fprintf(b, ", failover order %s", strings.Join(o.FailoverOrder, ", "))
		}
		if o.Pin != "" {
			fmt.Fprintf(b, ", pinned to %s", o.Pin)
		}
		if o.Active != "" {
			fmt.Fprintf(b, ", active place %s", o.Active)
			if o.Since != nil {
				fmt.Fprintf(b, " since %s", o.Since.UTC().Format("2006-01-02 15:04:05Z"))
			}
		}
		b.WriteString("\n")
		for _, c := range o.Clusters {
			state := "healthy"
			if !c.Healthy {
				state = "unhealthy"
			}
			if c.Drained {
				state += ", drained"
			}
			if c.Load != nil {
				state += fmt.Sprintf(", load %.2f", *c.Load)
				if c.Shed {
					state += " (shed)"
				}
			}
			fmt.Fprintf(b, "   - %s (%s %s) weight %d, %s: %s\n", c.Name, c.Region, strings.Join(c.Zones, ","), c.Weight, state, c.Verdict)
			if len(c.Votes) > 0 {
				var vs []string
				for _, v := range c.Votes {
					vs = append(vs, v.String())
				}
				fmt.Fprintf(b, "     votes: %s\n", strings.Join(vs, ", "))
			}
			if c.Why != "" {
				fmt.Fprintf(b, "     %s\n", c.Why)
			}
		}
		if len(o.Publishers) == 0 {
			b.WriteString("   providers: none has published it (kfed dns sync writes status.publishers)\n")
		}
		for _, p := range o.Publishers {
			state := "has the latest records"
			if !p.Current {
				state = fmt.Sprintf("has generation %d, not the latest", p.Generation)
			}
			fmt.Fprintf(b, "   provider %s %s", p.Provider, state)
			if len(p.Conflicts) > 0 {
				fmt.Fprintf(b, "; left alone, owned by another: %s", strings.Join(p.Conflicts, ", "))
			}
			b.WriteString("\n")
		}
	}
	if s.CNAME != "" {
		fmt.Fprintf(b, "   alias to %s: no cluster serves this place, so it falls back to the place above\n", strings.TrimSuffix(s.CNAME, "."))
	}
	for _, srv := range s.SRV {
		fmt.Fprintf(b, "   %s\n", srv)
	}
	if len(s.Order) > 0 {
		b.WriteString("   order, nearest first (#: group, equally near):\n")
	}
	for _, r := range s.Order {
		fmt.Fprintf(b, "     #%d %s %s: %s\n", r.Group+1, r.Cluster, strings.Join(r.Addresses, " "), r.why())
	}
}

func (v Vote) String() string {
	s := v.Checker
	switch {
	case !v.Fresh:
		s += " stale (not counted)"
	case v.Degraded:
		s += " degraded (abstains)"
	case v.Down:
		s += " down"
	default:
		s += " up"
	}
	return s
}

// why says in words why r is where it is.
func (r Ranked) why() string {
	var parts []string
	switch {
	case r.Local && r.ClusterIPs:
		parts = append(parts, "this CoreDNS's own cluster, first, by its cluster IPs")
	case r.Local:
		parts = append(parts, "this CoreDNS's own cluster, first")
	case r.Spilled:
		parts = append(parts, "this CoreDNS's own cluster, but more loaded than the others by over 0.1: drawn with the nearest of them")
	case r.DistanceKm != nil && *r.DistanceKm < 0:
		parts = append(parts, "no known place: after every placed cluster")
	case r.DistanceKm != nil:
		parts = append(parts, fmt.Sprintf("%.0f km from the client", *r.DistanceKm))
	case r.Tier != "":
		parts = append(parts, r.Tier)
	}
	if r.RTT != "" {
		parts = append(parts, "RTT "+r.RTT)
	}
	parts = append(parts, fmt.Sprintf("weight %d", r.Weight))
	if r.Drawn {
		parts = append(parts, "drawn by weight with the others of its group for each query")
	} else if r.Weight == 0 {
		parts = append(parts, "after every cluster with a weight")
	}
	return strings.Join(parts, ", ")
}
