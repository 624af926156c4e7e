// Package dnsprovider is kfed's provider-neutral model of published DNS:
// record sets, their normal form, the TXT ownership registry, the plan that
// turns a zone's current records into the desired ones, and the narrow
// interface (zones → record sets → change set → apply) that the Route53,
// Cloud DNS and RFC 2136 providers below it implement.
//
// It imports nothing of kfed's: the conversion from DNSEndpoint objects lives
// with the sync controller, so the record model can be tested without
// Kubernetes.
package dnsprovider

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// DefaultTTL is the TTL a record set gets when it names none: 30 s, short
// enough that clients move off a lost cluster quickly (k8gb's default).
const DefaultTTL = 30

// Record types kfed publishes.
const (
	TypeA     = "A"
	TypeAAAA  = "AAAA"
	TypeCNAME = "CNAME"
	TypeSRV   = "SRV"
	TypeTXT   = "TXT"
)

// IsManagedType reports whether records of type t take part in plans.
// Records of other types (MX, NS, SOA, …) in a zone are never read into a
// plan and so never touched.
func IsManagedType(t string) bool {
	switch t {
	case TypeA, TypeAAAA, TypeCNAME, TypeSRV, TypeTXT:
		return true
	}
	return false
}

// RecordSet is one DNS record set as kfed sees it, whatever the provider: the
// records sharing a name and type, and, for weighted or proximity routing, a
// set identifier.
type RecordSet struct {
	// Name is fully qualified, lower case, without a trailing dot.
	Name string
	// Type is A, AAAA, CNAME, SRV or TXT.
	Type string
	// TTL in seconds. Alias record sets have none (0).
	TTL int64
	// Targets are the record values in zone-file form: addresses for A and
	// AAAA, a name for CNAME, "priority weight port target" for SRV, quoted
	// strings for TXT.
	Targets []string
	// SetIdentifier tells apart record sets with the same name and type that
	// a weighted policy chooses between; kfed uses the member cluster's name.
	// Empty for a plain record set.
	SetIdentifier string
	// Weight is the relative weight of a record set with a SetIdentifier.
	Weight int64
	// Location, on a record set with a SetIdentifier, makes it one of a
	// proximity policy instead of a weighted one: a provider with geo
	// routing answers each client with the record set nearest to it (see
	// Proximity). A provider without it publishes the record set as if it
	// were weighted. Nil for weighted and plain record sets.
	Location *Location
	// Alias, when set, makes this an alias record set (Route53): the
	// provider answers with the addresses of Alias.Name and Targets is empty.
	Alias *Alias

	// Hostname is the load-balancer name the targets were resolved from, if
	// any. A provider with alias records may publish an alias to it instead
	// (see Provider.Adjust). It is a hint, not part of the record's value.
	Hostname string
	// Resource is the object that asked for this record set (namespace/name
	// of its DNSEndpoint), written into the ownership mark. Not part of the
	// record's value.
	Resource string
}

// Alias is the target of an alias record set.
type Alias struct {
	// Name is the DNS name the alias resolves, lower case, no trailing dot.
	Name string
	// ZoneID is the provider's identifier of the hosted zone of Name (for an
	// AWS load balancer, the canonical hosted zone of its region).
	ZoneID string
	// EvaluateTargetHealth lets the provider skip an unhealthy target.
	EvaluateTargetHealth bool
}

// Location is a place in decimal degrees: latitude -90 (south) to 90
// (north), longitude -180 (west) to 180 (east).
type Location struct {
	Latitude, Longitude float64
}

// String is "LAT,LON".
func (l Location) String() string {
	return strconv.FormatFloat(l.Latitude, 'f', -1, 64) + "," + strconv.FormatFloat(l.Longitude, 'f', -1, 64)
}

// Key identifies a record set within a zone.
type Key struct {
	Name, Type, SetIdentifier string
}

// String formats the key as name/type[/set].
func (k Key) String() string {
	if k.SetIdentifier == "" {
		return k.Name + "/" + k.Type
	}
	return k.Name + "/" + k.Type + "/" + k.SetIdentifier
}

// Key returns the record set's identity.
func (r RecordSet) Key() Key { return Key{r.Name, r.Type, r.SetIdentifier} }

// Equal reports whether two normalised record sets have the same identity and
// value. Hostname and Resource, which are hints, are not compared.
func (r RecordSet) Equal(o RecordSet) bool {
	if r.Key() != o.Key() || r.TTL != o.TTL || r.Weight != o.Weight || !slices.Equal(r.Targets, o.Targets) {
		return false
	}
	if (r.Location == nil) != (o.Location == nil) || (r.Location != nil && *r.Location != *o.Location) {
		return false
	}
	if (r.Alias == nil) != (o.Alias == nil) {
		return false
	}
	return r.Alias == nil || *r.Alias == *o.Alias
}

// String formats the record set on one line, like a zone file entry.
func (r RecordSet) String() string {
	var b strings.Builder
	b.WriteString(r.Name)
	switch {
	case r.SetIdentifier != "" && r.Location != nil:
		fmt.Fprintf(&b, " [set=%s near=%s]", r.SetIdentifier, r.Location)
	case r.SetIdentifier != "":
		fmt.Fprintf(&b, " [set=%s weight=%d]", r.SetIdentifier, r.Weight)
	}
	fmt.Fprintf(&b, " %d %s", r.TTL, r.Type)
	if r.Alias != nil {
		fmt.Fprintf(&b, " ALIAS %s (zone %s)", r.Alias.Name, r.Alias.ZoneID)
	}
	for _, t := range r.Targets {
		b.WriteString(" ")
		b.WriteString(t)
	}
	return b.String()
}

// Normalize returns r in normal form, so that equal records compare equal
// however a user or a provider spelled them: names lower case without a
// trailing dot, type upper case, the default TTL when none is given (alias
// record sets keep none), addresses in canonical form, targets sorted and
// without duplicates, TXT values quoted. Weight is 0 and Location nil unless
// the record set has a set identifier. It returns an error for a target that
// is not valid for the type, or a location off the Earth.
func Normalize(r RecordSet) (RecordSet, error) {
	out := r
	out.Name = NormalizeName(r.Name)
	out.Type = strings.ToUpper(r.Type)
	out.Hostname = NormalizeName(r.Hostname)
	if out.SetIdentifier == "" {
		out.Weight, out.Location = 0, nil
	}
	if l := out.Location; l != nil {
		if !(l.Latitude >= -90 && l.Latitude <= 90 && l.Longitude >= -180 && l.Longitude <= 180) {
			return RecordSet{}, fmt.Errorf("normalising %s %s: location %s is not on the Earth", out.Name, out.Type, l)
		}
		c := *l
		out.Location = &c
	}
	if r.Alias != nil {
		a := *r.Alias
		a.Name = NormalizeName(a.Name)
		out.Alias = &a
		out.TTL = 0
		out.Targets = nil
		return out, nil
	}
	if out.TTL <= 0 {
		out.TTL = DefaultTTL
	}
	targets := make([]string, 0, len(r.Targets))
	for _, t := range r.Targets {
		n, err := normalizeTarget(out.Type, t)
		if err != nil {
			return RecordSet{}, fmt.Errorf("normalising %s %s: %w", out.Name, out.Type, err)
		}
		targets = append(targets, n)
	}
	slices.Sort(targets)
	out.Targets = slices.Compact(targets)
	return out, nil
}

// MustNormalize is Normalize for record sets known to be valid (tests,
// literals); it panics on error.
func MustNormalize(r RecordSet) RecordSet {
	n, err := Normalize(r)
	if err != nil {
		panic(err)
	}
	return n
}

// NormalizeName lower-cases a DNS name and drops its trailing dot.
func NormalizeName(name string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
}

func normalizeTarget(typ, t string) (string, error) {
	t = strings.TrimSpace(t)
	switch typ {
	case TypeA, TypeAAAA:
		ip, err := netip.ParseAddr(t)
		if err != nil {
			return "", fmt.Errorf("target %q is not an address: %w", t, err)
		}
		if typ == TypeA && !ip.Unmap().Is4() {
			return "", fmt.Errorf("target %q is not an IPv4 address", t)
		}
		if typ == TypeAAAA && !ip.Is6() {
			return "", fmt.Errorf("target %q is not an IPv6 address", t)
		}
		if typ == TypeA {
			ip = ip.Unmap()
		}
		return ip.String(), nil
	case TypeCNAME:
		if t == "" {
			return "", fmt.Errorf("empty CNAME target")
		}
		return NormalizeName(t), nil
	case TypeSRV:
		v, err := ParseSRV(t)
		if err != nil {
			return "", err
		}
		return strings.TrimSuffix(v.String(), "."), nil
	case TypeTXT:
		return QuoteTXT(t), nil
	default:
		return t, nil
	}
}

// QuoteTXT returns a TXT value in zone-file form: one or more quoted
// character strings. A value already quoted is kept; an unquoted one becomes
// one quoted string, with '"' and '\' escaped, split into strings of at most
// 255 bytes as the DNS requires.
func QuoteTXT(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return v
	}
	var parts []string
	for len(v) > 0 {
		n := min(len(v), 255)
		parts = append(parts, quoteOne(v[:n]))
		v = v[n:]
	}
	if len(parts) == 0 {
		return `""`
	}
	return strings.Join(parts, " ")
}

func quoteOne(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// UnquoteTXT joins the character strings of a quoted TXT value into one
// string, undoing QuoteTXT.
func UnquoteTXT(v string) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			in = !in
		case c == '\\' && in && i+1 < len(v):
			i++
			b.WriteByte(v[i])
		case in:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// InZone reports whether name is zone or below it.
func InZone(name, zone string) bool {
	name, zone = NormalizeName(name), NormalizeName(zone)
	return name == zone || strings.HasSuffix(name, "."+zone)
}

// ZoneFor returns the most specific of zones that name lies in, and false if
// none does.
func ZoneFor(name string, zones []string) (string, bool) {
	best, found := "", false
	for _, z := range zones {
		if InZone(name, z) && (!found || len(NormalizeName(z)) > len(best)) {
			best, found = NormalizeName(z), true
		}
	}
	return best, found
}
