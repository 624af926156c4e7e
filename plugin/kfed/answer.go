package kfed

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/plugin/kfed/index"
	"github.com/kfed-io/kfed/plugin/localaddr"
)

// maxChain bounds the CNAMEs followed in one answer (index.MaxChain, which
// kfed explain follows too); a longer chain is left to the client's
// resolver to follow, as one that leaves the zones is.
const maxChain = index.MaxChain

// respond builds the reply to a query for qname, lower case, in zone. Its
// records are made for it from the index's packed records, and its answer
// section is its own, since the order of addresses differs per query; an SRV
// answer's additional section is shared between replies (see targets), as
// CoreDNS's file plugin shares its zone's records: a plugin that changes a
// reply copies it first.
func (k *Kfed) respond(state request.Request, qname, zone string, v index.Vantage) (m *dns.Msg, varies bool) {
	m = newReply(state.Req)
	qtype := state.QType()

	name := qname
	for hop := 0; ; hop++ {
		before := len(m.Answer)
		records, exists := k.index.Lookup(name)
		if name == zone {
			exists = true
			m.Answer = appendApex(m.Answer, k, zone, qtype)
		} else if h := k.apexOf(zone).host(name); h != nil {
			exists = true
			if h.local {
				m.Answer = localaddr.Append(m.Answer, state, name, qtype, k.ttl)
			} else {
				m.Answer = appendHost(m.Answer, h, qtype)
			}
		}
		if !exists {
			m.Rcode = dns.RcodeNameError
			m.Ns = []dns.RR{k.soa(zone)}
			return m, varies
		}
		// A CNAME at the apex would sit beside its SOA and NS: not served.
		if c := cnameOf(records); c != nil && name != zone && qtype != dns.TypeCNAME && qtype != dns.TypeANY {
			m.Answer = append(m.Answer, c)
			if loops(m.Answer, c.Target) {
				// Each record once, and SERVFAIL, as BIND 9 and CoreDNS's
				// file plugin answer a loop: the chain shows where it is,
				// and the rcode says no answer will come of it.
				m.Rcode = dns.RcodeServerFailure
				return m, varies
			}
			next := matchZone(k.zones, c.Target)
			if next == "" || hop+1 == maxChain {
				return m, varies // the client's resolver follows it from here
			}
			name, zone = c.Target, next
			continue
		}
		var differs bool
		m.Answer, differs = appendRecords(m.Answer, records, qtype, v)
		varies = varies || differs
		if qtype == dns.TypeSRV && records != nil {
			m.Extra = k.targets(records)
		}
		if len(m.Answer) == before {
			m.Ns = []dns.RR{k.soa(zone)} // NODATA
		}
		return m, varies
	}
}

// reply is a reply with room for its question and a typical answer, in one
// allocation rather than three: allocation, and the garbage collection it
// brings, is a good part of a query's cost.
type reply struct {
	msg      dns.Msg
	question [1]dns.Question
	answer   [4]dns.RR
}

// newReply returns the authoritative reply to req as dns.Msg.SetReply
// starts it.
func newReply(req *dns.Msg) *dns.Msg {
	r := new(reply)
	m := &r.msg
	m.Id = req.Id
	m.Response = true
	m.Authoritative = true
	m.Opcode = req.Opcode
	if m.Opcode == dns.OpcodeQuery {
		m.RecursionDesired = req.RecursionDesired
		m.CheckingDisabled = req.CheckingDisabled
	}
	if len(req.Question) > 0 {
		r.question[0] = req.Question[0]
		m.Question = r.question[:]
	}
	m.Answer = r.answer[:0]
	return m
}

// matchZone returns the longest of zones that name is in, or "". It does
// what plugin.Zones.Matches does for lower-case, fully qualified names,
// without the allocations of miekg/dns's label splitting (half of a query's)
// unless the name has escapes, where a dot may be inside a label.
func matchZone(zones []string, name string) string {
	if strings.IndexByte(name, '\\') >= 0 {
		return plugin.Zones(zones).Matches(name)
	}
	match := ""
	for _, z := range zones {
		in := z == "." || name == z || (len(name) > len(z) && name[len(name)-len(z)-1] == '.' && name[len(name)-len(z):] == z)
		if in && len(z) > len(match) {
			match = z
		}
	}
	return match
}

// loops reports whether target is the owner of one of the CNAMEs in chain:
// following it would repeat the chain.
func loops(chain []dns.RR, target string) bool {
	for _, rr := range chain {
		if rr.Header().Name == target {
			return true
		}
	}
	return false
}

func cnameOf(r *index.Records) *dns.CNAME {
	if r == nil {
		return nil
	}
	return r.CNAME()
}

// appendRecords appends a name's records of type qtype; ANY gets all of
// them. Addresses are in the order a client at v gets them; it reports
// whether that order depended on where v is.
func appendRecords(dst []dns.RR, r *index.Records, qtype uint16, v index.Vantage) ([]dns.RR, bool) {
	if r == nil {
		return dst, false
	}
	var varies, v6 bool
	switch qtype {
	case dns.TypeA, dns.TypeAAAA:
		return r.AppendFrom(dst, qtype, v, rand.IntN)
	case dns.TypeCNAME:
		if c := r.CNAME(); c != nil {
			dst = append(dst, c)
		}
	case dns.TypeSRV:
		dst = append(dst, r.SRV()...)
	case dns.TypeTXT:
		dst = append(dst, r.TXT()...)
	case dns.TypeANY:
		if c := r.CNAME(); c != nil {
			dst = append(dst, c)
		}
		dst, varies = r.AppendFrom(dst, dns.TypeA, v, rand.IntN)
		dst, v6 = r.AppendFrom(dst, dns.TypeAAAA, v, rand.IntN)
		dst = append(dst, r.SRV()...)
		dst = append(dst, r.TXT()...)
	}
	return dst, varies || v6
}

// targets returns the additional section of an SRV answer at r: the
// addresses of its targets in the plugin's zones. They are looked up once per
// index version and kept with r, since an SRV answer would otherwise cost a
// lookup per target on every query. The slice is shared: a reply's Extra may
// be appended to (by the server's OPT record) only because its capacity is
// its length, so an append copies it.
func (k *Kfed) targets(r *index.Records) []dns.RR {
	version := k.index.Version()
	if rrs, ok := k.index.Derived(r, version); ok {
		return rrs
	}
	rrs := slices.Clip(k.appendTargets(nil, r.SRV()))
	k.index.SetDerived(r, version, rrs)
	return rrs
}

// appendTargets appends the addresses of the SRV records' targets that are in
// the plugin's zones, for the additional section.
func (k *Kfed) appendTargets(dst []dns.RR, srvs []dns.RR) []dns.RR {
	for _, rr := range srvs {
		srv, ok := rr.(*dns.SRV)
		if !ok || matchZone(k.zones, srv.Target) == "" {
			continue
		}
		if r, _ := k.index.Lookup(srv.Target); r != nil {
			// Per-cluster names: one cluster each, the same to every client.
			dst, _ = r.AppendFrom(dst, dns.TypeA, k.index.Inside(), rand.IntN)
			dst, _ = r.AppendFrom(dst, dns.TypeAAAA, k.index.Inside(), rand.IntN)
		}
	}
	return dst
}

// appendApex appends the synthesized SOA and NS of zone.
func appendApex(dst []dns.RR, k *Kfed, zone string, qtype uint16) []dns.RR {
	switch qtype {
	case dns.TypeSOA:
		return append(dst, k.soa(zone))
	case dns.TypeNS:
		return append(dst, k.apexOf(zone).ns...)
	case dns.TypeANY:
		return append(append(dst, k.soa(zone)), k.apexOf(zone).ns...)
	}
	return dst
}

// soa is zone's SOA, its serial the zone's. Its TTL and minimum are the
// plugin's ttl, which makes that the negative TTL (RFC 2308).
func (k *Kfed) soa(zone string) dns.RR {
	ap := k.apexOf(zone)
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: k.ttl},
		Ns:      ap.mname,
		Mbox:    ap.mbox,
		Serial:  k.serial.soa(),
		Refresh: k.timers.refresh,
		Retry:   k.timers.retry,
		Expire:  k.timers.expire,
		Minttl:  k.ttl,
	}
}
