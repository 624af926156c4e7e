// Package zone is one member cluster's clusterset zone (clusterset.local) as
// the Multi-Cluster Services DNS specification (KEP-1645, specification.md)
// lays it out: the member's ServiceImports and MCS EndpointSlices in, the
// records of every name out. It holds no Kubernetes client and serves no
// DNS: the clusterset plugin feeds it from informers and answers from it, so
// that no query calls the API server.
//
// For Service S in namespace N, cluster ID C and zone Z:
//
//	S.N.svc.Z                  A/AAAA: a ClusterSetIP import's IPs, or a headless import's ready endpoints
//	                           SRV: one per port number (named or not), targeting the service name or,
//	                           headless, each endpoint's name
//	_PORT._PROTO.S.N.svc.Z     SRV per named port, with the same targets
//	HOST.C.S.N.svc.Z           A/AAAA of a headless import's ready endpoint in cluster C
//	dns-version.Z              TXT "1.0.0", the specification's schema version
//
// HOST is the endpoint's hostname, or for one without, its address with dots
// or colons as dashes (10-1-2-3), the "system-assigned identifier" the
// specification allows, as CoreDNS's kubernetes plugin names such endpoints.
// A headless import without a ready endpoint has no names (NXDOMAIN, as the
// specification says); the names between a name and the zone (N.svc.Z,
// _tcp.S.N.svc.Z, C.S.N.svc.Z) are empty non-terminals.
package zone

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/miekg/dns"
)

// SchemaVersion is the version of the MCS DNS specification served, which
// dns-version.ZONE answers.
const SchemaVersion = "1.0.0"

// versionTTL is dns-version's TTL, the specification's example: the schema
// does not change while a server runs.
const versionTTL = 28800

// Node is the records of one name. Its slices are shared by every reply and
// never change: a reply appends them to its own sections.
type Node struct {
	A, AAAA, SRV, TXT []dns.RR
	// Extra is the additional section of an SRV answer: the addresses of
	// its targets.
	Extra []dns.RR
}

// empty is the node of an empty non-terminal.
var empty = &Node{}

// Zone is the clusterset zone. Its methods are safe for concurrent use;
// Lookup, the one a query calls, takes a read lock and a map lookup.
type Zone struct {
	origin string // fully qualified, lower case
	ttl    uint32

	mu       sync.RWMutex
	names    map[string]*Node // names with records
	ents     map[string]int   // empty non-terminals, with the services that need each
	services map[string]*service
	slices   map[string]string // EndpointSlice namespace/name -> its service's key
	count    atomic.Int64      // names with records, for metrics
}

// service is one namespace/name: its import, if any, its slices, and the
// names it put in the zone.
type service struct {
	imp    *Import
	slices map[string]*Slice
	names  []string
	ents   []string
}

// New returns the empty zone origin (such as "clusterset.local.") whose
// records have TTL ttl.
func New(origin string, ttl uint32) *Zone {
	z := &Zone{origin: dns.Fqdn(strings.ToLower(origin)), ttl: ttl, names: map[string]*Node{},
		ents: map[string]int{}, services: map[string]*service{}, slices: map[string]string{}}
	version := "dns-version." + z.origin
	z.names[version] = &Node{TXT: []dns.RR{&dns.TXT{
		Hdr: dns.RR_Header{Name: version, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: versionTTL},
		Txt: []string{SchemaVersion},
	}}}
	z.count.Store(1)
	return z
}

// Origin is the zone's name, fully qualified and lower case.
func (z *Zone) Origin() string { return z.origin }

// Lookup returns the records of name (lower case, fully qualified) and
// whether it exists; an empty non-terminal exists without records. The
// apex is the caller's.
func (z *Zone) Lookup(name string) (*Node, bool) {
	z.mu.RLock()
	defer z.mu.RUnlock()
	if n, ok := z.names[name]; ok {
		return n, true
	}
	if z.ents[name] > 0 {
		return empty, true
	}
	return nil, false
}

// Len is the number of names with records.
func (z *Zone) Len() int { return int(z.count.Load()) }

// SetImport adds or replaces the ServiceImport imp.
func (z *Zone) SetImport(imp *Import) {
	z.mu.Lock()
	defer z.mu.Unlock()
	s := z.service(imp.Namespace + "/" + imp.Name)
	s.imp = imp
	z.rebuild(imp.Namespace, imp.Name, s)
}

// DeleteImport removes the ServiceImport namespace/name: its names go, its
// EndpointSlices wait for another.
func (z *Zone) DeleteImport(namespace, name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if s := z.services[namespace+"/"+name]; s != nil {
		s.imp = nil
		z.rebuild(namespace, name, s)
	}
}

// SetSlice adds or replaces the EndpointSlice key (namespace/name), or,
// with a nil s, removes it: one whose labels no longer make it an MCS slice
// is removed as if deleted.
func (z *Zone) SetSlice(key string, s *Slice) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if old, ok := z.slices[key]; ok && (s == nil || old != s.Namespace+"/"+s.Service) {
		// Gone, or moved to another service by a label change.
		svc := z.services[old]
		delete(svc.slices, key)
		delete(z.slices, key)
		ns, name, _ := strings.Cut(old, "/")
		z.rebuild(ns, name, svc)
	}
	if s == nil {
		return
	}
	svcKey := s.Namespace + "/" + s.Service
	svc := z.service(svcKey)
	svc.slices[key] = s
	z.slices[key] = svcKey
	z.rebuild(s.Namespace, s.Service, svc)
}

func (z *Zone) service(key string) *service {
	s := z.services[key]
	if s == nil {
		s = &service{slices: map[string]*Slice{}}
		z.services[key] = s
	}
	return s
}

// rebuild replaces the names of namespace/name with those its import and
// slices make now, and forgets a service with neither.
func (z *Zone) rebuild(namespace, name string, s *service) {
	for _, n := range s.names {
		delete(z.names, n)
	}
	for _, e := range s.ents {
		if z.ents[e]--; z.ents[e] <= 0 {
			delete(z.ents, e)
		}
	}
	z.count.Add(-int64(len(s.names)))
	s.names, s.ents = nil, nil
	if s.imp == nil && len(s.slices) == 0 {
		delete(z.services, namespace+"/"+name)
		return
	}
	keys := make([]string, 0, len(s.slices))
	for k := range s.slices {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ordered := make([]*Slice, len(keys))
	for i, k := range keys {
		ordered[i] = s.slices[k]
	}
	built := Build(z.origin, z.ttl, namespace, name, s.imp, ordered)
	for n, node := range built {
		z.names[n] = node
		s.names = append(s.names, n)
	}
	z.count.Add(int64(len(s.names)))
	// Every name between a name and the origin exists, as an empty
	// non-terminal where it has no records of its own.
	seen := map[string]bool{}
	for n := range built {
		for p := parent(n); p != z.origin && p != "" && !seen[p]; p = parent(p) {
			seen[p] = true
			if built[p] == nil {
				s.ents = append(s.ents, p)
				z.ents[p]++
			}
		}
	}
}

// parent returns name without its first label, "" at the root.
func parent(name string) string {
	off, end := dns.NextLabel(name, 0)
	if end {
		return ""
	}
	return name[off:]
}

// Build returns the names, with their records, of the import imp of
// namespace/name and the EndpointSlices of its service, in origin: none
// without an import, or for a headless import without a ready endpoint.
// Slices are read in the order given.
func Build(origin string, ttl uint32, namespace, name string, imp *Import, slices []*Slice) map[string]*Node {
	if imp == nil {
		return nil
	}
	b := builder{ttl: ttl, nodes: map[string]*Node{}, srvs: map[srvKey]bool{}}
	svc := name + "." + namespace + ".svc." + origin
	if !imp.Headless {
		node := b.node(svc)
		for _, ip := range imp.IPs {
			b.addAddr(node, svc, ip)
		}
		for _, p := range imp.Ports {
			b.addSRV(svc, p, svc)
		}
		b.finish()
		return b.nodes
	}
	for _, s := range slices {
		for _, ep := range s.Endpoints {
			for _, a := range ep.Addrs {
				host := ep.Hostname
				if host == "" {
					host = dashed(a)
				}
				target := host + "." + s.Cluster + "." + svc
				b.addAddr(b.node(svc), svc, a)
				b.addAddr(b.node(target), target, a)
				for _, p := range s.Ports {
					b.addSRV(svc, p, target)
				}
			}
		}
	}
	if _, ok := b.nodes[svc]; !ok {
		return nil // no ready endpoint: NXDOMAIN
	}
	b.finish()
	return b.nodes
}

// builder collects the records of one service.
type builder struct {
	ttl   uint32
	nodes map[string]*Node
	srvs  map[srvKey]bool // records already in an SRV set
	addrs map[string]map[netip.Addr]bool
}

type srvKey struct {
	owner, target string
	port          uint16
}

func (b *builder) node(name string) *Node {
	n := b.nodes[name]
	if n == nil {
		n = &Node{}
		b.nodes[name] = n
	}
	return n
}

// addAddr adds a to name's addresses, once: two clusters may give the same
// address (overlapping pod networks), and a record set holds it once.
func (b *builder) addAddr(n *Node, name string, a netip.Addr) {
	if b.addrs == nil {
		b.addrs = map[string]map[netip.Addr]bool{}
	}
	if b.addrs[name] == nil {
		b.addrs[name] = map[netip.Addr]bool{}
	}
	if b.addrs[name][a] {
		return
	}
	b.addrs[name][a] = true
	hdr := dns.RR_Header{Name: name, Class: dns.ClassINET, Ttl: b.ttl}
	if a.Is4() {
		hdr.Rrtype = dns.TypeA
		n.A = append(n.A, &dns.A{Hdr: hdr, A: a.AsSlice()})
	} else {
		hdr.Rrtype = dns.TypeAAAA
		n.AAAA = append(n.AAAA, &dns.AAAA{Hdr: hdr, AAAA: a.AsSlice()})
	}
}

// addSRV adds the SRV records of port p targeting target: at the service
// name svc for every port, as CoreDNS's kubernetes plugin answers an SRV
// query for a Service's own name (and the MCS conformance suite asks), and
// at _NAME._PROTO.svc for a named one, as the specification requires.
func (b *builder) addSRV(svc string, p Port, target string) {
	owners := []string{svc}
	if p.Name != "" {
		owners = append(owners, "_"+p.Name+"._"+p.Protocol+"."+svc)
	}
	for _, owner := range owners {
		k := srvKey{owner: owner, target: target, port: p.Port}
		if b.srvs[k] {
			continue // two protocols on one port number: one record
		}
		b.srvs[k] = true
		n := b.node(owner)
		n.SRV = append(n.SRV, &dns.SRV{
			Hdr:      dns.RR_Header{Name: owner, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: b.ttl},
			Priority: 0, Weight: 1, Port: p.Port, Target: target,
		})
	}
}

// finish sorts every record set, so that answers do not depend on the order
// objects arrived in, and gives each SRV set its targets' addresses.
func (b *builder) finish() {
	for _, n := range b.nodes {
		slices.SortFunc(n.A, func(x, y dns.RR) int { return cmp.Compare(x.(*dns.A).A.String(), y.(*dns.A).A.String()) })
		slices.SortFunc(n.AAAA, func(x, y dns.RR) int {
			return cmp.Compare(x.(*dns.AAAA).AAAA.String(), y.(*dns.AAAA).AAAA.String())
		})
		slices.SortFunc(n.SRV, func(x, y dns.RR) int {
			sx, sy := x.(*dns.SRV), y.(*dns.SRV)
			return cmp.Or(cmp.Compare(sx.Target, sy.Target), cmp.Compare(sx.Port, sy.Port))
		})
	}
	for _, n := range b.nodes {
		if len(n.SRV) == 0 {
			continue
		}
		seen := map[string]bool{}
		for _, rr := range n.SRV {
			t := rr.(*dns.SRV).Target
			if seen[t] {
				continue
			}
			seen[t] = true
			if tn := b.nodes[t]; tn != nil {
				n.Extra = append(n.Extra, tn.A...)
				n.Extra = append(n.Extra, tn.AAAA...)
			}
		}
		n.Extra = slices.Clip(n.Extra)
	}
}

// dashed is the name of an endpoint without a hostname: its address with
// dots or colons as dashes (10-1-2-3, 2001-db8--1), as CoreDNS's kubernetes
// plugin and the MCS conformance suite name it.
func dashed(a netip.Addr) string {
	if a.Is4() {
		return strings.ReplaceAll(a.String(), ".", "-")
	}
	return strings.ReplaceAll(a.String(), ":", "-")
}
