package index

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

// Records are the record sets at one name, merged from every endpoint that
// names it. They are built once per change and never modified; callers must
// not modify them or the records they return either.
//
// A Records is 48 bytes and most names need one more small allocation: the
// name's A records, packed (addrSet). Address records are built when an
// answer needs them, since a prebuilt dns.A with its address is 64 bytes a
// record and an index serves hundreds of thousands; what few names have
// beside A records waits behind more.
type Records struct {
	name string
	a    addrSet
	more *moreRecords
	// owner is the object these records are of, nil for the merge of
	// several objects' records. Lookups never read it.
	owner *Object
}

// moreRecords are a name's CNAME, AAAA, SRV and TXT records.
type moreRecords struct {
	cname    *dns.CNAME
	aaaa     addrSet
	srv, txt []dns.RR

	// derived caches what a reader computes from these records and others
	// (an SRV answer's additional section), valid for one index serial.
	derived atomic.Pointer[derivedRRs]
}

// empty is what a name with A records alone reads.
var empty moreRecords

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
// It keeps nothing for a name with A records alone: what is derived is
// derived from SRV records.
func (r *Records) SetDerived(serial uint32, rrs []dns.RR) {
	if r.more != nil {
		r.more.derived.Store(&derivedRRs{serial: serial, rrs: rrs})
	}
}

// set returns the name's addresses of type qtype (A or AAAA) and the length
// of one address, 0 for another type.
func (r *Records) set(qtype uint16) (addrSet, int) {
	switch qtype {
	case dns.TypeA:
		return r.a, net.IPv4len
	case dns.TypeAAAA:
		return r.rest().aaaa, net.IPv6len
	}
	return "", 0
}

// AppendAddresses appends the address records of type qtype (dns.TypeA or
// dns.TypeAAAA) to dst in answer order: the index's own cluster first (its
// cluster IPs where it has them, else its load-balancer addresses), then the
// other clusters in a weighted random order drawn with intn, then those of
// weight 0. intn(n) returns a number in [0, n); rand.IntN fits.
func (r *Records) AppendAddresses(dst []dns.RR, qtype uint16, intn func(int) int) []dns.RR {
	set, size := r.set(qtype)
	if set == "" {
		return dst
	}
	var gbuf [8]groupView
	var obuf [8]string
	s := set.decode(gbuf[:0], size)
	order := obuf[:0]
	for _, g := range s.groups[:s.local] {
		if g.clusterIPs != "" {
			order = append(order, g.clusterIPs)
		} else {
			order = append(order, g.lb)
		}
	}
	order = appendWeighted(order, s.groups[s.local:s.zero], intn)
	for _, g := range s.groups[s.zero:] {
		order = append(order, g.lb)
	}
	return appendPacked(dst, r.name, qtype, s.ttl, size, order)
}

// appendWeighted appends the groups' load-balancer addresses in a weighted
// random order: each next group is drawn with a probability proportional to
// its weight among the groups not drawn yet. Every weight is positive.
func appendWeighted(dst []string, groups []groupView, intn func(int) int) []string {
	if len(groups) == 1 {
		return append(dst, groups[0].lb)
	}
	var buf [16]int // a name has a group per cluster: few
	left := buf[:0]
	if len(groups) > len(buf) {
		left = make([]int, 0, len(groups))
	}
	total := 0
	for i := range groups {
		left = append(left, i)
		total += groups[i].weight
	}
	for len(left) > 0 {
		r := intn(total)
		j := 0
		for r >= groups[left[j]].weight {
			r -= groups[left[j]].weight
			j++
		}
		g := &groups[left[j]]
		dst = append(dst, g.lb)
		total -= g.weight
		left = slices.Delete(left, j, j+1)
	}
	return dst
}

// AppendAll appends every address record of type qtype (dns.TypeA or
// dns.TypeAAAA) as seen from outside every cluster: each cluster's
// load-balancer addresses, never its cluster IPs, in a fixed order. A zone
// transfer carries these.
func (r *Records) AppendAll(dst []dns.RR, qtype uint16) []dns.RR {
	set, size := r.set(qtype)
	if set == "" {
		return dst
	}
	var gbuf [8]groupView
	var obuf [8]string
	s := set.decode(gbuf[:0], size)
	order := obuf[:0]
	for _, g := range s.groups {
		order = append(order, g.lb)
	}
	return appendPacked(dst, r.name, qtype, s.ttl, size, order)
}

// HasAddresses reports whether the name has records of type qtype (A or
// AAAA).
func (r *Records) HasAddresses(qtype uint16) bool {
	set, _ := r.set(qtype)
	return set != ""
}

// CNAME is the name's CNAME record, or nil. A name with a CNAME has no other
// records (RFC 1034 3.6.2): where a DNSEndpoint says otherwise, the CNAME
// wins.
func (r *Records) CNAME() *dns.CNAME { return r.rest().cname }

// SRV is the name's SRV records, in the order of the endpoint's targets.
func (r *Records) SRV() []dns.RR { return r.rest().srv }

// TXT is the name's TXT records.
func (r *Records) TXT() []dns.RR { return r.rest().txt }

type (
	aRecord struct {
		rr dns.A
		ip [net.IPv4len]byte
	}
	aaaaRecord struct {
		rr dns.AAAA
		ip [net.IPv6len]byte
	}
)

// appendPacked appends the records of the packed addresses in parts, in
// order, each size bytes, all of type qtype at name: every record with its
// address in one allocation, which is all an answer allocates for them.
func appendPacked(dst []dns.RR, name string, qtype uint16, ttl uint32, size int, parts []string) []dns.RR {
	n := 0
	for _, p := range parts {
		n += len(p) / size
	}
	hdr := dns.RR_Header{Name: name, Rrtype: qtype, Class: dns.ClassINET, Ttl: ttl}
	dst = slices.Grow(dst, n)
	if qtype == dns.TypeA {
		rrs := make([]aRecord, n)
		i := 0
		for _, p := range parts {
			for ; p != ""; p = p[size:] {
				r := &rrs[i]
				copy(r.ip[:], p)
				r.rr = dns.A{Hdr: hdr, A: r.ip[:]}
				dst = append(dst, &r.rr)
				i++
			}
		}
		return dst
	}
	rrs := make([]aaaaRecord, n)
	i := 0
	for _, p := range parts {
		for ; p != ""; p = p[size:] {
			r := &rrs[i]
			copy(r.ip[:], p)
			r.rr = dns.AAAA{Hdr: hdr, AAAA: r.ip[:]}
			dst = append(dst, &r.rr)
			i++
		}
	}
	return dst
}

// addrSet is one type's address records at a name, packed into a string: a
// name's A records are one allocation of a few dozen bytes with no pointers
// in it, which the garbage collector need not scan. It is built by
// encodeAddrSet and read by decode; "" is no records. The layout, in
// unsigned varints and raw addresses:
//
//	ttl, number of groups, local, zero
//	each group: len(cluster), cluster, weight, load-balancer addresses,
//	            cluster IPs, then the addresses, 4 or 16 bytes each
//
// Groups are kept in the order answers start from: the index's own cluster
// first (groups[:local], unless its weight is 0), then clusters with a
// weight, then those of weight 0 (groups[zero:]).
type addrSet string

// groupView is one endpoint's addresses, as decode reads them: one
// cluster's, or, without a cluster, a shared endpoint's. lb and clusterIPs
// are packed addresses; cluster IPs are kept for the index's own cluster
// only: a client inside the cluster is answered these instead.
type groupView struct {
	cluster        string
	weight         int
	lb, clusterIPs string
}

type decoded struct {
	ttl         uint32
	groups      []groupView
	local, zero int
}

// decode reads s, whose addresses are size bytes each, appending its
// groups to buf.
func (s addrSet) decode(buf []groupView, size int) decoded {
	rd := reader(s)
	d := decoded{ttl: uint32(rd.uvarint())}
	n := rd.uvarint()
	d.local, d.zero = rd.uvarint(), rd.uvarint()
	for range n {
		g := groupView{cluster: rd.next(rd.uvarint()), weight: rd.uvarint()}
		lb, ips := rd.uvarint(), rd.uvarint()
		g.lb = rd.next(lb * size)
		g.clusterIPs = rd.next(ips * size)
		buf = append(buf, g)
	}
	d.groups = buf
	return d
}

// reader reads an addrSet, which encodeAddrSet wrote: nothing in it is
// out of range, so it checks nothing.
type reader string

func (rd *reader) uvarint() int {
	v, n := 0, 0
	for shift := 0; ; shift += 7 {
		b := (*rd)[n]
		n++
		v |= int(b&0x7f) << shift
		if b < 0x80 {
			break
		}
	}
	*rd = (*rd)[n:]
	return v
}

func (rd *reader) next(n int) string {
	s := string((*rd)[:n])
	*rd = (*rd)[n:]
	return s
}

// encodeAddrSet packs groups, already in answer order (local and zero as
// decode reads them), with their TTL.
func encodeAddrSet(ttl uint32, groups []parsedGroup, local, zero int, size int) addrSet {
	n := 4 * binary.MaxVarintLen32
	for _, g := range groups {
		n += len(g.cluster) + 4*binary.MaxVarintLen32 + (len(g.addrs)+len(g.clusterIPs))*size
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(ttl))
	b = binary.AppendUvarint(b, uint64(len(groups)))
	b = binary.AppendUvarint(b, uint64(local))
	b = binary.AppendUvarint(b, uint64(zero))
	for _, g := range groups {
		b = binary.AppendUvarint(b, uint64(len(g.cluster)))
		b = append(b, g.cluster...)
		b = binary.AppendUvarint(b, uint64(max(g.weight, 0)))
		b = binary.AppendUvarint(b, uint64(len(g.addrs)))
		b = binary.AppendUvarint(b, uint64(len(g.clusterIPs)))
		for _, a := range slices.Concat(g.addrs, g.clusterIPs) {
			if size == net.IPv4len {
				v := a.As4()
				b = append(b, v[:]...)
			} else {
				v := a.As16()
				b = append(b, v[:]...)
			}
		}
	}
	return addrSet(b)
}

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
	more := r.rest()
	if c := more.cname; c != nil {
		if b.cname != "" && b.cname != c.Target {
			err = fmt.Errorf("a second CNAME target %s beside %s", c.Target, b.cname)
		} else {
			b.cname = c.Target
			b.ttlCNAME = lowest(b.ttlCNAME, c.Hdr.Ttl)
		}
	}
	b.addSet(&b.a, &b.ttlA, r.a, net.IPv4len)
	b.addSet(&b.aaaa, &b.ttlAAAA, more.aaaa, net.IPv6len)
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

// addSet adds the groups of set, whose addresses are size bytes each.
func (b *builder) addSet(dst *[]parsedGroup, ttl *uint32, set addrSet, size int) {
	if set == "" {
		return
	}
	var buf [8]groupView
	s := set.decode(buf[:0], size)
	*ttl = lowest(*ttl, s.ttl)
	for _, g := range s.groups {
		*dst = append(*dst, parsedGroup{cluster: g.cluster, weight: g.weight, addrs: unpack(g.lb, size), clusterIPs: unpack(g.clusterIPs, size)})
	}
}

// unpack returns packed addresses of size bytes each.
func unpack(packed string, size int) []netip.Addr {
	var out []netip.Addr
	for ; packed != ""; packed = packed[size:] {
		a, _ := netip.AddrFromSlice([]byte(packed[:size]))
		out = append(out, a)
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
	r := &Records{name: b.name}
	var more moreRecords
	switch {
	case b.cname != "":
		more.cname = &dns.CNAME{Hdr: b.header(dns.TypeCNAME, b.ttlCNAME), Target: b.cname}
	default:
		r.a = b.addresses(b.a, b.ttlA, net.IPv4len)
		more.aaaa = b.addresses(b.aaaa, b.ttlAAAA, net.IPv6len)
		for _, s := range b.srv {
			s.Hdr = b.header(dns.TypeSRV, b.ttlSRV)
			more.srv = append(more.srv, s)
		}
		for _, t := range b.txt {
			more.txt = append(more.txt, &dns.TXT{Hdr: b.header(dns.TypeTXT, b.ttlTXT), Txt: t})
		}
	}
	hasMore := more.cname != nil || more.aaaa != "" || len(more.srv) > 0 || len(more.txt) > 0
	if hasMore {
		r.more = &more
	}
	if r.a == "" && !hasMore {
		return nil
	}
	return r
}

// addresses orders a type's groups for AppendAddresses and packs them,
// their addresses size bytes each.
func (b *builder) addresses(parsed []parsedGroup, ttl uint32, size int) addrSet {
	if len(parsed) == 0 {
		return ""
	}
	slices.SortStableFunc(parsed, func(x, y parsedGroup) int {
		return cmp.Or(
			cmp.Compare(rank(b.isLocal(y)), rank(b.isLocal(x))),
			cmp.Compare(rank(y.weight > 0), rank(x.weight > 0)),
			strings.Compare(x.cluster, y.cluster))
	})
	local, zero := 0, len(parsed)
	for i := range parsed {
		p := &parsed[i]
		p.addrs = sortedSet(p.addrs)
		p.clusterIPs = sortedSet(p.clusterIPs)
		if b.isLocal(*p) {
			local = i + 1
		} else if p.weight <= 0 && zero == len(parsed) {
			zero = i
		}
	}
	return encodeAddrSet(ttl, parsed, local, zero, size)
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
