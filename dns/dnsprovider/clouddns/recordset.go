package clouddns

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	dns "google.golang.org/api/dns/v1"

	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/internal/geo/regions"
)

// setIdentifiersLabel starts the name of the TXT record set that keeps the
// set identifiers of a weighted record set: _kfed-wrr-<type>.<name>. The
// leading underscore keeps it out of host names, and a label of its own
// below the name keeps it off a CNAME's name.
const setIdentifiersLabel = "_kfed-wrr-"

// wildcardSuffix marks the identifier record of a wildcard name, whose
// labels cannot follow the '*': *.x keeps its identifiers at
// _kfed-wrr-<type>-wildcard.x.
const wildcardSuffix = "-wildcard"

// SetIdentifiersName returns the name of the TXT record set in which the
// provider keeps the set identifiers of the weighted record set of type typ
// at name, one quoted string per item of its routing policy, in item order.
func SetIdentifiersName(name, typ string) string {
	label := setIdentifiersLabel + strings.ToLower(typ)
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		return label + wildcardSuffix + "." + rest
	}
	return label + "." + name
}

// parseSetIdentifiersName undoes SetIdentifiersName.
func parseSetIdentifiersName(n string) (name, typ string, ok bool) {
	rest, ok := strings.CutPrefix(n, setIdentifiersLabel)
	if !ok {
		return "", "", false
	}
	label, name, ok := strings.Cut(rest, ".")
	if !ok || label == "" || name == "" {
		return "", "", false
	}
	if t, wild := strings.CutSuffix(label, wildcardSuffix); wild {
		label, name = t, "*."+name
	}
	return name, strings.ToUpper(label), true
}

// wire writes a normalised target as Cloud DNS takes it: names fully
// qualified, with a trailing dot.
func wire(typ, target string) string {
	switch typ {
	case dnsprovider.TypeCNAME:
		return target + "."
	case dnsprovider.TypeSRV:
		if f := strings.Fields(target); len(f) == 4 {
			return strings.Join(f[:3], " ") + " " + f[3] + "."
		}
	}
	return target
}

func wireAll(typ string, targets []string) []string {
	out := make([]string, len(targets))
	for i, t := range targets {
		out[i] = wire(typ, t)
	}
	return out
}

// rrdatas returns every record of a record set, routing policy items
// included.
func rrdatas(r *dns.ResourceRecordSet) []string {
	switch rp := r.RoutingPolicy; {
	case rp != nil && rp.Wrr != nil:
		var out []string
		for _, it := range rp.Wrr.Items {
			out = append(out, it.Rrdatas...)
		}
		return out
	case rp != nil && rp.Geo != nil:
		var out []string
		for _, it := range rp.Geo.Items {
			out = append(out, it.Rrdatas...)
		}
		return out
	}
	return r.Rrdatas
}

// MaxRecordsPerRecordSet bounds the records of one record set, the items of
// a weighted one together: Cloud DNS's limit ("Quotas and limits").
const MaxRecordsPerRecordSet = 100

// nameType identifies a Cloud DNS record set: one per name and type.
type nameType struct{ name, typ string }

// encode returns the Cloud DNS record set holding members (kfed's record
// sets of one name and type), and for weighted ones the TXT record set of
// their identifiers. Members with a location (one per Google Cloud region,
// see adjust) are a geo policy, an item per region, and need no
// identifier record: the item's location is the set identifier. No members
// is no record set.
func encode(k nameType, members []dnsprovider.RecordSet) (raw, ids *dns.ResourceRecordSet, err error) {
	if len(members) == 0 {
		return nil, nil, nil
	}
	if len(members) == 1 && members[0].SetIdentifier == "" {
		m := members[0]
		raw = &dns.ResourceRecordSet{Name: k.name + ".", Type: k.typ, Ttl: m.TTL, Rrdatas: wireAll(k.typ, m.Targets)}
		if len(raw.Rrdatas) > MaxRecordsPerRecordSet {
			return nil, nil, fmt.Errorf("%s %s has %d records, over Cloud DNS's %d per record set: %w", k.name, k.typ, len(raw.Rrdatas), MaxRecordsPerRecordSet, dnsprovider.ErrTooLarge)
		}
		return raw, nil, nil
	}
	if members[0].Location != nil {
		return encodeGeo(k, members)
	}
	policy := &dns.RRSetRoutingPolicyWrrPolicy{}
	ttl := members[0].TTL
	names := make([]string, 0, len(members))
	records := 0
	for _, m := range members {
		if m.SetIdentifier == "" {
			return nil, nil, fmt.Errorf("%s %s: a record set without a set identifier beside weighted ones; Cloud DNS holds one record set per name and type", k.name, k.typ)
		}
		if m.Alias != nil {
			return nil, nil, fmt.Errorf("%s %s: Cloud DNS has no alias records", k.name, k.typ)
		}
		if m.Location != nil {
			return nil, nil, fmt.Errorf("%s %s: a record set placed by location beside weighted ones; Cloud DNS holds one routing policy per name and type", k.name, k.typ)
		}
		ttl = min(ttl, m.TTL)
		names = append(names, dnsprovider.QuoteTXT(m.SetIdentifier))
		records += len(m.Targets)
		policy.Items = append(policy.Items, &dns.RRSetRoutingPolicyWrrPolicyWrrPolicyItem{
			Weight: float64(m.Weight), Rrdatas: wireAll(k.typ, m.Targets),
			ForceSendFields: []string{"Weight"}, // a weight of 0 is a weight
		})
	}
	if records > MaxRecordsPerRecordSet {
		return nil, nil, fmt.Errorf("%s %s has %d records in its weighted items, over Cloud DNS's %d per record set: %w", k.name, k.typ, records, MaxRecordsPerRecordSet, dnsprovider.ErrTooLarge)
	}
	raw = &dns.ResourceRecordSet{Name: k.name + ".", Type: k.typ, Ttl: ttl, RoutingPolicy: &dns.RRSetRoutingPolicy{Wrr: policy}}
	ids = &dns.ResourceRecordSet{Name: SetIdentifiersName(k.name, k.typ) + ".", Type: dnsprovider.TypeTXT, Ttl: ttl,
		Rrdatas: []string{strings.Join(names, " ")}}
	return raw, ids, nil
}

// encodeGeo is encode for a geo policy: an item per member, its location the
// member's set identifier (a Google Cloud region). Fencing stays off: it
// matters only for Cloud DNS's own health checks, which kfed does not use
// (an unhealthy cluster leaves the policy instead), and without it a
// client whose region has no item is answered from the next nearest one.
func encodeGeo(k nameType, members []dnsprovider.RecordSet) (*dns.ResourceRecordSet, *dns.ResourceRecordSet, error) {
	policy := &dns.RRSetRoutingPolicyGeoPolicy{}
	ttl := members[0].TTL
	records := 0
	for _, m := range members {
		if m.SetIdentifier == "" || m.Location == nil {
			return nil, nil, fmt.Errorf("%s %s: a record set without a location beside ones placed by location; Cloud DNS holds one routing policy per name and type", k.name, k.typ)
		}
		ttl = min(ttl, m.TTL)
		records += len(m.Targets)
		policy.Items = append(policy.Items, &dns.RRSetRoutingPolicyGeoPolicyGeoPolicyItem{Location: m.SetIdentifier, Rrdatas: wireAll(k.typ, m.Targets)})
	}
	if records > MaxRecordsPerRecordSet {
		return nil, nil, fmt.Errorf("%s %s has %d records in its geo items, over Cloud DNS's %d per record set: %w", k.name, k.typ, records, MaxRecordsPerRecordSet, dnsprovider.ErrTooLarge)
	}
	return &dns.ResourceRecordSet{Name: k.name + ".", Type: k.typ, Ttl: ttl, RoutingPolicy: &dns.RRSetRoutingPolicy{Geo: policy}}, nil, nil
}

// decode reads a listed Cloud DNS record set into kfed's record sets: one
// for plain data, one per item of a weighted round robin policy, with the
// set identifiers kept in ids (the TXT record set at SetIdentifiersName, if
// any). Items whose identifiers are missing or do not match in number (the
// policy was edited by hand) are named wrr-0, wrr-1, … so that the planner
// replaces them. A geo policy is one record set per item, its set
// identifier the item's location (a Google Cloud region) and its location
// that region's place. Other routing policies become one record set with
// set identifier "routing-policy" and no targets: kfed never writes them,
// and lists them only so that a name holding one is seen as taken.
func decode(r *dns.ResourceRecordSet, ids *dns.ResourceRecordSet, regs regionTable) ([]dnsprovider.RecordSet, error) {
	base := dnsprovider.RecordSet{Name: r.Name, Type: r.Type, TTL: r.Ttl}
	switch {
	case r.RoutingPolicy == nil:
		base.Targets = r.Rrdatas
		n, err := dnsprovider.Normalize(base)
		return []dnsprovider.RecordSet{n}, err
	case r.RoutingPolicy.Geo != nil && r.RoutingPolicy.Wrr == nil:
		var out []dnsprovider.RecordSet
		var errs []error
		for _, it := range r.RoutingPolicy.Geo.Items {
			rs := base
			rs.SetIdentifier, rs.Location, rs.Targets = it.Location, regs.location(it.Location), it.Rrdatas
			n, err := dnsprovider.Normalize(rs)
			errs = append(errs, err)
			out = append(out, n)
		}
		return out, errors.Join(errs...)
	case r.RoutingPolicy.Wrr == nil:
		base.SetIdentifier = "routing-policy"
		n, err := dnsprovider.Normalize(base)
		return []dnsprovider.RecordSet{n}, err
	}
	items := r.RoutingPolicy.Wrr.Items
	names := setIdentifiers(ids)
	if len(names) != len(items) || hasDuplicates(names) {
		names = make([]string, len(items))
		for i := range items {
			names[i] = fmt.Sprintf("wrr-%d", i)
		}
	}
	var out []dnsprovider.RecordSet
	var errs []error
	for i, it := range items {
		rs := base
		rs.SetIdentifier, rs.Weight, rs.Targets = names[i], int64(math.Round(it.Weight)), it.Rrdatas
		n, err := dnsprovider.Normalize(rs)
		errs = append(errs, err)
		out = append(out, n)
	}
	return out, errors.Join(errs...)
}

func hasDuplicates(s []string) bool {
	sorted := slices.Sorted(slices.Values(s))
	return len(slices.Compact(sorted)) != len(s)
}

// setIdentifiers reads the quoted strings of an identifier record.
func setIdentifiers(ids *dns.ResourceRecordSet) []string {
	if ids == nil || len(ids.Rrdatas) != 1 {
		return nil
	}
	var out []string
	v := ids.Rrdatas[0]
	for i := 0; i < len(v); i++ {
		if v[i] != '"' {
			continue
		}
		var b strings.Builder
		for i++; i < len(v) && v[i] != '"'; i++ {
			if v[i] == '\\' && i+1 < len(v) {
				i++
			}
			b.WriteByte(v[i])
		}
		out = append(out, b.String())
	}
	return out
}

// adjust makes desired record sets into what Cloud DNS holds, with regs the
// regions its geo policies may name: the provider's adjusting, whose rules
// its exported method states.
func adjust(regs regionTable, desired []dnsprovider.RecordSet) []dnsprovider.RecordSet {
	var out []dnsprovider.RecordSet
	groups := map[nameType][]dnsprovider.RecordSet{}
	var order []nameType
	for _, d := range desired {
		n, err := dnsprovider.Normalize(d)
		if err != nil {
			out = append(out, d) // the planner reports it
			continue
		}
		k := nameType{n.Name, n.Type}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], n)
	}
	near := map[dnsprovider.Location]regions.Region{}
	for _, k := range order {
		g := dnsprovider.Proximity(groups[k]) // one name and type
		if slices.ContainsFunc(g, func(rs dnsprovider.RecordSet) bool { return rs.SetIdentifier == "" }) {
			if len(g) > 1 {
				g = dnsprovider.MergeSetIdentifiers(g)
			}
			out = append(out, g...)
			continue
		}
		placed := g[0].Location != nil // Proximity placed all or none
		if placed {
			g = regs.byRegion(g, near)
		}
		ttl := g[0].TTL
		zero := true
		for _, rs := range g {
			ttl = min(ttl, rs.TTL)
			zero = zero && rs.Weight == 0
		}
		for _, rs := range g {
			rs.TTL = ttl
			if zero && !placed {
				rs.Weight = 1
			}
			out = append(out, rs)
		}
	}
	return out
}
