// Package rfc2136 publishes kfed's records to any DNS server that accepts
// dynamic updates (RFC 2136) signed with TSIG: BIND, Knot, PowerDNS. Zones
// are listed by AXFR; changes to one name go in one UPDATE message whose
// prerequisites say what the zone held when it was listed, so a concurrent
// change makes the server refuse the message (YXRRSET/NXRRSET) rather than
// be overwritten. Changes are packed into as few messages as fit; a message
// the server refuses for what it asks (see rcodeError) is split until the
// names to blame are found, and the rest is applied.
//
// Plain DNS has no weighted routing: record sets that differ only by set
// identifier are merged into one (see Provider.Adjust).
package rfc2136

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/dns/dnsprovider"
)

// DefaultMaxMessageSize is the largest UPDATE message sent, in bytes, before
// the TSIG record: under the 65,535 bytes a DNS message over TCP can carry,
// with room for TSIG and headers.
const DefaultMaxMessageSize = 60000

// Config says where to send updates and how to sign them. The TSIG secret is
// read from a file (a mounted Secret), never given on a command line.
type Config struct {
	// Server is host:port of the primary server.
	Server string
	// Zones are the zones to manage.
	Zones []string
	// TSIGKeyName names the key, as the server's key statement does.
	TSIGKeyName string
	// TSIGAlgorithm is a miekg/dns algorithm name such as dns.HmacSHA256
	// ("hmac-sha256."); it defaults to HMAC-SHA256.
	TSIGAlgorithm string
	// TSIGSecretFile holds the base64 secret.
	TSIGSecretFile string
	// Timeout bounds each exchange; default 10 s.
	Timeout time.Duration
	// MaxMessageSize bounds each UPDATE message in bytes; default
	// DefaultMaxMessageSize.
	MaxMessageSize int
}

// Provider is an RFC 2136 server.
type Provider struct {
	cfg     Config
	keyName string
	alg     string
	secret  string
	dnsprovider.Counters
}

var _ dnsprovider.Provider = (*Provider)(nil)

// New checks cfg and reads the TSIG secret.
func New(cfg Config) (*Provider, error) {
	if cfg.Server == "" || len(cfg.Zones) == 0 {
		return nil, fmt.Errorf("rfc2136: server and at least one zone are required")
	}
	if _, _, err := net.SplitHostPort(cfg.Server); err != nil {
		return nil, fmt.Errorf("rfc2136: server %q: %w", cfg.Server, err)
	}
	p := &Provider{cfg: cfg, alg: dns.HmacSHA256}
	if p.cfg.Timeout == 0 {
		p.cfg.Timeout = 10 * time.Second
	}
	if p.cfg.MaxMessageSize == 0 {
		p.cfg.MaxMessageSize = DefaultMaxMessageSize
	}
	if cfg.TSIGAlgorithm != "" {
		p.alg = dns.Fqdn(strings.ToLower(cfg.TSIGAlgorithm))
	}
	if cfg.TSIGKeyName != "" {
		if cfg.TSIGSecretFile == "" {
			return nil, fmt.Errorf("rfc2136: TSIG key %s has no secret file", cfg.TSIGKeyName)
		}
		b, err := os.ReadFile(cfg.TSIGSecretFile)
		if err != nil {
			return nil, fmt.Errorf("rfc2136: reading TSIG secret: %w", err)
		}
		p.keyName = dns.Fqdn(strings.ToLower(cfg.TSIGKeyName))
		p.secret = strings.TrimSpace(string(b))
	}
	return p, nil
}

// Name returns "rfc2136".
func (p *Provider) Name() string { return "rfc2136" }

// Zones returns the configured zones; it asks the server nothing.
func (p *Provider) Zones(context.Context) ([]dnsprovider.Zone, error) {
	zones := make([]dnsprovider.Zone, 0, len(p.cfg.Zones))
	for _, z := range p.cfg.Zones {
		zones = append(zones, &zone{p: p, name: dnsprovider.NormalizeName(z)})
	}
	return zones, nil
}

// Adjust merges record sets that differ only by set identifier, since plain
// DNS cannot choose between them by weight: every cluster's addresses are
// answered, as a name without weights would be. Alias hints are dropped.
func (p *Provider) Adjust(desired []dnsprovider.RecordSet) []dnsprovider.RecordSet {
	return dnsprovider.MergeSetIdentifiers(desired)
}

// sign adds a TSIG record to m when a key is configured.
func (p *Provider) sign(m *dns.Msg) {
	if p.keyName != "" {
		m.SetTsig(p.keyName, p.alg, 300, time.Now().Unix())
	}
}

func (p *Provider) tsigSecret() map[string]string {
	if p.keyName == "" {
		return nil
	}
	return map[string]string{p.keyName: p.secret}
}

type zone struct {
	p    *Provider
	name string
}

var _ dnsprovider.Zone = (*zone)(nil)

func (z *zone) Name() string { return z.name }
func (z *zone) ID() string   { return z.name }

// Records lists the zone by AXFR over TCP, signed when a key is configured.
func (z *zone) Records(ctx context.Context) ([]dnsprovider.RecordSet, error) {
	p := z.p
	ctx, cancel := context.WithTimeout(ctx, 10*p.cfg.Timeout)
	defer cancel()
	conn, err := (&net.Dialer{Timeout: p.cfg.Timeout}).DialContext(ctx, "tcp", p.cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("rfc2136: AXFR of %s: %w", z.name, err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	t := &dns.Transfer{Conn: &dns.Conn{Conn: conn}, TsigSecret: p.tsigSecret(), ReadTimeout: p.cfg.Timeout, WriteTimeout: p.cfg.Timeout}
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(z.name))
	p.sign(m)
	p.Request()
	env, err := t.In(m, p.cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("rfc2136: AXFR of %s: %w", z.name, err)
	}
	type nt struct{ name, typ string }
	sets := map[nt]*dnsprovider.RecordSet{}
	var order []nt
	for e := range env {
		if e.Error != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("rfc2136: AXFR of %s: %w", z.name, ctx.Err())
			}
			return nil, fmt.Errorf("rfc2136: AXFR of %s: %w", z.name, e.Error)
		}
		for _, rr := range e.RR {
			h := rr.Header()
			typ := dns.TypeToString[h.Rrtype]
			if !dnsprovider.IsManagedType(typ) {
				continue
			}
			k := nt{dnsprovider.NormalizeName(h.Name), typ}
			rs, ok := sets[k]
			if !ok {
				rs = &dnsprovider.RecordSet{Name: k.name, Type: typ, TTL: int64(h.Ttl)}
				sets[k] = rs
				order = append(order, k)
			}
			rs.TTL = min(rs.TTL, int64(h.Ttl))
			rs.Targets = append(rs.Targets, rdata(rr))
		}
	}
	out := make([]dnsprovider.RecordSet, 0, len(order))
	for _, k := range order {
		n, err := dnsprovider.Normalize(*sets[k])
		if err != nil {
			return nil, fmt.Errorf("rfc2136: AXFR of %s: %w", z.name, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// rdata is the presentation form of rr's data, as a zone file writes it.
func rdata(rr dns.RR) string {
	return strings.TrimPrefix(rr.String(), rr.Header().String())
}

// rrs turns a record set into DNS records.
func rrs(rs dnsprovider.RecordSet) ([]dns.RR, error) {
	if rs.Alias != nil || rs.SetIdentifier != "" {
		return nil, fmt.Errorf("rfc2136: %s: alias and weighted record sets are not supported", rs.Key())
	}
	out := make([]dns.RR, 0, len(rs.Targets))
	for _, t := range rs.Targets {
		rr, err := dns.NewRR(fmt.Sprintf("%s %d IN %s %s", dns.Fqdn(rs.Name), rs.TTL, rs.Type, fqdnTarget(rs.Type, t)))
		if err != nil {
			return nil, fmt.Errorf("rfc2136: %s target %q: %w", rs.Key(), t, err)
		}
		if rr == nil { // the text was all comment (a name starting with ';')
			return nil, fmt.Errorf("rfc2136: %s target %q: not a record in zone-file syntax", rs.Key(), t)
		}
		// Zone-file syntax gives some text a meaning of its own (a ';'
		// starts a comment, a space separates TXT strings, a name may be
		// cut short): a record that would not read back as the record set
		// asked for is refused, never written in its stead.
		if err := readsBack(rs, t, rr); err != nil {
			return nil, fmt.Errorf("rfc2136: %s target %q: %w", rs.Key(), t, err)
		}
		out = append(out, rr)
	}
	return out, nil
}

// readsBack reports an error unless rr, sent and read back from a zone
// transfer as Records reads it, is target of rs, a record set in normal
// form.
func readsBack(rs dnsprovider.RecordSet, target string, rr dns.RR) error {
	buf := make([]byte, dns.Len(rr))
	n, err := dns.PackRR(rr, buf, 0, nil, false)
	if err != nil {
		return fmt.Errorf("written as %q, which does not pack: %w", rr.String(), err)
	}
	wire, _, err := dns.UnpackRR(buf[:n], 0)
	if err != nil {
		return fmt.Errorf("written as %q, which does not unpack: %w", rr.String(), err)
	}
	h := wire.Header()
	back, err := dnsprovider.Normalize(dnsprovider.RecordSet{Name: h.Name, Type: dns.TypeToString[h.Rrtype], TTL: int64(h.Ttl), Targets: []string{rdata(wire)}})
	if err != nil {
		return fmt.Errorf("written as %q, which does not read back: %w", rr.String(), err)
	}
	// rs is in normal form already (the plan's, or read from the zone).
	if want := (dnsprovider.RecordSet{Name: rs.Name, Type: rs.Type, TTL: rs.TTL, Targets: []string{target}}); !back.Equal(want) {
		return fmt.Errorf("written as %q, which reads back as %v", rr.String(), back)
	}
	return nil
}

// fqdnTarget adds the trailing dot that names in zone-file syntax need.
func fqdnTarget(typ, t string) string {
	switch typ {
	case dnsprovider.TypeCNAME:
		return dns.Fqdn(t)
	case dnsprovider.TypeSRV:
		if i := strings.LastIndexByte(t, ' '); i >= 0 {
			return t[:i+1] + dns.Fqdn(t[i+1:])
		}
	}
	return t
}

// emptyRRset is a record with name and type but no data, as prerequisites and
// RRset deletions use.
func emptyRRset(rs dnsprovider.RecordSet) []dns.RR {
	return []dns.RR{&dns.ANY{Hdr: dns.RR_Header{Name: dns.Fqdn(rs.Name), Rrtype: dns.StringToType[rs.Type]}}}
}

func (z *zone) NewChangeset() dnsprovider.Changeset { return &changeset{zone: z} }

type changeset struct {
	dnsprovider.ChangeList
	zone *zone
}

var _ dnsprovider.Changeset = (*changeset)(nil)

// update is the prerequisites and updates of one change.
type update struct {
	prereq, ins, del []dns.RR
}

// encode turns a change into prerequisites (what the zone held when listed)
// and updates.
func encode(c dnsprovider.Change) (update, error) {
	var u update
	switch c.Action {
	case dnsprovider.Create:
		u.prereq = emptyRRset(c.New) // RRset does not exist
		u.prereq[0].Header().Class = dns.ClassNONE
	case dnsprovider.Update, dnsprovider.Delete:
		old, err := rrs(c.Old)
		if err != nil {
			return u, err
		}
		for _, rr := range old {
			rr.Header().Ttl = 0 // as RFC 2136 2.4.2 requires of prerequisites
		}
		u.prereq = old // RRset exists with exactly this data
		u.del = emptyRRset(c.Old)
		u.del[0].Header().Class = dns.ClassANY
	}
	if c.Action != dnsprovider.Delete {
		ins, err := rrs(c.New)
		if err != nil {
			return u, err
		}
		u.ins = ins
	}
	return u, nil
}

func (u update) size() int {
	n := 0
	for _, list := range [][]dns.RR{u.prereq, u.ins, u.del} {
		for _, rr := range list {
			n += dns.Len(rr)
		}
	}
	return n
}

// Apply sends the changes in as few UPDATE messages as fit in
// MaxMessageSize, never splitting the changes to one name across messages.
// A message the server refuses for bad input (see rcodeError) is split
// until the names it refuses are found alone (dnsprovider.SendIsolating);
// the others are applied, and Apply returns a *dnsprovider.RefusedError
// naming the refused. A change that cannot be written as asked (see rrs) is
// refused the same way without being sent, with every other change to its
// name: one record zone-file syntax cannot carry must not hold back the
// whole zone. Any other error stops it: messages sent before stay applied;
// a failed prerequisite wraps dnsprovider.ErrPrecondition.
func (cs *changeset) Apply(ctx context.Context) error {
	z, p := cs.zone, cs.zone.p
	var refused []dnsprovider.Refusal
	unwritable := map[string]error{}
	for _, c := range cs.Changes() {
		if _, err := encode(c); err != nil && unwritable[c.Group] == nil {
			unwritable[c.Group] = fmt.Errorf("%w: %w", err, dnsprovider.ErrRejected)
		}
	}
	var groups [][]dnsprovider.Change
	for _, g := range dnsprovider.GroupChanges(cs.Changes()) {
		if err := unwritable[g[0].Group]; err != nil {
			refused = append(refused, dnsprovider.Refusal{Group: g[0].Group, Changes: g, Err: err})
			continue
		}
		groups = append(groups, g)
	}
	// The header and question (the zone's name) are in every message.
	room := p.cfg.MaxMessageSize - 12 - len(dns.Fqdn(z.name)) - 6
	size := func(c dnsprovider.Change) []int {
		u, _ := encode(c)
		return []int{u.size()}
	}
	batches, err := dnsprovider.Batch(groups, []int{room}, size)
	if err != nil {
		return fmt.Errorf("rfc2136: zone %s: %w", z.name, err)
	}
	for i, b := range batches {
		r, err := dnsprovider.SendIsolating(ctx, dnsprovider.GroupChanges(b), z.send, func(g []dnsprovider.Change) (string, []dnsprovider.Change) { return g[0].Group, g })
		refused = append(refused, r...)
		if err != nil {
			return fmt.Errorf("rfc2136: zone %s: message %d of %d (%d changes, from %s): %w", z.name, i+1, len(batches), len(b), b[0].Group, err)
		}
	}
	if len(refused) > 0 {
		return &dnsprovider.RefusedError{Refusals: refused}
	}
	return nil
}

// send applies groups in one UPDATE message over TCP.
func (z *zone) send(ctx context.Context, groups [][]dnsprovider.Change) error {
	p := z.p
	m := new(dns.Msg)
	m.SetUpdate(dns.Fqdn(z.name))
	n := 0
	for _, g := range groups {
		for _, c := range g {
			u, _ := encode(c)
			m.Answer = append(m.Answer, u.prereq...)
			m.Ns = append(m.Ns, u.del...)
			m.Ns = append(m.Ns, u.ins...)
		}
		n += len(g)
	}
	p.sign(m)
	client := &dns.Client{Net: "tcp", Timeout: p.cfg.Timeout, TsigSecret: p.tsigSecret()}
	p.Request()
	r, _, err := client.ExchangeContext(ctx, m, p.cfg.Server)
	if err != nil {
		return fmt.Errorf("sending update: %w", err)
	}
	if err := rcodeError(r.Rcode); err != nil {
		if len(groups) == 1 {
			return fmt.Errorf("rfc2136: zone %s: update of %s: %w", z.name, groups[0][0].Group, err)
		}
		return err
	}
	p.Applied(n)
	return nil
}

// rcodeError tells what an UPDATE's response code means (RFC 2136 2.2). A
// failed prerequisite (YXDOMAIN, YXRRSET, NXDOMAIN, NXRRSET) means the zone
// changed since it was listed: dnsprovider.ErrPrecondition. FORMERR (the
// server could not take the message as written), NOTZONE (a name outside
// the zone) and REFUSED (refused by policy: BIND answers it when its
// update-policy denies one of the names, and for a key allowed nothing) are
// the server refusing what was asked and wrap dnsprovider.ErrRejected: sent
// again they are refused again, and SendIsolating finds the names to blame.
// SERVFAIL, NOTIMP, NOTAUTH (not authoritative, or the TSIG key refused) and
// any other code are an outage.
func rcodeError(rcode int) error {
	switch rcode {
	case dns.RcodeSuccess:
		return nil
	case dns.RcodeYXRrset, dns.RcodeNXRrset, dns.RcodeYXDomain, dns.RcodeNameError:
		return fmt.Errorf("server answered %s: %w", dns.RcodeToString[rcode], dnsprovider.ErrPrecondition)
	case dns.RcodeFormatError, dns.RcodeNotZone, dns.RcodeRefused:
		return fmt.Errorf("server answered %s: %w", dns.RcodeToString[rcode], dnsprovider.ErrRejected)
	}
	return fmt.Errorf("server answered %s", dns.RcodeToString[rcode])
}
