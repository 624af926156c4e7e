package kfed

import (
	"context"
	"net/netip"
	"strconv"

	"github.com/coredns/coredns/plugin/metadata"
	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/internal/geo"
)

// The client's place, for a plugin without cluster (an edge server answering
// resolvers on the Internet), comes from CoreDNS's geoip plugin, which puts
// the location of the query's EDNS Client Subnet (with its edns-subnet
// option) or of its source address into the request's metadata. The plugin
// never opens a database itself: finding facts about a query is geoip's job,
// acting on them is this one's, as CoreDNS separates them.
const (
	labelLatitude  = "geoip/latitude"
	labelLongitude = "geoip/longitude"
)

// clientLocation returns the client's location as geoip found it, and false
// without the metadata plugin, without geoip, or for a client its database
// does not place. It allocates nothing.
func clientLocation(ctx context.Context) (geo.Point, bool) {
	latf, lonf := metadata.ValueFunc(ctx, labelLatitude), metadata.ValueFunc(ctx, labelLongitude)
	if latf == nil || lonf == nil {
		return geo.Point{}, false
	}
	lat, lon := latf(), lonf()
	if lat == "" || lon == "" {
		return geo.Point{}, false // a network the database has no location for
	}
	var p geo.Point
	var err error
	if p.Latitude, err = strconv.ParseFloat(lat, 64); err != nil {
		return geo.Point{}, false
	}
	if p.Longitude, err = strconv.ParseFloat(lon, 64); err != nil {
		return geo.Point{}, false
	}
	return p, p.Check() == nil
}

// clientSubnet returns the query's EDNS Client Subnet option (RFC 7871), or
// nil.
func clientSubnet(r *dns.Msg) *dns.EDNS0_SUBNET {
	o := r.IsEdns0()
	if o == nil {
		return nil
	}
	for _, e := range o.Option {
		if s, ok := e.(*dns.EDNS0_SUBNET); ok {
			return s
		}
	}
	return nil
}

// subnetPrefix is the client subnet q names, for a draw of its own
// (index.Vantage.For, which says what a /0 gets); false when q is
// malformed.
func subnetPrefix(q *dns.EDNS0_SUBNET) (netip.Prefix, bool) {
	addr, ok := netip.AddrFromSlice(q.Address)
	if !ok {
		return netip.Prefix{}, false
	}
	if q.Family == 1 {
		addr = addr.Unmap()
	}
	p, err := addr.Prefix(int(q.SourceNetmask))
	return p, err == nil
}

// echoSubnet gives m, the reply to r, the ECS option of r's query q, as RFC
// 7871 7.2.1 asks of an authoritative server that tailors answers to it: the
// family, source prefix length and address as they came, and as the scope
// prefix length the prefix the answer applies to: the source prefix when the
// order of the answer depended on where the client is (the database's own
// network may be wider, but geoip does not say how wide) or when it is a
// draw among weights that follow the endpoints' loads (so that a resolver's
// clients spread as the weights say, each subnet with a draw of its own),
// 0 when every client gets the same answer (no location, one cluster,
// clusters at one place, a denial). Resolvers cache the answer per subnet
// of that length.
//
// The reply gets its own OPT record; CoreDNS's server sets its buffer size
// and DO bit from the query's as it does for any reply with one.
func echoSubnet(m *dns.Msg, q *dns.EDNS0_SUBNET, dependent bool) {
	r := new(subnetReply) // one allocation for the option, its record and their slices
	r.ecs = dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: q.Family, SourceNetmask: q.SourceNetmask, Address: q.Address}
	if dependent {
		r.ecs.SourceScope = q.SourceNetmask
	}
	r.options[0] = &r.ecs
	r.opt = dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}, Option: r.options[:]}
	r.opt.SetUDPSize(dns.MinMsgSize)
	if len(m.Extra) == 0 {
		m.Extra = r.extra[:0]
	}
	// m.Extra may be an SRV answer's shared additional section, whose
	// capacity is its length: append copies it.
	m.Extra = append(m.Extra, &r.opt)
}

// subnetReply is the OPT record a reply echoes ECS in, with what it points
// to.
type subnetReply struct {
	opt     dns.OPT
	ecs     dns.EDNS0_SUBNET
	options [1]dns.EDNS0
	extra   [1]dns.RR
}
