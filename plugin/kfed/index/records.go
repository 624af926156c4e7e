package index

import (
	"net"
	"slices"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/policy/proximity"
)

// Records are the record sets at one name, merged from every endpoint that
// names it: a view of the name and its records packed into the bytes of the
// object they came from (data), built once per change and never modified.
// Lookups make resource records from them for each answer; callers must not
// modify the Records, and may keep or modify the records they are given.
//
// A name costs its entry in the index's map, these 32 bytes in its object's
// list, and its name and packed records in its object's one string: no
// allocation of its own. A prebuilt dns.A with its address was 64 bytes a
// record, and an index serves hundreds of thousands of names.
type Records struct {
	s string // the name, then its records: the sections of the layout below
	n int32  // the name's length
	// owner is the object these records are of, nil for the merge of
	// several objects' records. Lookups never read it.
	owner *Object
}

func (r *Records) name() string { return r.s[:r.n] }
func (r *Records) data() string { return r.s[r.n:] }

// The packed records of a name: a byte of flags saying which sections
// follow, then each section present, in this order, as its length (an
// unsigned varint) and its bytes:
//
//	A, AAAA   an addrSet
//	CNAME     ttl, target
//	SRV       ttl, then per record: priority, weight, port, len(target), target
//	TXT       ttl, then per record: number of strings, then len(s), s for each
//
// Integers are unsigned varints. A name with a CNAME has no other section.
const (
	hasA = 1 << iota
	hasAAAA
	hasCNAME
	hasSRV
	hasTXT
	// byDistance, a flag of no section, says the name's clusters are
	// ordered by distance for clients outside the clusters (a Service
	// routed by proximity): a bit of the byte every name has anyway.
	byDistance
)

// byDistance reports whether the name's clusters are ordered by distance
// for a client at a known location.
func (r *Records) byDistance() bool {
	d := r.data()
	return d != "" && d[0]&byDistance != 0
}

// section returns the bytes of the section flagged kind, "" when the name
// has none.
func (r *Records) section(kind byte) string {
	data := r.data()
	if data == "" || data[0]&kind == 0 {
		return ""
	}
	rd := reader(data[1:])
	for bit := byte(hasA); bit <= hasTXT; bit <<= 1 {
		if data[0]&bit == 0 {
			continue
		}
		s := rd.next(rd.uvarint())
		if bit == kind {
			return s
		}
	}
	return ""
}

// set returns the name's addresses of type qtype (A or AAAA) and the length
// of one address, 0 for another type.
func (r *Records) set(qtype uint16) (addrSet, int) {
	switch qtype {
	case dns.TypeA:
		return addrSet(r.section(hasA)), net.IPv4len
	case dns.TypeAAAA:
		return addrSet(r.section(hasAAAA)), net.IPv6len
	}
	return "", 0
}

// AppendAddresses appends the address records of type qtype (dns.TypeA or
// dns.TypeAAAA) to dst in answer order for a client inside the index's own
// cluster, without what the index knows of where clusters are: the own
// cluster first (its cluster IPs where it has them, else its load-balancer
// addresses), then the other clusters in a weighted random order drawn with
// intn, those of weight 0 last. intn(n) returns a number in [0, n);
// rand.IntN fits.
func (r *Records) AppendAddresses(dst []dns.RR, qtype uint16, intn func(int) int) []dns.RR {
	dst, _ = r.AppendFrom(dst, qtype, Vantage{}, intn)
	return dst
}

// AppendFrom appends the address records of type qtype (dns.TypeA or
// dns.TypeAAAA) to dst in answer order for a client at v: the index's own
// cluster first (its cluster IPs where it has them, else its load-balancer
// addresses), then the other clusters nearest first (proximity.Order: by tier
// from inside a cluster, by distance from a client's location), drawn with
// intn in proportion to their weights among those equally near, those of
// weight 0 last. It reports whether the order depended on where v is, as
// opposed to being the same for every client. intn(n) returns a number in
// [0, n); rand.IntN fits.
func (r *Records) AppendFrom(dst []dns.RR, qtype uint16, v Vantage, intn func(int) int) ([]dns.RR, bool) {
	set, size := r.set(qtype)
	if set == "" {
		return dst, false
	}
	if v.located && !r.byDistance() {
		v.located = false // a Service routed by weight: weights alone
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
	rest := s.groups[s.local:]
	varies := false
	switch len(rest) {
	case 0:
	case 1:
		order = append(order, rest[0].lb)
	default:
		order, varies = appendNearest(order, rest, v, intn)
	}
	return appendPacked(dst, r.name(), qtype, s.ttl, size, order), varies
}

// appendNearest appends the load-balancer addresses of groups in the order
// a client at v gets them, and whether that order depends on where v is. It
// is a function of its own, never inlined, so that its buffers are off the
// stack by the time the records are made: a query runs on a goroutine of
// its own, whose stack starts small and is copied whole each time it grows
// (runtime.copystack was a quarter of a real server's CPU when these
// buffers sat in AppendFrom's frame).
//
//go:noinline
func appendNearest(order []string, groups []groupView, v Vantage, intn func(int) int) ([]string, bool) {
	var buf [8]proximity.Rank
	ranks := buf[:0]
	for i, g := range groups {
		ranks = append(ranks, proximity.Rank{Key: v.key(g.cluster), Weight: int32(g.weight), ID: int16(i)})
	}
	proximity.Order(ranks, v.slack(), intn)
	for _, r := range ranks {
		order = append(order, groups[r.ID].lb)
	}
	return order, v.varies(groups)
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
	return appendPacked(dst, r.name(), qtype, s.ttl, size, order)
}

// HasAddresses reports whether the name has records of type qtype (A or
// AAAA).
func (r *Records) HasAddresses(qtype uint16) bool {
	switch qtype {
	case dns.TypeA:
		return r.section(hasA) != ""
	case dns.TypeAAAA:
		return r.section(hasAAAA) != ""
	}
	return false
}

// CNAME is the name's CNAME record, or nil.
func (r *Records) CNAME() *dns.CNAME {
	s := r.section(hasCNAME)
	if s == "" {
		return nil
	}
	rd := reader(s)
	ttl := uint32(rd.uvarint())
	return &dns.CNAME{Hdr: r.header(dns.TypeCNAME, ttl), Target: string(rd)}
}

// SRV is the name's SRV records, in the order of the endpoint's targets.
func (r *Records) SRV() []dns.RR {
	s := r.section(hasSRV)
	if s == "" {
		return nil
	}
	rd := reader(s)
	hdr := r.header(dns.TypeSRV, uint32(rd.uvarint()))
	var out []dns.RR
	for rd != "" {
		srv := &dns.SRV{Hdr: hdr, Priority: uint16(rd.uvarint()), Weight: uint16(rd.uvarint()), Port: uint16(rd.uvarint())}
		srv.Target = rd.next(rd.uvarint())
		out = append(out, srv)
	}
	return out
}

// TXT is the name's TXT records.
func (r *Records) TXT() []dns.RR {
	s := r.section(hasTXT)
	if s == "" {
		return nil
	}
	rd := reader(s)
	hdr := r.header(dns.TypeTXT, uint32(rd.uvarint()))
	var out []dns.RR
	for rd != "" {
		txt := make([]string, rd.uvarint())
		for i := range txt {
			txt[i] = rd.next(rd.uvarint())
		}
		out = append(out, &dns.TXT{Hdr: hdr, Txt: txt})
	}
	return out
}

func (r *Records) header(rrtype uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: r.name(), Rrtype: rrtype, Class: dns.ClassINET, Ttl: ttl}
}

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

// addrSet is one type's address records at a name, packed. The layout, in
// unsigned varints and raw addresses:
//
//	ttl, number of groups, local, zero
//	each group: cluster (its number in the index's clusterIDs), weight,
//	            load-balancer addresses, cluster IPs, then the addresses,
//	            4 or 16 bytes each
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
	cluster        int // clusterIDs number
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
		g := groupView{cluster: rd.uvarint(), weight: rd.uvarint()}
		lb, ips := rd.uvarint(), rd.uvarint()
		g.lb = rd.next(lb * size)
		g.clusterIPs = rd.next(ips * size)
		buf = append(buf, g)
	}
	d.groups = buf
	return d
}

// reader reads packed records, which the builder wrote: nothing in them is
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
