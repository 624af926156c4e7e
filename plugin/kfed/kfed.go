// Package kfed is a CoreDNS plugin that answers a federation's Service names
// from the DNSEndpoint objects kfed writes to the federation control plane.
// See README.md for its configuration and answers.
package kfed

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/plugin/kfed/index"
)

// Kfed is the plugin: authoritative for its zones, answering from an index
// that a watch on the control plane keeps current.
type Kfed struct {
	Next plugin.Handler

	zones    []string
	cluster  string // the member this CoreDNS runs in; "" for an edge server
	fall     fall.F
	ttl      uint32
	index    *index.Index
	apexes   []*apex // of each of zones
	timers   soaTimers
	serial   zoneSerial
	synced   atomic.Bool // the index has seen a full list of the DNSEndpoints
	requests requestCounters
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
	// client's location when geoip found one, else by weight alone.
	v := k.index.Inside()
	var subnet *dns.EDNS0_SUBNET
	if k.cluster == "" {
		subnet = clientSubnet(r)
		if p, ok := clientLocation(ctx); ok {
			v = k.index.At(p)
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

// Name implements plugin.Handler.
func (k *Kfed) Name() string { return "kfed" }
