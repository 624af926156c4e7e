package index

import (
	"net"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// Object is what one DNSEndpoint contributes to an index: the records of each
// of its names, built by Index.Parse. It is immutable once parsed, and may be
// handed to Index.SetObject once.
type Object struct {
	key     string    // set by SetObject, under the index's lock
	records []Records // by name; their names and data are slices of one string
	err     error
}

// Err reports what of the object could not be parsed and is not served.
func (o *Object) Err() error { return o.err }

// Len is the number of names the object has records at.
func (o *Object) Len() int { return len(o.records) }

// has reports whether o has records at name.
func (o *Object) has(name string) bool {
	_, found := slices.BinarySearchFunc(o.records, name, func(r Records, name string) int {
		return strings.Compare(r.name(), name)
	})
	return found
}

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
//	ttl, number of groups, local (times 4, plus 1 when spilled, plus 2
//	when the weights follow loads), zero
//	each group: cluster (its number in the index's clusterIDs), weight,
//	            load-balancer addresses, cluster IPs, then the addresses,
//	            4 or 16 bytes each
//
// Groups are kept in the order answers start from: the index's own cluster
// first (groups[:local], unless its weight is 0 or it spilled), then
// clusters with a weight, then those of weight 0 (groups[zero:]). A set
// spilled when the own cluster is too loaded to be answered first
// (load.Spills): it is then one of the rest, drawn with the nearest
// clusters by its weight (spillKeys).
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
	spilled     bool
	loaded      bool
}

// decode reads s, whose addresses are size bytes each, appending its
// groups to buf.
func (s addrSet) decode(buf []groupView, size int) decoded {
	rd := reader(s)
	d := decoded{ttl: uint32(rd.uvarint())}
	n := rd.uvarint()
	local := rd.uvarint()
	d.local, d.spilled, d.loaded, d.zero = local>>2, local&1 == 1, local&2 == 2, rd.uvarint()
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
