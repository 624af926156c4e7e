// Package dnsendpoint is kfed's contract on ExternalDNS's DNSEndpoint schema
// (docs/design.md, "Desired DNS state"; ADR 0003): the names of a federated
// Service, how its records are laid out so that ExternalDNS can publish them as
// they are, and where the per-cluster facts that kfed's own readers need are
// kept — which cluster an address belongs to, its weight, cluster IPs and
// load-balancer hostname.
//
// The layout: one endpoint per name and record type, with every target of the
// name and nothing ExternalDNS would read back differently (no set identifier,
// no provider-specific properties, SRV targets fully qualified), so that
// ExternalDNS's plan finds nothing to change once a name is published. The
// per-cluster facts are one table per object, in the annotation
// kfed.io/clusters; a reader attributes each address target to the clusters
// whose addresses hold it.
//
// The services controller writes through this package; the DNS sync, the
// CoreDNS plugin and the CLI read through it, and none of them parses the
// object itself. Reading also accepts the layout kfed wrote before (ADR 0002:
// one endpoint per cluster with a set identifier and kfed.io/* properties), so
// a reader upgraded before the writer keeps working.
package dnsendpoint

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/internal/geo"
)

// AnnotationClusters holds a DNSEndpoint's cluster table: a JSON array of
// Cluster, sorted by name.
const AnnotationClusters = "kfed.io/clusters"

// AnnotationFailover holds, on the DNSEndpoint of a name routed by failover,
// the active place and since when, and a better place waiting out its
// failback hold (failover.State as JSON), so that the decision outlives the
// controller that made it.
const AnnotationFailover = "kfed.io/failover"

// AnnotationRouting holds, on the DNSEndpoint of a Service routed by
// proximity, RoutingProximity: readers that answer clients outside the
// clusters (the plugin without a cluster) order its clusters nearest first.
// A DNSEndpoint without it is ordered by weight alone there. It is the
// Service's own kfed.io/routing, written only for proximity, so that the
// default (weighted) changes nothing of the objects kfed wrote before.
const AnnotationRouting = "kfed.io/routing"

// RoutingProximity is AnnotationRouting's value for nearest first.
const RoutingProximity = "proximity"

// ByDistance reports whether obj's clusters are ordered by distance for
// clients outside them (AnnotationRouting).
func ByDistance(obj *extdnsv1alpha1.DNSEndpoint) bool {
	return obj.Annotations[AnnotationRouting] == RoutingProximity
}

// DefaultWeight is the weight of a cluster that names none, or names one that
// is not a non-negative integer.
const DefaultWeight = 1

// MaxWeight bounds a weight, so that sums over a name's clusters cannot
// overflow; weights are relative, so larger ones add nothing.
const MaxWeight = 1 << 20

// Cluster is one member cluster's endpoint of a federated Service.
type Cluster struct {
	Name   string
	Region string
	Zones  []string
	// Weight is the cluster's DNS weight, 0 to MaxWeight: 0 keeps its
	// addresses published but answered last.
	Weight int
	// Addresses are the load balancer's addresses: its IPs, or what its
	// hostname resolved to.
	Addresses []netip.Addr
	// ClusterIPs are the shard's cluster IPs, the addresses a client inside
	// the cluster should use.
	ClusterIPs []netip.Addr
	// Hostname is the load balancer's name when its ingress was a name (an AWS
	// ELB); a provider with aliases may publish an alias to it.
	Hostname string
	// Ports are the shard's ports.
	Ports []Port
	// Unhealthy is the health checkers' last verdict: the cluster's
	// addresses are left out of the global, region and zone names and SRV
	// (unless no cluster is healthy), and kept at its own name. It is kept
	// here so that a verdict outlives the controller that reached it.
	Unhealthy bool
	// Drained says the cluster is drained (its Cluster's spec.drained): its
	// addresses are in none of the object's names, not even its own, unless
	// every cluster of the object is drained (publish.Live). The row stays
	// so that readers can tell why, and undrain finds it again.
	Drained bool
	// Location is where the cluster is (its Cluster's spec.location, else
	// its region's place), for ordering clusters by distance; nil when
	// unknown.
	Location *geo.Point
	// Load is the endpoint's load as its health checkers read it (the
	// median of its panel's figures), 1 being its target; nil without a
	// figure. Weight already follows it (package policy/load); the CoreDNS
	// plugin reads it to tell when its own cluster is too loaded to be
	// answered first.
	Load *float64
	// Shed says the cluster is at or over its target while another has
	// headroom: its addresses leave the global, region and zone names and
	// SRV, as an unhealthy cluster's do, and stay at its own name.
	Shed bool
}

// MaxLoad is the highest load a table carries; more reads as MaxLoad.
const MaxLoad = 2.0

// Port is a Service port; Name is empty for an unnamed one.
type Port struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol"`
	Port     int32  `json:"port"`
}

// wireCluster is Cluster as the annotation holds it. The weight is read
// apart from the rest so that a bad weight costs only the weight.
type wireCluster struct {
	Name       string          `json:"name"`
	Region     string          `json:"region,omitempty"`
	Zones      []string        `json:"zones,omitempty"`
	Weight     json.RawMessage `json:"weight,omitempty"`
	Addresses  []string        `json:"addresses,omitempty"`
	ClusterIPs []string        `json:"clusterIPs,omitempty"`
	Hostname   string          `json:"hostname,omitempty"`
	Ports      []Port          `json:"ports,omitempty"`
	Unhealthy  bool            `json:"unhealthy,omitempty"`
	Drained    bool            `json:"drained,omitempty"`
	Location   json.RawMessage `json:"location,omitempty"`
	Load       json.RawMessage `json:"load,omitempty"`
	Shed       bool            `json:"shed,omitempty"`
}

// wireLocation is a location as the table holds it, read apart from the
// rest of its row so that a bad one costs only the location.
type wireLocation struct {
	Latitude  *float64 `json:"latitude"`
	Longitude *float64 `json:"longitude"`
}

// Clusters are the clusters one DNSEndpoint has endpoints of, by name.
type Clusters map[string]*Cluster

// SetClusters writes clusters as obj's cluster table, or removes the table
// when there are none.
func SetClusters(obj *extdnsv1alpha1.DNSEndpoint, clusters []Cluster) {
	if len(clusters) == 0 {
		delete(obj.Annotations, AnnotationClusters)
		return
	}
	wire := make([]wireCluster, len(clusters))
	for i, c := range clusters {
		wire[i] = wireCluster{
			Name: c.Name, Region: c.Region, Zones: c.Zones, Hostname: c.Hostname, Ports: c.Ports, Unhealthy: c.Unhealthy, Drained: c.Drained,
			Shed:       c.Shed,
			Weight:     json.RawMessage(strconv.Itoa(c.Weight)),
			Addresses:  addrStrings(c.Addresses),
			ClusterIPs: addrStrings(c.ClusterIPs),
		}
		if p := c.Location; p != nil {
			b, err := json.Marshal(wireLocation{Latitude: &p.Latitude, Longitude: &p.Longitude})
			if err != nil {
				panic(fmt.Sprintf("encoding location %v of cluster %s: %v", *p, c.Name, err))
			}
			wire[i].Location = b
		}
		if c.Load != nil {
			wire[i].Load = json.RawMessage(strconv.FormatFloat(max(0, min(*c.Load, MaxLoad)), 'f', -1, 64))
		}
	}
	slices.SortFunc(wire, func(a, b wireCluster) int { return strings.Compare(a.Name, b.Name) })
	b, err := json.Marshal(wire)
	if err != nil {
		panic(fmt.Sprintf("encoding a cluster table cannot fail: %v", err))
	}
	if obj.Annotations == nil {
		obj.Annotations = map[string]string{}
	}
	obj.Annotations[AnnotationClusters] = string(b)
}

// ReadClusters reads obj's cluster table. What cannot be read is reported in
// the error and left out, or given its default (a bad weight is
// DefaultWeight); the rest is returned all the same.
func ReadClusters(obj *extdnsv1alpha1.DNSEndpoint) (Clusters, error) {
	raw, ok := obj.Annotations[AnnotationClusters]
	if !ok {
		return legacyClusters(obj)
	}
	var wire []wireCluster
	if err := json.Unmarshal([]byte(raw), &wire); err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON list of clusters: %w", AnnotationClusters, err)
	}
	out := make(Clusters, len(wire))
	var errs []error
	for i, w := range wire {
		if w.Name == "" {
			errs = append(errs, fmt.Errorf("annotation %s: cluster %d has no name", AnnotationClusters, i))
			continue
		}
		if out[w.Name] != nil {
			errs = append(errs, fmt.Errorf("annotation %s: cluster %s is listed twice; the first counts", AnnotationClusters, w.Name))
			continue
		}
		c := &Cluster{Name: w.Name, Region: w.Region, Zones: w.Zones, Hostname: w.Hostname, Ports: w.Ports, Unhealthy: w.Unhealthy, Drained: w.Drained, Shed: w.Shed}
		var err error
		if c.Weight, err = ParseWeight(string(bytes.TrimSpace(w.Weight))); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", w.Name, err))
		}
		if c.Addresses, err = parseAddrs(w.Addresses); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s addresses: %w", w.Name, err))
		}
		if c.ClusterIPs, err = parseAddrs(w.ClusterIPs); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s cluster IPs: %w", w.Name, err))
		}
		if c.Location, err = parseLocation(w.Location); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", w.Name, err))
		}
		if c.Load, err = parseLoad(w.Load); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", w.Name, err))
		}
		out[w.Name] = c
	}
	return out, errors.Join(errs...)
}

// ParseWeight reads a weight: a non-negative integer, at most MaxWeight (a
// larger one is MaxWeight). Empty is DefaultWeight; so is anything else, with
// an error saying why.
func ParseWeight(s string) (int, error) {
	if s == "" {
		return DefaultWeight, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return DefaultWeight, fmt.Errorf("weight %s is not a non-negative integer; using %d", s, DefaultWeight)
	}
	return int(min(n, MaxWeight)), nil
}

// parseLocation reads a row's location: nil for none, and nil with an error
// for one that is not {"latitude": N, "longitude": N} on the map.
func parseLocation(raw json.RawMessage) (*geo.Point, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	var w wireLocation
	if err := json.Unmarshal(raw, &w); err != nil || w.Latitude == nil || w.Longitude == nil {
		return nil, fmt.Errorf("location %s is not {\"latitude\": N, \"longitude\": N}; left out", raw)
	}
	p := geo.Point{Latitude: *w.Latitude, Longitude: *w.Longitude}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("location: %w; left out", err)
	}
	return &p, nil
}

// parseLoad reads a row's load: nil for none, and nil with an error for
// one that is not a number from 0; above MaxLoad reads as MaxLoad.
func parseLoad(raw json.RawMessage) (*float64, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	u, err := strconv.ParseFloat(string(t), 64)
	if err != nil || !(u >= 0) || math.IsInf(u, 0) {
		return nil, fmt.Errorf("load %s is not a number from 0; left out", t)
	}
	u = min(u, MaxLoad)
	return &u, nil
}

// Group is the addresses of one endpoint that belong to one cluster, or, with
// Cluster nil, those no cluster claims.
type Group struct {
	Cluster *Cluster
	Addrs   []netip.Addr
}

// Groups attributes the targets of an A or AAAA endpoint to clusters: each
// address to every cluster of the table whose addresses hold it (there is one
// such cluster unless two clusters share an address), addresses no cluster
// claims to a group without one. Groups come sorted by cluster name, the
// unclaimed last. An endpoint in the older layout (a set identifier, kfed.io/*
// properties) is one group, its cluster read from its properties. Targets
// that are not addresses of the endpoint's type are left out and reported.
func (cs Clusters) Groups(e *extdnsv1alpha1.Endpoint) ([]Group, error) {
	addrs, err := addresses(e)
	if legacy := legacyCluster(e); legacy != nil {
		c, lerr := legacy()
		return []Group{{Cluster: c, Addrs: addrs}}, errors.Join(err, lerr)
	}
	var groups []Group
	var unclaimed []netip.Addr
	for _, a := range addrs {
		claimed := false
		for _, c := range cs {
			if slices.Contains(c.Addresses, a) {
				claimed = true
				i := slices.IndexFunc(groups, func(g Group) bool { return g.Cluster == c })
				if i < 0 {
					groups = append(groups, Group{Cluster: c})
					i = len(groups) - 1
				}
				groups[i].Addrs = append(groups[i].Addrs, a)
			}
		}
		if !claimed {
			unclaimed = append(unclaimed, a)
		}
	}
	slices.SortFunc(groups, func(a, b Group) int { return strings.Compare(a.Cluster.Name, b.Cluster.Name) })
	if len(unclaimed) > 0 {
		groups = append(groups, Group{Addrs: unclaimed})
	}
	return groups, err
}

// addresses parses an A or AAAA endpoint's targets.
func addresses(e *extdnsv1alpha1.Endpoint) ([]netip.Addr, error) {
	family := netip.Addr.Is4
	if strings.EqualFold(e.RecordType, "AAAA") {
		family = func(a netip.Addr) bool { return a.Is6() && !a.Is4In6() }
	}
	var out []netip.Addr
	var errs []error
	for _, t := range e.Targets {
		a, err := netip.ParseAddr(t)
		if err != nil || !family(a) || a.Zone() != "" {
			errs = append(errs, fmt.Errorf("target %q is not an %s address", t, e.RecordType))
			continue
		}
		out = append(out, a)
	}
	return out, errors.Join(errs...)
}

// Legacy provider-specific property names (ADR 0002), read but no longer
// written.
const (
	propCluster   = "kfed.io/cluster"
	propRegion    = "kfed.io/region"
	propZone      = "kfed.io/zone"
	propWeight    = "kfed.io/weight"
	propClusterIP = "kfed.io/cluster-ip"
	propHostname  = "kfed.io/hostname"
)

// legacyCluster returns, for an endpoint in the older per-cluster layout, a
// function reading its cluster; nil for any other endpoint.
func legacyCluster(e *extdnsv1alpha1.Endpoint) func() (*Cluster, error) {
	name := cmp.Or(property(e, propCluster), e.SetIdentifier)
	if name == "" {
		return nil
	}
	return func() (*Cluster, error) {
		c := &Cluster{Name: name, Region: property(e, propRegion), Hostname: property(e, propHostname)}
		if z := property(e, propZone); z != "" {
			c.Zones = strings.Split(z, ",")
		}
		var errs []error
		var err error
		if c.Weight, err = ParseWeight(property(e, propWeight)); err != nil {
			errs = append(errs, err)
		}
		c.Addresses, _ = addresses(e)
		if ips := property(e, propClusterIP); ips != "" {
			if c.ClusterIPs, err = parseAddrs(strings.Split(ips, ",")); err != nil {
				errs = append(errs, fmt.Errorf("cluster IPs: %w", err))
			}
		}
		return c, errors.Join(errs...)
	}
}

// legacyClusters reads the clusters of an object in the older layout, which
// has no table, from its per-cluster endpoints. Ports are not among them.
func legacyClusters(obj *extdnsv1alpha1.DNSEndpoint) (Clusters, error) {
	var out Clusters
	var errs []error
	for i := range obj.Spec.Endpoints {
		e := &obj.Spec.Endpoints[i]
		legacy := legacyCluster(e)
		if legacy == nil {
			continue
		}
		c, err := legacy()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", e.RecordType, e.DNSName, err))
		}
		if out == nil {
			out = Clusters{}
		}
		if have := out[c.Name]; have != nil {
			// A cluster's A and AAAA endpoints each carry its addresses and
			// cluster IPs of their own family.
			have.Addresses = union(have.Addresses, c.Addresses)
			have.ClusterIPs = union(have.ClusterIPs, c.ClusterIPs)
			continue
		}
		out[c.Name] = c
	}
	return out, errors.Join(errs...)
}

func property(e *extdnsv1alpha1.Endpoint, name string) string {
	for _, p := range e.ProviderSpecific {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

func parseAddrs(ss []string) ([]netip.Addr, error) {
	var out []netip.Addr
	var errs []error
	for _, s := range ss {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil || a.Zone() != "" {
			errs = append(errs, fmt.Errorf("%q is not an IP address", s))
			continue
		}
		out = append(out, a.Unmap())
	}
	return out, errors.Join(errs...)
}

func union(have, more []netip.Addr) []netip.Addr {
	for _, a := range more {
		if !slices.Contains(have, a) {
			have = append(have, a)
		}
	}
	return have
}

func addrStrings(addrs []netip.Addr) []string {
	if len(addrs) == 0 {
		return nil
	}
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}
