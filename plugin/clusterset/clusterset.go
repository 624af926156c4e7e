// Package clusterset is a CoreDNS plugin that answers a member cluster's
// clusterset zone (clusterset.local) per the Multi-Cluster Services DNS
// specification, from the member's own ServiceImports and MCS EndpointSlices.
// See README.md for its configuration and answers; package zone holds the
// records.
package clusterset

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/plugin/clusterset/zone"
	"github.com/kfed-io/kfed/plugin/localaddr"
)

// Clusterset is the plugin: authoritative for its zone, answering from a
// zone.Zone that informers on the member keep current.
type Clusterset struct {
	Next plugin.Handler

	zone      *zone.Zone
	suffix    string // "." + the zone's origin
	server    string // the name server's name, ns.dns.ORIGIN
	ttl       uint32
	fall      fall.F
	serial    atomic.Uint32 // the highest resourceVersion seen, modulo 2^32
	synced    atomic.Bool   // the zone has seen full lists of both kinds
	listening atomic.Bool   // the instance's servers have bound their ports
	requests  *requestCounters
}

// ServeDNS answers a query for a name in the zone without calling the API
// server. Until the first full lists have arrived it answers SERVFAIL rather
// than deny names that may exist.
func (c *Clusterset) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if len(r.Question) != 1 || r.Question[0].Qclass != dns.ClassINET {
		return plugin.NextOrFailure(c.Name(), c.Next, ctx, w, r)
	}
	qname, qtype := strings.ToLower(r.Question[0].Name), r.Question[0].Qtype
	if qname != c.zone.Origin() && !strings.HasSuffix(qname, c.suffix) {
		return plugin.NextOrFailure(c.Name(), c.Next, ctx, w, r)
	}
	if rcode, ok := c.refuse(r, qtype); ok {
		c.requests.count(rcode)
		return rcode, nil // CoreDNS's server writes the error reply
	}
	m := c.respond(request.Request{W: w, Req: r}, qname, qtype)
	if m.Rcode == dns.RcodeNameError && c.fall.Through(qname) {
		return plugin.NextOrFailure(c.Name(), c.Next, ctx, w, r)
	}
	c.requests.count(m.Rcode)
	if err := w.WriteMsg(m); err != nil {
		return dns.RcodeServerFailure, plugin.Error(c.Name(), err)
	}
	return dns.RcodeSuccess, nil
}

// refuse returns the error a query gets without an answer, if it gets one:
// REFUSED for an update or transfer (the zone is read-only and each
// member's own), NOTIMP for other opcodes, SERVFAIL before the first full
// lists.
func (c *Clusterset) refuse(r *dns.Msg, qtype uint16) (int, bool) {
	switch {
	case r.Opcode == dns.OpcodeUpdate || qtype == dns.TypeAXFR || qtype == dns.TypeIXFR:
		return dns.RcodeRefused, true
	case r.Opcode != dns.OpcodeQuery:
		return dns.RcodeNotImplemented, true
	case !c.synced.Load():
		return dns.RcodeServerFailure, true
	}
	return 0, false
}

// respond builds the reply to a query for qname, lower case, in the zone.
// Records are shared with the zone; the sections are the reply's own.
func (c *Clusterset) respond(state request.Request, qname string, qtype uint16) *dns.Msg {
	m := newReply(state.Req)
	origin := c.zone.Origin()
	switch qname {
	case origin:
		if qtype == dns.TypeSOA || qtype == dns.TypeANY {
			m.Answer = append(m.Answer, c.soa())
		}
		if qtype == dns.TypeNS || qtype == dns.TypeANY {
			m.Answer = append(m.Answer, c.ns())
		}
	case c.server:
		m.Answer = localaddr.Append(m.Answer, state.LocalIP(), qname, qtype, c.ttl)
	case c.server[len("ns."):]:
		// The name server's parent, dns.ORIGIN: an empty non-terminal.
	default:
		n, ok := c.zone.Lookup(qname)
		if !ok {
			m.Rcode = dns.RcodeNameError
			m.Ns = []dns.RR{c.soa()}
			return m
		}
		switch qtype {
		case dns.TypeA:
			m.Answer = append(m.Answer, n.A...)
		case dns.TypeAAAA:
			m.Answer = append(m.Answer, n.AAAA...)
		case dns.TypeSRV:
			m.Answer = append(m.Answer, n.SRV...)
			if len(n.SRV) > 0 {
				m.Extra = append(m.Extra, n.Extra...)
			}
		case dns.TypeTXT:
			m.Answer = append(m.Answer, n.TXT...)
		case dns.TypeANY:
			for _, rrs := range [][]dns.RR{n.A, n.AAAA, n.SRV, n.TXT} {
				m.Answer = append(m.Answer, rrs...)
			}
		}
	}
	if len(m.Answer) == 0 {
		m.Ns = []dns.RR{c.soa()} // NODATA
	}
	return m
}

// reply is a reply with room for its question and a short answer, in one
// allocation rather than three: allocation is most of a query's cost here.
type reply struct {
	msg      dns.Msg
	question [1]dns.Question
	answer   [4]dns.RR
}

// newReply returns the authoritative reply to req, as dns.Msg.SetReply
// starts one.
func newReply(req *dns.Msg) *dns.Msg {
	r := new(reply)
	m := &r.msg
	m.Id, m.Response, m.Authoritative, m.Opcode = req.Id, true, true, req.Opcode
	m.RecursionDesired, m.CheckingDisabled = req.RecursionDesired, req.CheckingDisabled
	r.question[0] = req.Question[0]
	m.Question = r.question[:]
	m.Answer = r.answer[:0]
	return m
}

// soa is the zone's SOA. Its TTL and minimum are the plugin's ttl, which
// makes that the negative TTL (RFC 2308); the timers matter to no one, since
// the zone is not transferred.
func (c *Clusterset) soa() dns.RR {
	origin := c.zone.Origin()
	return &dns.SOA{
		Hdr:    dns.RR_Header{Name: origin, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: c.ttl},
		Ns:     c.server,
		Mbox:   "hostmaster." + origin,
		Serial: c.serial.Load(), Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: c.ttl,
	}
}

// ns is the zone's one name server: this server, as CoreDNS's kubernetes
// plugin names it in cluster.local.
func (c *Clusterset) ns() dns.RR {
	origin := c.zone.Origin()
	return &dns.NS{Hdr: dns.RR_Header{Name: origin, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: c.ttl}, Ns: c.server}
}

// Ready implements CoreDNS's ready.Readiness: the plugin is ready once it
// has full lists of the member's ServiceImports and MCS EndpointSlices and
// its servers listen (see package listening for why both).
func (c *Clusterset) Ready() bool { return c.synced.Load() && c.listening.Load() }

// Name implements plugin.Handler.
func (c *Clusterset) Name() string { return pluginName }
