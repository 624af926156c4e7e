package dnsprovider

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultTXTPrefix is the label put before a name to make the name of its
// ownership record. A prefix ending in a dot puts the mark one label below
// the name it guards, so it never sits beside a CNAME (which allows no other
// data at its name) and stays inside the zone even at the apex.
const DefaultTXTPrefix = "kfed-owner."

// heritage is the first field of every mark kfed writes, so that its TXT
// records are told apart from anyone else's.
const heritage = "kfed"

// Registry records which federation owns a name, the way ExternalDNS's TXT
// registry does: a TXT record at Prefix+name holding
//
//	"heritage=kfed,kfed/owner=<owner>,kfed/resource=<namespace/name>,kfed/types=A;AAAA"
//
// kfed creates, updates or deletes records at a name only when the mark there
// names its own owner, and then only records of the types the mark lists. A
// name with records but no mark belongs to someone else.
type Registry struct {
	// OwnerID identifies this federation; two federations sharing a zone must
	// use different owner IDs.
	OwnerID string
	// Prefix is put before a name to make the name of its mark.
	Prefix string
}

// NewRegistry returns a registry for owner with the given prefix (the default
// when empty). The prefix must end in a dot: a prefix that only glues to the
// first label ("kfed-") would put the apex's mark outside the zone.
func NewRegistry(owner, prefix string) (Registry, error) {
	if prefix == "" {
		prefix = DefaultTXTPrefix
	}
	prefix = strings.ToLower(prefix)
	if owner == "" {
		return Registry{}, fmt.Errorf("ownership registry: owner ID is empty")
	}
	if strings.ContainsAny(owner, ",=\" ") {
		return Registry{}, fmt.Errorf("ownership registry: owner ID %q contains one of , = \" or space", owner)
	}
	if !strings.HasSuffix(prefix, ".") || strings.HasPrefix(prefix, ".") || strings.Contains(prefix, "..") {
		return Registry{}, fmt.Errorf("ownership registry: TXT prefix %q must be one or more labels ending in a dot", prefix)
	}
	return Registry{OwnerID: owner, Prefix: prefix}, nil
}

// MarkName returns the name of the ownership record guarding name.
func (r Registry) MarkName(name string) string { return r.Prefix + name }

// GuardedName returns the name a mark at markName guards, and false if
// markName is not a mark's name.
func (r Registry) GuardedName(markName string) (string, bool) {
	rest, ok := strings.CutPrefix(markName, r.Prefix)
	return rest, ok && rest != ""
}

// Mark is the content of an ownership record.
type Mark struct {
	Owner    string
	Resource string
	// Types are the record types at the guarded name the owner manages,
	// sorted. Empty in a mark written without the field: then all managed
	// types are the owner's.
	Types []string
}

// Owns reports whether the mark covers records of type t.
func (m Mark) Owns(t string) bool {
	return len(m.Types) == 0 || slices.Contains(m.Types, t)
}

// Record returns the TXT record set carrying mark m for name.
func (r Registry) Record(name string, m Mark, ttl int64) RecordSet {
	v := "heritage=" + heritage + ",kfed/owner=" + m.Owner
	if m.Resource != "" {
		v += ",kfed/resource=" + m.Resource
	}
	if len(m.Types) > 0 {
		v += ",kfed/types=" + strings.Join(m.Types, ";")
	}
	return MustNormalize(RecordSet{Name: r.MarkName(name), Type: TypeTXT, TTL: ttl, Targets: []string{v}})
}

// ParseMark reads a mark from a TXT record set, and reports false if it is
// not one of kfed's (no heritage=kfed, or not exactly one value).
func ParseMark(rs RecordSet) (Mark, bool) {
	if rs.Type != TypeTXT || len(rs.Targets) != 1 {
		return Mark{}, false
	}
	var m Mark
	seenHeritage := false
	for _, field := range strings.Split(UnquoteTXT(rs.Targets[0]), ",") {
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			return Mark{}, false
		}
		switch k {
		case "heritage":
			seenHeritage = v == heritage
		case "kfed/owner":
			m.Owner = v
		case "kfed/resource":
			m.Resource = v
		case "kfed/types":
			if v != "" {
				m.Types = strings.Split(v, ";")
				slices.Sort(m.Types)
			}
		}
	}
	if !seenHeritage || m.Owner == "" {
		return Mark{}, false
	}
	return m, true
}
