// Package kfed is a CoreDNS plugin that answers a federation's Service names
// from the DNSEndpoint objects kfed writes to the federation control plane.
// See README.md for its configuration and answers.
package kfed

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/plugin/kfed/index"
	"github.com/kfed-io/kfed/plugin/localaddr"
)

// Kfed is the plugin: authoritative for its zones, answering from an index
// that a watch on the control plane keeps current.
type Kfed struct {
	Next plugin.Handler

	zones     []string
	cluster   string // the member this CoreDNS runs in; "" for an edge server
	fall      fall.F
	ttl       uint32
	index     *index.Index
	apexes    []*apex // of each of zones
	timers    soaTimers
	serial    zoneSerial
	synced    atomic.Bool // the index has seen a full list of the DNSEndpoints
	listening atomic.Bool // the instance's servers have bound their ports
	requests  requestCounters
}

// ServeDNS answers a query for a name in the plugin's zones from the index,
// without calling the API server. Until the index has been filled once it
// answers SERVFAIL rather than deny names that may exist.
//
// Replies are not truncated here: CoreDNS's server wraps every
// ResponseWriter in a request.ScrubWriter that fits the reply to the
// client's UDP or EDNS0 buffer and sets TC, so doing it here too would
// measure every reply twice.
func (k *Kfed) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if len(r.Question) != 1 || r.Question[0].Qclass != dns.ClassINET {
		return plugin.NextOrFailure(k.Name(), k.Next, ctx, w, r)
	}
	// The name as CoreDNS's server matches zones: lower case, as it came.
	// request.Request.Name would re-escape it: a tenth of the plugin's time.
	qname, qtype := strings.ToLower(r.Question[0].Name), r.Question[0].Qtype
	zone := matchZone(k.zones, qname)
	if zone == "" {
		return plugin.NextOrFailure(k.Name(), k.Next, ctx, w, r)
	}
	switch r.Opcode {
	case dns.OpcodeQuery:
	case dns.OpcodeNotify:
		return k.notifyReceived(w, r, qname, zone)
	case dns.OpcodeUpdate:
		// The zone is read-only: it is derived from DNSEndpoints, which are
		// what to change. BIND refuses an update its zone does not allow.
		return dns.RcodeRefused, nil
	default:
		return dns.RcodeNotImplemented, nil
	}
	if qtype == dns.TypeAXFR || qtype == dns.TypeIXFR {
		// A transfer the transfer plugin did not take is not allowed here.
		// An answer without records would read as a broken transfer, which
		// some clients wait out.
		return dns.RcodeRefused, nil
	}
	if !k.synced.Load() {
		k.requests.count(qtype, dns.RcodeServerFailure)
		return dns.RcodeServerFailure, nil
	}
	// Inside a cluster, clusters are ordered from it; at the edge, from the
	// client's location when geoip found one, else by weight alone, with a
	// draw of its own for a resolver's client subnet.
	v := k.index.Inside()
	var subnet *dns.EDNS0_SUBNET
	if k.cluster == "" {
		subnet = clientSubnet(r)
		if p, ok := clientLocation(ctx); ok {
			v = k.index.At(p)
		}
		if subnet != nil {
			if p, ok := subnetPrefix(subnet); ok {
				v = v.For(p)
			}
		}
	}
	m, varies := k.respond(request.Request{W: w, Req: r}, qname, zone, v)
	if m.Rcode == dns.RcodeNameError && k.fall.Through(qname) {
		return plugin.NextOrFailure(k.Name(), k.Next, ctx, w, r)
	}
	if subnet != nil {
		echoSubnet(m, subnet, varies)
	}
	k.requests.count(qtype, m.Rcode)
	if err := w.WriteMsg(m); err != nil {
		return dns.RcodeServerFailure, plugin.Error(k.Name(), err)
	}
	return dns.RcodeSuccess, nil
}

// notifyReceived answers a NOTIFY (RFC 1996). The plugin is the zone's
// primary, never a secondary, so it has nothing to refresh: it acknowledges a
// NOTIFY for one of its zones, as BIND does on a primary, so that the sender
// stops retrying, and answers NOTAUTH for any other name.
func (k *Kfed) notifyReceived(w dns.ResponseWriter, r *dns.Msg, qname, zone string) (int, error) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	if qname != zone {
		m.Rcode = dns.RcodeNotAuth
	}
	if err := w.WriteMsg(m); err != nil {
		return dns.RcodeServerFailure, plugin.Error(k.Name(), err)
	}
	return dns.RcodeSuccess, nil
}

// apexOf returns the apex of zone, one of the plugin's zones, or nil. A loop,
// not a map: a plugin has a zone or two, and this runs for every query.
func (k *Kfed) apexOf(zone string) *apex {
	for i, z := range k.zones {
		if z == zone {
			return k.apexes[i]
		}
	}
	return nil
}

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
				m.Answer = localaddr.Append(m.Answer, state.LocalIP(), name, qtype, k.ttl)
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
		if records != nil && (qtype == dns.TypeA || qtype == dns.TypeAAAA) {
			// Most queries: without appendRecords' frame under the
			// answer's, which is the plugin's deepest (AppendFrom).
			m.Answer, differs = records.AppendFrom(m.Answer, qtype, v, rand.IntN)
		} else {
			m.Answer, differs = appendRecords(m.Answer, records, qtype, v)
		}
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

// Name implements plugin.Handler.
func (k *Kfed) Name() string { return "kfed" }
