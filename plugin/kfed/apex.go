package kfed

import (
	"net/netip"
	"slices"

	"github.com/miekg/dns"
)

// SOA timer defaults, in seconds. With transfers, refresh is only the safety
// net for a NOTIFY a secondary missed, but records fail over within their
// 30-second TTL, so it is as short as secondaries take: BIND raises anything
// below 300 to 300. Retry is shorter than refresh (RFC 1912); BIND raises it
// to its own floor. Expire is two weeks (RFC 1912's range is 2-4): when the
// control plane or every primary is lost, secondaries keep answering the last
// zone they had, as the plugin keeps its last index.
var defaultTimers = soaTimers{refresh: 300, retry: 60, expire: 14 * 24 * 3600}

// nameServer is an apex name server as the plugin block gives it.
type nameServer struct {
	name  string       // fully qualified, lower case
	addrs []netip.Addr // none: in a zone, answered with the address a query came in on
}

// soaTimers are the SOA's refresh, retry and expire, in seconds.
type soaTimers struct {
	refresh, retry, expire uint32
}

// apex is what the plugin synthesizes in one zone: the SOA's fixed fields,
// the NS records, and the name servers' names that are in the zone, with
// their addresses, and the empty non-terminals above them.
type apex struct {
	mname, mbox string
	ns          []dns.RR
	// hosts are the name servers in this zone and the empty non-terminals
	// between them and the apex (a host without records or local).
	hosts map[string]*host
	// lengths has bit n set when a host's name is n octets long (bit 63:
	// 63 or more), so that the many queries for other names skip the map.
	lengths uint64
}

// host returns the synthesized name name, or nil.
func (ap *apex) host(name string) *host {
	if ap.lengths&(1<<min(len(name), 63)) == 0 {
		return nil
	}
	return ap.hosts[name]
}

// host is a synthesized name below the apex.
type host struct {
	addrs []dns.RR // A and AAAA
	local bool     // answered with the address the query came in on
}

// newApex builds zone's apex for the name servers servers (ns.dns.ZONE, answered
// with the local address, when there are none).
func newApex(zone string, servers []nameServer, ttl uint32) *apex {
	prefix := zone
	if zone == "." {
		prefix = ""
	}
	if len(servers) == 0 {
		servers = []nameServer{{name: "ns.dns." + prefix}}
	}
	ap := &apex{mname: servers[0].name, mbox: "hostmaster." + prefix, hosts: map[string]*host{}}
	for _, s := range servers {
		ap.ns = append(ap.ns, &dns.NS{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: ttl}, Ns: s.name})
		if s.name == zone || !dns.IsSubDomain(zone, s.name) {
			continue
		}
		h := ap.hosts[s.name]
		if h == nil {
			h = &host{}
			ap.hosts[s.name] = h
		}
		h.local = len(s.addrs) == 0
		for _, a := range s.addrs {
			hdr := dns.RR_Header{Name: s.name, Class: dns.ClassINET, Ttl: ttl}
			if a.Is4() {
				hdr.Rrtype = dns.TypeA
				h.addrs = append(h.addrs, &dns.A{Hdr: hdr, A: a.AsSlice()})
			} else {
				hdr.Rrtype = dns.TypeAAAA
				h.addrs = append(h.addrs, &dns.AAAA{Hdr: hdr, AAAA: a.AsSlice()})
			}
		}
		for p, ok := parentOf(s.name); ok && p != zone; p, ok = parentOf(p) {
			if ap.hosts[p] == nil {
				ap.hosts[p] = &host{}
			}
		}
	}
	for name := range ap.hosts {
		ap.lengths |= 1 << min(len(name), 63)
	}
	return ap
}

// appendHost appends the addresses of type qtype (or every one, for ANY) of a
// synthesized name.
func appendHost(dst []dns.RR, h *host, qtype uint16) []dns.RR {
	for _, rr := range h.addrs {
		if qtype == dns.TypeANY || rr.Header().Rrtype == qtype {
			dst = append(dst, rr)
		}
	}
	return dst
}

// glue returns the address records of the name servers in the zone that have
// configured addresses, for a transfer, in name order.
func (ap *apex) glue() []dns.RR {
	var rrs []dns.RR
	names := make([]string, 0, len(ap.hosts))
	for name := range ap.hosts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		rrs = append(rrs, ap.hosts[name].addrs...)
	}
	return rrs
}

// parentOf returns the name one label up, false at the root.
func parentOf(name string) (string, bool) {
	if name == "." {
		return "", false
	}
	off, end := dns.NextLabel(name, 0)
	if end {
		return ".", true
	}
	return name[off:], true
}
