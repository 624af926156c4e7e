package kfed

import (
	"math/rand/v2"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/plugin/kfed/index"
)

// maxChain bounds the CNAMEs followed in one answer (index.MaxChain, which
// kfed explain follows too); a longer chain is left to the client's
// resolver to follow, as one that leaves the zones is.
const maxChain = index.MaxChain

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
