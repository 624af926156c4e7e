// Package localaddr answers a zone's name server name with the address the
// query arrived on, as CoreDNS's whoami does: whichever address reached the
// server is one that serves the zone. kfed's plugins (kfed, clusterset)
// answer their zones' NS targets with it.
package localaddr

import (
	"net"

	"github.com/miekg/dns"
)

// Append appends to dst the A or AAAA record (as qtype asks; both families
// for ANY) of name at local, the address the query arrived on
// (request.Request.LocalIP), with ttl. A query of the other family, or
// from no address, appends nothing. It takes the address rather than the
// request, which would be copied into the frame of every caller's query.
func Append(dst []dns.RR, local string, name string, qtype uint16, ttl uint32) []dns.RR {
	ip := net.ParseIP(local)
	if ip == nil {
		return dst
	}
	hdr := dns.RR_Header{Name: name, Rrtype: qtype, Class: dns.ClassINET, Ttl: ttl}
	switch v4 := ip.To4(); {
	case v4 != nil && (qtype == dns.TypeA || qtype == dns.TypeANY):
		hdr.Rrtype = dns.TypeA
		return append(dst, &dns.A{Hdr: hdr, A: v4})
	case v4 == nil && (qtype == dns.TypeAAAA || qtype == dns.TypeANY):
		hdr.Rrtype = dns.TypeAAAA
		return append(dst, &dns.AAAA{Hdr: hdr, AAAA: ip})
	}
	return dst
}
