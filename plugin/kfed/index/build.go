package index

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/policy/load"
)

// build merges one object's endpoints at name into its packed records
// (Records.data); "" when none can be served.
func build(name string, endpoints []*extdnsv1alpha1.Endpoint, clusters dnsendpoint.Clusters, cluster string, defaultTTL uint32, ids *clusterIDs, byDistance bool) (string, error) {
	var (
		b    = builder{name: name, cluster: cluster, defaultTTL: defaultTTL, ids: ids, byDistance: byDistance}
		errs []error
	)
	for _, ep := range endpoints {
		if err := b.add(ep, clusters); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", ep.RecordType, ep.DNSName, err))
		}
	}
	return b.encode(), errors.Join(append(errs, b.besideCNAME())...)
}

// merge merges the records of several objects at name, parts, as build
// would have merged their endpoints; nil when none can be served. The
// merge's name and records are a string of their own, so that it holds no
// object's string.
func merge(name string, parts []*Records, cluster string, defaultTTL uint32, ids *clusterIDs) (*Records, error) {
	var (
		// The merge is ordered by distance only where every part is: one
		// Service routed by weight keeps the name's weights.
		b    = builder{name: name, cluster: cluster, defaultTTL: defaultTTL, ids: ids, byDistance: true}
		errs []error
	)
	for _, p := range parts {
		b.byDistance = b.byDistance && p.byDistance()
		if err := b.addRecords(p); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", p.owner.key, name, err))
		}
	}
	err := errors.Join(append(errs, b.besideCNAME())...)
	data := b.encode()
	if data == "" {
		return nil, err
	}
	s := name + data
	return &Records{s: s, n: int32(len(name))}, err
}

func (b *builder) besideCNAME() error {
	if b.cname != "" && len(b.a)+len(b.aaaa)+len(b.srv)+len(b.txt) > 0 {
		return fmt.Errorf("%s: records beside its CNAME are not served (RFC 1034 3.6.2)", b.name)
	}
	return nil
}

// addRecords adds what one object's records at the name hold. They were
// built by the same rules, so that only TTLs, CNAME conflicts and the order
// of address groups are left to merge.
func (b *builder) addRecords(r *Records) error {
	var err error
	if c := r.CNAME(); c != nil {
		if b.cname != "" && b.cname != c.Target {
			err = fmt.Errorf("a second CNAME target %s beside %s", c.Target, b.cname)
		} else {
			b.cname = c.Target
			b.ttlCNAME = lowest(b.ttlCNAME, c.Hdr.Ttl)
		}
	}
	a, _ := r.set(dns.TypeA)
	b.addSet(&b.a, &b.ttlA, a, net.IPv4len)
	aaaa, _ := r.set(dns.TypeAAAA)
	b.addSet(&b.aaaa, &b.ttlAAAA, aaaa, net.IPv6len)
	for _, rr := range r.SRV() {
		s := rr.(*dns.SRV)
		b.srv = append(b.srv, s)
		b.ttlSRV = lowest(b.ttlSRV, s.Hdr.Ttl)
	}
	for _, rr := range r.TXT() {
		t := rr.(*dns.TXT)
		b.txt = append(b.txt, t.Txt)
		b.ttlTXT = lowest(b.ttlTXT, t.Hdr.Ttl)
	}
	return err
}

// addSet adds the groups of set, whose addresses are size bytes each.
func (b *builder) addSet(dst *[]parsedGroup, ttl *uint32, set addrSet, size int) {
	if set == "" {
		return
	}
	var buf [8]groupView
	s := set.decode(buf[:0], size)
	*ttl = lowest(*ttl, s.ttl)
	// A part's loads are not kept in its set, only whether its own
	// cluster spilled; so the merge spills where a part did.
	b.spilled = b.spilled || s.spilled
	b.loaded = b.loaded || s.loaded
	for _, g := range s.groups {
		*dst = append(*dst, parsedGroup{cluster: b.ids.name(g.cluster), weight: g.weight, addrs: unpack(g.lb, size), clusterIPs: unpack(g.clusterIPs, size)})
	}
}

// unpack returns packed addresses of size bytes each.
func unpack(packed string, size int) []netip.Addr {
	var out []netip.Addr
	for ; packed != ""; packed = packed[size:] {
		a, _ := netip.AddrFromSlice([]byte(packed[:size]))
		out = append(out, a)
	}
	return out
}

// builder collects a name's endpoints, then builds its records with one TTL
// per record set (RFC 2181 5.2), the lowest the endpoints ask for.
type builder struct {
	name       string
	cluster    string
	defaultTTL uint32
	ids        *clusterIDs
	byDistance bool
	// spilled: a merged part's own cluster spilled; loaded: a part's
	// weights follow loads (addSet).
	spilled, loaded bool

	a, aaaa          []parsedGroup
	cname            string
	srv              []*dns.SRV
	txt              [][]string
	ttlA, ttlAAAA    uint32
	ttlCNAME, ttlSRV uint32
	ttlTXT           uint32
}

type parsedGroup struct {
	cluster    string
	weight     int
	load       *float64
	addrs      []netip.Addr
	clusterIPs []netip.Addr
}

func (b *builder) add(ep *extdnsv1alpha1.Endpoint, clusters dnsendpoint.Clusters) error {
	ttl := b.defaultTTL
	if ep.RecordTTL > 0 {
		ttl = uint32(min(ep.RecordTTL, 1<<31-1))
	}
	switch strings.ToUpper(ep.RecordType) {
	case "A":
		return b.addAddresses(&b.a, &b.ttlA, ep, clusters, ttl, netip.Addr.Is4)
	case "AAAA":
		return b.addAddresses(&b.aaaa, &b.ttlAAAA, ep, clusters, ttl, func(a netip.Addr) bool { return a.Is6() && !a.Is4In6() })
	case "CNAME":
		if len(ep.Targets) != 1 {
			return fmt.Errorf("a CNAME needs one target, has %d", len(ep.Targets))
		}
		target, err := normalize(ep.Targets[0])
		if err != nil {
			return err
		}
		if b.cname != "" && b.cname != target {
			return fmt.Errorf("a second CNAME target %s beside %s", target, b.cname)
		}
		b.cname = target
		b.ttlCNAME = lowest(b.ttlCNAME, ttl)
	case "SRV":
		var errs []error
		for _, t := range ep.Targets {
			v, err := dnsprovider.ParseSRV(t)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			target, err := normalize(v.Target)
			if err != nil {
				errs = append(errs, fmt.Errorf("SRV target %q: %w", t, err))
				continue
			}
			b.srv = append(b.srv, &dns.SRV{Priority: v.Priority, Weight: v.Weight, Port: v.Port, Target: target})
			b.ttlSRV = lowest(b.ttlSRV, ttl)
		}
		return errors.Join(errs...)
	case "TXT":
		for _, t := range ep.Targets {
			b.txt = append(b.txt, splitTXT(t))
			b.ttlTXT = lowest(b.ttlTXT, ttl)
		}
	default:
		return errors.New("record type not served")
	}
	return nil
}

func (b *builder) addAddresses(groups *[]parsedGroup, setTTL *uint32, ep *extdnsv1alpha1.Endpoint, clusters dnsendpoint.Clusters, ttl uint32, family func(netip.Addr) bool) error {
	parsed, err := clusters.Groups(ep)
	for _, pg := range parsed {
		g := parsedGroup{weight: dnsendpoint.DefaultWeight, addrs: pg.Addrs}
		if c := pg.Cluster; c != nil {
			g.cluster, g.weight, g.load = c.Name, c.Weight, c.Load
			if g.cluster == b.cluster {
				for _, a := range c.ClusterIPs {
					if family(a) {
						g.clusterIPs = append(g.clusterIPs, a)
					}
				}
			}
		}
		if len(g.addrs) > 0 {
			*groups = append(*groups, g)
			*setTTL = lowest(*setTTL, ttl)
		}
	}
	return err
}

// encode packs the name's records (Records.data); "" when it has none.
func (b *builder) encode() string {
	var sections [5][]byte // by flag bit: A, AAAA, CNAME, SRV, TXT
	if b.cname != "" {
		sections[2] = append(binary.AppendUvarint(nil, uint64(b.ttlCNAME)), b.cname...)
	} else {
		sections[0] = b.addresses(b.a, b.ttlA, net.IPv4len)
		sections[1] = b.addresses(b.aaaa, b.ttlAAAA, net.IPv6len)
		if len(b.srv) > 0 {
			s := binary.AppendUvarint(nil, uint64(b.ttlSRV))
			for _, srv := range b.srv {
				s = binary.AppendUvarint(s, uint64(srv.Priority))
				s = binary.AppendUvarint(s, uint64(srv.Weight))
				s = binary.AppendUvarint(s, uint64(srv.Port))
				s = binary.AppendUvarint(s, uint64(len(srv.Target)))
				s = append(s, srv.Target...)
			}
			sections[3] = s
		}
		if len(b.txt) > 0 {
			s := binary.AppendUvarint(nil, uint64(b.ttlTXT))
			for _, txt := range b.txt {
				s = binary.AppendUvarint(s, uint64(len(txt)))
				for _, t := range txt {
					s = binary.AppendUvarint(s, uint64(len(t)))
					s = append(s, t...)
				}
			}
			sections[4] = s
		}
	}
	out := []byte{0}
	for i, s := range sections {
		if len(s) > 0 {
			out[0] |= 1 << i
			out = binary.AppendUvarint(out, uint64(len(s)))
			out = append(out, s...)
		}
	}
	if out[0] == 0 {
		return ""
	}
	if b.byDistance {
		out[0] |= byDistance
	}
	return string(out)
}

// addresses orders a type's groups for AppendAddresses and packs them
// (addrSet), their addresses size bytes each; nil for no groups.
func (b *builder) addresses(parsed []parsedGroup, ttl uint32, size int) []byte {
	if len(parsed) == 0 {
		return nil
	}
	spilled := b.spills(parsed)
	isLocal := func(g parsedGroup) bool { return !spilled && b.isLocal(g) }
	slices.SortStableFunc(parsed, func(x, y parsedGroup) int {
		return cmp.Or(
			cmp.Compare(rank(isLocal(y)), rank(isLocal(x))),
			cmp.Compare(rank(y.weight > 0), rank(x.weight > 0)),
			strings.Compare(x.cluster, y.cluster))
	})
	local, zero := 0, len(parsed)
	for i := range parsed {
		p := &parsed[i]
		p.addrs = sortedSet(p.addrs)
		p.clusterIPs = sortedSet(p.clusterIPs)
		if isLocal(*p) {
			local = i + 1
		} else if p.weight <= 0 && zero == len(parsed) {
			zero = i
		}
	}
	local <<= 2
	if spilled {
		local |= 1
	}
	if slices.ContainsFunc(parsed, func(g parsedGroup) bool { return g.load != nil }) || b.loaded {
		local |= 2
	}
	return encodeAddrSet(ttl, parsed, local, zero, size, b.ids)
}

// spills reports whether the index's own cluster, among parsed, is too
// loaded to be answered first: more than load.Spill above the mean load of
// the other clusters of weight that publish one (load.Spills).
func (b *builder) spills(parsed []parsedGroup) bool {
	if b.spilled {
		return true
	}
	own, known := 0.0, false
	var others []float64
	for _, g := range parsed {
		switch {
		case g.load == nil || g.cluster == "":
		case b.isLocal(g):
			own, known = *g.load, true
		case g.weight > 0:
			others = append(others, *g.load)
		}
	}
	return load.Spills(own, known, others)
}

// encodeAddrSet packs groups, already in answer order (local, with its
// spill bit, and zero as decode reads them), with their TTL, each cluster as its number in ids.
func encodeAddrSet(ttl uint32, groups []parsedGroup, local, zero int, size int, ids *clusterIDs) []byte {
	n := 4 * binary.MaxVarintLen32
	for _, g := range groups {
		n += 4*binary.MaxVarintLen32 + (len(g.addrs)+len(g.clusterIPs))*size
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(ttl))
	b = binary.AppendUvarint(b, uint64(len(groups)))
	b = binary.AppendUvarint(b, uint64(local))
	b = binary.AppendUvarint(b, uint64(zero))
	for _, g := range groups {
		b = binary.AppendUvarint(b, uint64(ids.id(g.cluster)))
		b = binary.AppendUvarint(b, uint64(max(g.weight, 0)))
		b = binary.AppendUvarint(b, uint64(len(g.addrs)))
		b = binary.AppendUvarint(b, uint64(len(g.clusterIPs)))
		for _, a := range slices.Concat(g.addrs, g.clusterIPs) {
			if size == net.IPv4len {
				v := a.As4()
				b = append(b, v[:]...)
			} else {
				v := a.As16()
				b = append(b, v[:]...)
			}
		}
	}
	return b
}

// isLocal reports whether g is the index's own cluster and answered first
// there. A cluster of weight 0 (no ready replicas) is answered last even in
// its own CoreDNS.
func (b *builder) isLocal(g parsedGroup) bool {
	return g.cluster != "" && g.cluster == b.cluster && g.weight > 0
}

// rank orders true before false in a descending comparison.
func rank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sortedSet(addrs []netip.Addr) []netip.Addr {
	slices.SortFunc(addrs, netip.Addr.Compare)
	return slices.Compact(addrs)
}

// splitTXT cuts a TXT value into the 255-octet strings a TXT record holds.
// ExternalDNS quotes TXT targets; the quotes are not part of the value. A
// backslash is escaped, as miekg/dns reads escapes in TXT strings.
func splitTXT(s string) []string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	var out []string
	for {
		chunk := s[:min(len(s), 255)]
		out = append(out, strings.ReplaceAll(chunk, `\`, `\\`))
		s = s[len(chunk):]
		if s == "" {
			return out
		}
	}
}

// lowest is the lower of two TTLs, where 0 means not set yet.
func lowest(set, ttl uint32) uint32 {
	if set == 0 || ttl < set {
		return ttl
	}
	return set
}

// normalize turns a DNSEndpoint name into the index's form: lower case, fully
// qualified. Names with escapes (a dot or odd octet inside a label) are
// refused: kfed never writes them and they would need escape-aware label
// splitting everywhere.
func normalize(name string) (string, error) {
	if name == "" {
		return "", errors.New("empty DNS name")
	}
	if strings.ContainsRune(name, '\\') {
		return "", fmt.Errorf("DNS name %q has an escape", name)
	}
	fqdn := dns.Fqdn(strings.ToLower(name))
	if fqdn == "." {
		return "", errors.New("DNS name is the root")
	}
	if _, ok := dns.IsDomainName(fqdn); !ok || strings.Contains(fqdn, "..") {
		return "", fmt.Errorf("invalid DNS name %q", name)
	}
	return fqdn, nil
}
