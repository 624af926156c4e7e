package index

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"unique"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

// Records are the record sets at one name, merged from every endpoint that
// names it. They are built once per change and never modified; callers must
// not modify them or the records in them either.
type Records struct {
	// cname and a first: every query reads cname, most then read a, and
	// together they fit the first cache line the lookup loads.
	cname *dns.CNAME
	a     addresses
	// more holds what few names have, so that the many that have an A
	// record alone do not carry room for them: a Records is 80 bytes, not
	// 208, a tenth of the index at 100,000 names.
	more *moreRecords

	// owner is the object these records are of, nil for the merge of
	// several objects' records. Lookups never read it.
	owner *Object
}

// moreRecords are a name's AAAA, SRV and TXT records.
type moreRecords struct {
	aaaa     addresses
	srv, txt []dns.RR

	// derived caches what a reader computes from these records and others
	// (an SRV answer's additional section), valid for one index serial.
	derived atomic.Pointer[derivedRRs]
}

// empty is what a name without AAAA, SRV or TXT reads.
var empty moreRecords

// name is the name the records are at: every Records has one record at
// least, and its records hold the name, so it is not kept twice.
func (r *Records) name() string {
	more := r.rest()
	switch {
	case r.cname != nil:
		return r.cname.Hdr.Name
	case len(r.a.groups) > 0:
		return r.a.groups[0].all[0].Header().Name
	case len(more.aaaa.groups) > 0:
		return more.aaaa.groups[0].all[0].Header().Name
	case len(more.srv) > 0:
		return more.srv[0].Header().Name
	default:
		return more.txt[0].Header().Name
	}
}

func (r *Records) rest() *moreRecords {
	if r.more == nil {
		return &empty
	}
	return r.more
}

type derivedRRs struct {
	serial uint32
	rrs    []dns.RR
}

// Derived returns what SetDerived stored, and whether it was computed at
// serial.
func (r *Records) Derived(serial uint32) ([]dns.RR, bool) {
	if r.more == nil {
		return nil, false
	}
	if d := r.more.derived.Load(); d != nil && d.serial == serial {
		return d.rrs, true
	}
	return nil, false
}

// SetDerived stores rrs, computed from the index at serial, for readers that
// ask again before the index changes. Callers must not modify rrs afterwards.
// It keeps nothing for a name with A records alone or a CNAME: what is
// derived is derived from SRV records.
func (r *Records) SetDerived(serial uint32, rrs []dns.RR) {
	if r.more != nil {
		r.more.derived.Store(&derivedRRs{serial: serial, rrs: rrs})
	}
}

// addresses are one type's address records at a name, one group per cluster.
// Groups are kept in the order answers start from: the index's own cluster
// first (unless its weight is 0), then clusters with a weight, then those of
// weight 0.
type addresses struct {
	// fixed is the answer when its order cannot vary (at most one other
	// cluster with a weight): every record in answer order, so that the
	// common answer is one copy, without reading the groups.
	fixed  []dns.RR
	groups []group
	local  int32 // groups[:local] are the index's own cluster
	zero   int32 // groups[zero:] have weight 0
}

// group is one endpoint's addresses: one cluster's, or, without a cluster, a
// shared endpoint's. It is 48 bytes, not 72: a name has one per cluster.
type group struct {
	cluster string
	weight  int32
	// split ends the load balancer's addresses in all; the shard's cluster
	// IPs of this type follow, kept for the index's own cluster only: a
	// client inside the cluster is answered these instead.
	split int32
	all   []dns.RR
}

// rrs are the group's load-balancer addresses.
func (g *group) rrs() []dns.RR { return g.all[:g.split] }

// clusterIPs are the group's cluster IPs, for the index's own cluster only.
func (g *group) clusterIPs() []dns.RR { return g.all[g.split:] }

// AppendAddresses appends the address records of type qtype (dns.TypeA or
// dns.TypeAAAA) to dst in answer order: the index's own cluster first (its
// cluster IPs where it has them, else its load-balancer addresses), then the
// other clusters in a weighted random order drawn with intn, then those of
// weight 0. intn(n) returns a number in [0, n); rand.IntN fits.
func (r *Records) AppendAddresses(dst []dns.RR, qtype uint16, intn func(int) int) []dns.RR {
	var as *addresses
	switch qtype {
	case dns.TypeA:
		as = &r.a
	case dns.TypeAAAA:
		as = &r.rest().aaaa
	default:
		return dst
	}
	if as.fixed != nil {
		return append(dst, as.fixed...)
	}
	for i := range as.groups[:as.local] {
		g := &as.groups[i]
		if ips := g.clusterIPs(); len(ips) > 0 {
			dst = append(dst, ips...)
		} else {
			dst = append(dst, g.rrs()...)
		}
	}
	dst = appendWeighted(dst, as.groups[as.local:as.zero], intn)
	for i := range as.groups[as.zero:] {
		dst = append(dst, as.groups[int(as.zero)+i].rrs()...)
	}
	return dst
}

// appendWeighted appends the groups' records in a weighted random order: each
// next group is drawn with a probability proportional to its weight among the
// groups not drawn yet. Every weight is positive.
func appendWeighted(dst []dns.RR, groups []group, intn func(int) int) []dns.RR {
	if len(groups) == 1 {
		return append(dst, groups[0].rrs()...)
	}
	var buf [16]int // a name has a group per cluster: few
	left := buf[:0]
	if len(groups) > len(buf) {
		left = make([]int, 0, len(groups))
	}
	total := 0
	for i := range groups {
		left = append(left, i)
		total += int(groups[i].weight)
	}
	for len(left) > 0 {
		r := intn(total)
		j := 0
		for r >= int(groups[left[j]].weight) {
			r -= int(groups[left[j]].weight)
			j++
		}
		g := &groups[left[j]]
		dst = append(dst, g.rrs()...)
		total -= int(g.weight)
		left = slices.Delete(left, j, j+1)
	}
	return dst
}

// AppendAll appends every address record of type qtype (dns.TypeA or
// dns.TypeAAAA) as seen from outside every cluster: each cluster's
// load-balancer addresses, never its cluster IPs, in a fixed order. A zone
// transfer carries these.
func (r *Records) AppendAll(dst []dns.RR, qtype uint16) []dns.RR {
	as := &r.a
	if qtype == dns.TypeAAAA {
		as = &r.rest().aaaa
	} else if qtype != dns.TypeA {
		return dst
	}
	for i := range as.groups {
		dst = append(dst, as.groups[i].rrs()...)
	}
	return dst
}

// HasAddresses reports whether the name has records of type qtype (A or
// AAAA).
func (r *Records) HasAddresses(qtype uint16) bool {
	switch qtype {
	case dns.TypeA:
		return len(r.a.groups) > 0
	case dns.TypeAAAA:
		return len(r.rest().aaaa.groups) > 0
	}
	return false
}

// CNAME is the name's CNAME record, or nil. A name with a CNAME has no other
// records (RFC 1034 3.6.2): where a DNSEndpoint says otherwise, the CNAME
// wins.
func (r *Records) CNAME() *dns.CNAME { return r.cname }

// SRV is the name's SRV records, in the order of the endpoint's targets.
func (r *Records) SRV() []dns.RR { return r.rest().srv }

// TXT is the name's TXT records.
func (r *Records) TXT() []dns.RR { return r.rest().txt }

// build merges one object's endpoints at name into records; nil when none
// can be served.
func build(name string, endpoints []*extdnsv1alpha1.Endpoint, clusters dnsendpoint.Clusters, cluster string, defaultTTL uint32) (*Records, error) {
	var (
		b    = builder{name: name, cluster: cluster, defaultTTL: defaultTTL}
		errs []error
	)
	for _, ep := range endpoints {
		if err := b.add(ep, clusters); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", ep.RecordType, ep.DNSName, err))
		}
	}
	return b.records(), errors.Join(append(errs, b.besideCNAME())...)
}

// merge merges the records of several objects at name, parts, as build
// would have merged their endpoints.
func merge(name string, parts []*Records, cluster string, defaultTTL uint32) (*Records, error) {
	var (
		b    = builder{name: name, cluster: cluster, defaultTTL: defaultTTL}
		errs []error
	)
	for _, p := range parts {
		if err := b.addRecords(p); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", p.owner.key, name, err))
		}
	}
	return b.records(), errors.Join(append(errs, b.besideCNAME())...)
}

func (b *builder) besideCNAME() error {
	if b.cname != "" && len(b.a)+len(b.aaaa)+len(b.srv)+len(b.txt) > 0 {
		return fmt.Errorf("%s: records beside its CNAME are not served (RFC 1034 3.6.2)", b.name)
	}
	return nil
}

// addRecords adds what one object's records at the name hold. They were
// built by the same rules, so that only TTLs, CNAME conflicts and the order
// of address groups are left to merge.
func (b *builder) addRecords(r *Records) error {
	var err error
	if c := r.cname; c != nil {
		if b.cname != "" && b.cname != c.Target {
			err = fmt.Errorf("a second CNAME target %s beside %s", c.Target, b.cname)
		} else {
			b.cname = c.Target
			b.ttlCNAME = lowest(b.ttlCNAME, c.Hdr.Ttl)
		}
	}
	more := r.rest()
	b.addGroups(&b.a, &b.ttlA, &r.a)
	b.addGroups(&b.aaaa, &b.ttlAAAA, &more.aaaa)
	for _, rr := range more.srv {
		s := *rr.(*dns.SRV)
		b.srv = append(b.srv, &s)
		b.ttlSRV = lowest(b.ttlSRV, s.Hdr.Ttl)
	}
	for _, rr := range more.txt {
		t := rr.(*dns.TXT)
		b.txt = append(b.txt, t.Txt)
		b.ttlTXT = lowest(b.ttlTXT, t.Hdr.Ttl)
	}
	return err
}

func (b *builder) addGroups(dst *[]parsedGroup, ttl *uint32, as *addresses) {
	for i := range as.groups {
		g := &as.groups[i]
		*dst = append(*dst, parsedGroup{cluster: g.cluster, weight: int(g.weight), addrs: addrsOf(g.rrs()), clusterIPs: addrsOf(g.clusterIPs())})
		*ttl = lowest(*ttl, g.all[0].Header().Ttl)
	}
}

// addrsOf returns the addresses of A or AAAA records.
func addrsOf(rrs []dns.RR) []netip.Addr {
	var out []netip.Addr
	for _, rr := range rrs {
		var ip net.IP
		switch rr := rr.(type) {
		case *dns.A:
			ip = rr.A
		case *dns.AAAA:
			ip = rr.AAAA
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a)
		}
	}
	return out
}

// builder collects a name's endpoints, then builds its records with one TTL
// per record set (RFC 2181 5.2), the lowest the endpoints ask for.
type builder struct {
	name       string
	cluster    string
	defaultTTL uint32

	a, aaaa          []parsedGroup
	cname            string
	srv              []*dns.SRV
	txt              [][]string
	ttlA, ttlAAAA    uint32
	ttlCNAME, ttlSRV uint32
	ttlTXT           uint32
}

type parsedGroup struct {
	cluster    string
	weight     int
	addrs      []netip.Addr
	clusterIPs []netip.Addr
}

func (b *builder) add(ep *extdnsv1alpha1.Endpoint, clusters dnsendpoint.Clusters) error {
	ttl := b.defaultTTL
	if ep.RecordTTL > 0 {
		ttl = uint32(min(ep.RecordTTL, 1<<31-1))
	}
	switch strings.ToUpper(ep.RecordType) {
	case "A":
		return b.addAddresses(&b.a, &b.ttlA, ep, clusters, ttl, netip.Addr.Is4)
	case "AAAA":
		return b.addAddresses(&b.aaaa, &b.ttlAAAA, ep, clusters, ttl, func(a netip.Addr) bool { return a.Is6() && !a.Is4In6() })
	case "CNAME":
		if len(ep.Targets) != 1 {
			return fmt.Errorf("a CNAME needs one target, has %d", len(ep.Targets))
		}
		target, err := normalize(ep.Targets[0])
		if err != nil {
			return err
		}
		if b.cname != "" && b.cname != target {
			return fmt.Errorf("a second CNAME target %s beside %s", target, b.cname)
		}
		b.cname = target
		b.ttlCNAME = lowest(b.ttlCNAME, ttl)
	case "SRV":
		var errs []error
		for _, t := range ep.Targets {
			v, err := dnsendpoint.ParseSRVTarget(t)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			target, err := normalize(v.Target)
			if err != nil {
				errs = append(errs, fmt.Errorf("SRV target %q: %w", t, err))
				continue
			}
			b.srv = append(b.srv, &dns.SRV{Priority: v.Priority, Weight: v.Weight, Port: v.Port, Target: target})
			b.ttlSRV = lowest(b.ttlSRV, ttl)
		}
		return errors.Join(errs...)
	case "TXT":
		for _, t := range ep.Targets {
			b.txt = append(b.txt, splitTXT(t))
			b.ttlTXT = lowest(b.ttlTXT, ttl)
		}
	default:
		return errors.New("record type not served")
	}
	return nil
}

func (b *builder) addAddresses(groups *[]parsedGroup, setTTL *uint32, ep *extdnsv1alpha1.Endpoint, clusters dnsendpoint.Clusters, ttl uint32, family func(netip.Addr) bool) error {
	parsed, err := clusters.Groups(ep)
	for _, pg := range parsed {
		g := parsedGroup{weight: dnsendpoint.DefaultWeight, addrs: pg.Addrs}
		if c := pg.Cluster; c != nil {
			g.cluster, g.weight = c.Name, c.Weight
			if g.cluster == b.cluster {
				for _, a := range c.ClusterIPs {
					if family(a) {
						g.clusterIPs = append(g.clusterIPs, a)
					}
				}
			}
		}
		if len(g.addrs) > 0 {
			*groups = append(*groups, g)
			*setTTL = lowest(*setTTL, ttl)
		}
	}
	return err
}

func (b *builder) records() *Records {
	r := &Records{}
	var more moreRecords
	switch {
	case b.cname != "":
		r.cname = &dns.CNAME{Hdr: b.header(dns.TypeCNAME, b.ttlCNAME), Target: b.cname}
	default:
		r.a = b.addresses(b.a, dns.TypeA, b.ttlA)
		more.aaaa = b.addresses(b.aaaa, dns.TypeAAAA, b.ttlAAAA)
		for _, s := range b.srv {
			s.Hdr = b.header(dns.TypeSRV, b.ttlSRV)
			more.srv = append(more.srv, s)
		}
		for _, t := range b.txt {
			more.txt = append(more.txt, &dns.TXT{Hdr: b.header(dns.TypeTXT, b.ttlTXT), Txt: t})
		}
	}
	hasMore := len(more.aaaa.groups) > 0 || len(more.srv) > 0 || len(more.txt) > 0
	if hasMore {
		r.more = &more
	}
	if r.cname == nil && len(r.a.groups) == 0 && !hasMore {
		return nil
	}
	return r
}

// addresses orders a type's groups for AppendAddresses and builds their
// records.
func (b *builder) addresses(parsed []parsedGroup, qtype uint16, ttl uint32) addresses {
	slices.SortStableFunc(parsed, func(x, y parsedGroup) int {
		return cmp.Or(
			cmp.Compare(rank(b.isLocal(y)), rank(b.isLocal(x))),
			cmp.Compare(rank(y.weight > 0), rank(x.weight > 0)),
			strings.Compare(x.cluster, y.cluster))
	})
	n, clusterIPs := 0, 0
	for i := range parsed {
		parsed[i].addrs = sortedSet(parsed[i].addrs)
		parsed[i].clusterIPs = sortedSet(parsed[i].clusterIPs)
		n += len(parsed[i].addrs) + len(parsed[i].clusterIPs)
		clusterIPs += len(parsed[i].clusterIPs)
	}
	// A name's records of one type, and the slices that list them, each in
	// one allocation: an answer then reads a few neighbouring cache lines
	// rather than one scattered line per record. The list of every group's
	// records in order is the fixed answer too, unless cluster IPs stand in
	// for some: then the fixed answer has n slots of its own after it.
	extra := 0
	if clusterIPs > 0 {
		extra = n
	}
	alloc := newRRAlloc(qtype, b.header(qtype, ttl), n, extra)
	as := addresses{groups: make([]group, len(parsed)), zero: int32(len(parsed))}
	for i, p := range parsed {
		as.groups[i] = group{
			cluster: unique.Make(p.cluster).Value(),
			weight:  int32(p.weight),
			split:   int32(len(p.addrs)),
			all:     alloc.records(p.addrs, p.clusterIPs),
		}
		if b.isLocal(p) {
			as.local = int32(i + 1)
		} else if p.weight == 0 && int(as.zero) == len(parsed) {
			as.zero = int32(i)
		}
	}
	switch {
	case as.zero-as.local > 1:
	case clusterIPs == 0:
		as.fixed = alloc.list[:n:n]
	default:
		as.fixed = as.appendAll(alloc.list[n : n : n+extra])
	}
	return as
}

// appendAll appends every record of as in answer order, the weighted groups
// in their stored order.
func (as *addresses) appendAll(dst []dns.RR) []dns.RR {
	for i := range as.groups {
		g := &as.groups[i]
		if ips := g.clusterIPs(); i < int(as.local) && len(ips) > 0 {
			dst = append(dst, ips...)
		} else {
			dst = append(dst, g.rrs()...)
		}
	}
	return dst
}

// isLocal reports whether g is the index's own cluster and answered first
// there. A cluster of weight 0 (no ready replicas) is answered last even in
// its own CoreDNS.
func (b *builder) isLocal(g parsedGroup) bool {
	return g.cluster != "" && g.cluster == b.cluster && g.weight > 0
}

// rank orders true before false in a descending comparison.
func rank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sortedSet(addrs []netip.Addr) []netip.Addr {
	slices.SortFunc(addrs, netip.Addr.Compare)
	return slices.Compact(addrs)
}

type (
	aRecord struct {
		rr dns.A
		ip [4]byte
	}
	aaaaRecord struct {
		rr dns.AAAA
		ip [16]byte
	}
)

// rrAlloc hands out the address records of one name and type: each record
// with its address, an A record on one cache line, all of them in one
// array, and the slices listing them from one backing array, in order, with
// any slots for the fixed answer after them.
type rrAlloc struct {
	hdr  dns.RR_Header
	a    []aRecord
	aaaa []aaaaRecord
	list []dns.RR
	next int
}

func newRRAlloc(qtype uint16, hdr dns.RR_Header, n, extra int) *rrAlloc {
	al := &rrAlloc{hdr: hdr, list: make([]dns.RR, n+extra)}
	if qtype == dns.TypeA {
		al.a = make([]aRecord, n)
	} else {
		al.aaaa = make([]aaaaRecord, n)
	}
	return al
}

// records returns the records of addrs then those of more, nil for none.
func (al *rrAlloc) records(addrs, more []netip.Addr) []dns.RR {
	n := len(addrs) + len(more)
	if n == 0 {
		return nil
	}
	rrs := al.list[al.next : al.next+n : al.next+n]
	for i, a := range slices.Concat(addrs, more) {
		k := al.next + i
		if al.a != nil {
			r := &al.a[k]
			r.ip = a.As4()
			r.rr = dns.A{Hdr: al.hdr, A: r.ip[:]}
			rrs[i] = &r.rr
		} else {
			r := &al.aaaa[k]
			r.ip = a.As16()
			r.rr = dns.AAAA{Hdr: al.hdr, AAAA: r.ip[:]}
			rrs[i] = &r.rr
		}
	}
	al.next += n
	return rrs
}

func (b *builder) header(rrtype uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: b.name, Rrtype: rrtype, Class: dns.ClassINET, Ttl: ttl}
}

// splitTXT cuts a TXT value into the 255-octet strings a TXT record holds.
// ExternalDNS quotes TXT targets; the quotes are not part of the value. A
// backslash is escaped, as miekg/dns reads escapes in TXT strings.
func splitTXT(s string) []string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	var out []string
	for {
		chunk := s[:min(len(s), 255)]
		out = append(out, strings.ReplaceAll(chunk, `\`, `\\`))
		s = s[len(chunk):]
		if s == "" {
			return out
		}
	}
}

// lowest is the lower of two TTLs, where 0 means not set yet.
func lowest(set, ttl uint32) uint32 {
	if set == 0 || ttl < set {
		return ttl
	}
	return set
}
