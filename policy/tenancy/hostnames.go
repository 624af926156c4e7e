// Package hostnames is the tenancy rule for the hostnames users choose
// (a Gateway's listener or route hostnames, an Ingress's rules), beside the
// rule for DNSEndpoints (dnsendpoint.Tenancy): which of them kfed may
// publish, and for which namespace.
//
//   - A hostname is published only when it lies in one of the federation's
//     zones, is no wildcard, and is a plain host name.
//   - An operator may reserve DNS suffixes for some namespaces
//     (kfed-controller's --hostname-namespaces); the longest reserved suffix
//     a hostname ends in decides, and a hostname under no reserved suffix may
//     be claimed from any namespace.
//   - A hostname is held by one claim: the oldest federated object that
//     claims it (by creation time, then namespace and name). Every other
//     claim, from another namespace or from another object of the same one,
//     is refused while the holder keeps it.
//
// The rule is pure: the gateways controller gathers the claims and asks it.
package tenancy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Claim is one federated object's claim on a hostname.
type Claim struct {
	Hostname string
	// Namespace, Kind and Name say which object claims it.
	Namespace, Kind, Name string
	// Created is the object's creation time: the oldest claim holds.
	Created time.Time
}

// Object is the claiming object as users read it: "Gateway shop/front".
func (c Claim) Object() string { return c.Kind + " " + c.Namespace + "/" + c.Name }

// Reservation reserves a DNS suffix for some namespaces.
type Reservation struct {
	Suffix     string
	Namespaces []string
}

// Hostnames says which hostnames a namespace may claim.
type Hostnames struct {
	zones    []string
	reserved []Reservation
}

// NewHostnames returns the rule for a federation whose zones are zones, with the
// operator's reservations.
func NewHostnames(zones []string, reserved []Reservation) Hostnames {
	r := Hostnames{}
	for _, z := range zones {
		if z = normal(z); z != "" {
			r.zones = append(r.zones, z)
		}
	}
	for _, res := range reserved {
		r.reserved = append(r.reserved, Reservation{Suffix: normal(res.Suffix), Namespaces: slices.Clone(res.Namespaces)})
	}
	// Longest suffix first: the most specific reservation decides.
	slices.SortStableFunc(r.reserved, func(a, b Reservation) int { return cmp.Compare(len(b.Suffix), len(a.Suffix)) })
	return r
}

// HostnamesFlagUsage is the usage of kfed-controller's --hostname-namespaces flag.
const HostnamesFlagUsage = "reserve DNS suffixes for namespaces: SUFFIX=NS[,NS...] entries separated by ';' (e.g. 'shop.example.com=shop;example.com=web,ops'); a Gateway or Ingress hostname under a reserved suffix (the longest that matches) may be claimed only from its namespaces, any other from every namespace"

// ParseReservations reads the --hostname-namespaces flag.
func ParseReservations(s string) ([]Reservation, error) {
	var out []Reservation
	for _, entry := range strings.Split(s, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		suffix, list, ok := strings.Cut(entry, "=")
		suffix = normal(suffix)
		if !ok || suffix == "" {
			return nil, fmt.Errorf("%q is not SUFFIX=NAMESPACE[,NAMESPACE...]", entry)
		}
		if msgs := validation.IsDNS1123Subdomain(suffix); len(msgs) > 0 {
			return nil, fmt.Errorf("%q is not a DNS suffix: %s", suffix, msgs[0])
		}
		res := Reservation{Suffix: suffix}
		for _, ns := range strings.Split(list, ",") {
			if ns = strings.TrimSpace(ns); ns == "" {
				continue
			}
			if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
				return nil, fmt.Errorf("suffix %s: %q is not a namespace name: %s", suffix, ns, msgs[0])
			}
			res.Namespaces = append(res.Namespaces, ns)
		}
		if len(res.Namespaces) == 0 {
			return nil, fmt.Errorf("suffix %s names no namespace", suffix)
		}
		out = append(out, res)
	}
	return out, nil
}

// Check returns nil when namespace may claim hostname, and otherwise why
// not: a wildcard, a name that is not a plain host name, one outside the
// zones, or one under a suffix reserved for other namespaces.
func (r Hostnames) Check(namespace, hostname string) error {
	h := normal(hostname)
	switch {
	case strings.Contains(h, "*"):
		return fmt.Errorf("%s is a wildcard; kfed publishes exact hostnames only", hostname)
	case len(validation.IsDNS1123Subdomain(h)) > 0:
		return fmt.Errorf("%q is not a plain host name", hostname)
	}
	if !slices.ContainsFunc(r.zones, func(z string) bool { return under(h, z) }) {
		return fmt.Errorf("%s is outside the federation's zones (%s)", h, strings.Join(r.zones, ", "))
	}
	for _, res := range r.reserved {
		if !under(h, res.Suffix) {
			continue
		}
		if slices.Contains(res.Namespaces, namespace) {
			return nil
		}
		return fmt.Errorf("%s is under %s, which the operator reserved for namespaces %s", h, res.Suffix, strings.Join(res.Namespaces, ", "))
	}
	return nil
}

// Holders returns, for each hostname claimed, the claim that holds it: the
// oldest claim the rule admits. Claims the rule refuses hold nothing.
func (r Hostnames) Holders(claims []Claim) map[string]Claim {
	sorted := slices.Clone(claims)
	slices.SortStableFunc(sorted, func(a, b Claim) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Namespace, b.Namespace),
			strings.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name))
	})
	out := map[string]Claim{}
	for _, c := range sorted {
		h := normal(c.Hostname)
		if _, held := out[h]; held || r.Check(c.Namespace, h) != nil {
			continue
		}
		c.Hostname = h
		out[h] = c
	}
	return out
}

// Verdict is what the rule says of one claim.
type Verdict struct {
	Hostname string
	// Reason is empty when the claim holds its hostname, and otherwise why
	// it is not published.
	Reason string
}

// Judge says, for each of one object's claims, whether it holds its hostname
// among all claims (which include the object's own), in the order given.
func (r Hostnames) Judge(own []Claim, holders map[string]Claim) []Verdict {
	var out []Verdict
	for _, c := range own {
		h := normal(c.Hostname)
		v := Verdict{Hostname: h}
		if err := r.Check(c.Namespace, h); err != nil {
			v.Reason = err.Error()
		} else if holder, ok := holders[h]; ok && (holder.Namespace != c.Namespace || holder.Kind != c.Kind || holder.Name != c.Name) {
			if holder.Namespace != c.Namespace {
				v.Reason = fmt.Sprintf("%s is held by namespace %s (%s claimed it first)", h, holder.Namespace, holder.Object())
			} else {
				v.Reason = fmt.Sprintf("%s is published by %s, which claimed it first", h, holder.Object())
			}
		}
		out = append(out, v)
	}
	return out
}

// under reports whether name is suffix or lies below it.
func under(name, suffix string) bool {
	return name == suffix || strings.HasSuffix(name, "."+suffix)
}

// normal is a name as DNS compares it: A to Z lowered (RFC 4343; Unicode
// case mapping would make names equal that no DNS server takes as one), no
// trailing dot.
func normal(name string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, strings.TrimSuffix(strings.TrimSpace(name), "."))
}
