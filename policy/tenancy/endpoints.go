package tenancy

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

// Endpoints is the rule that says which names a DNSEndpoint may publish
// (docs/design.md, "Endpoints"), applied by every reader of DNSEndpoints: the
// CoreDNS plugin, the DNS sync, the health-check agent and the CLI.
//
//   - A federated name of namespace N is one in which the labels F.svc
//     follow the label N: S.N.F.svc.D in every form kfed publishes (global,
//     region, zone, per-cluster, SRV), and every other name at or below
//     N.F.svc. It is taken only from DNSEndpoints in namespace N.
//   - Any other name is taken only from the trusted namespaces, which the
//     operator names (kfed's own namespace by default), so that hand-written
//     records stay possible for whoever the operator trusts.
//
// A name is read the way kfed writes names: dot-separated labels, case
// ignored, a trailing dot ignored. A name that could be read as federated in
// more than one way (the labels F.svc twice, after different labels) belongs
// to no namespace, and one with an escape (a backslash) or an empty label is
// refused from everyone, since a DNS server may read it as another name than
// its text says. The domain does not enter the rule, so that readers that do
// not know it (the health-check agent) apply the same rule, and so that a
// name outside the federation's zones is not a loophole.
type Endpoints struct {
	federation string
	marker     string // ".F.svc", which follows the namespace label
	trusted    []string
}

// NewEndpoints returns federation's rule, trusting the namespaces trusted with
// names that are no namespace's federated names.
func NewEndpoints(federation string, trusted []string) Endpoints {
	t := Endpoints{federation: asciiLower(federation)}
	t.marker = "." + t.federation + ".svc"
	for _, ns := range trusted {
		if ns = strings.TrimSpace(ns); ns != "" && !slices.Contains(t.trusted, ns) {
			t.trusted = append(t.trusted, ns)
		}
	}
	return t
}

// TrustedFlagUsage is the usage of the --trusted-namespaces flag of every
// kfed binary that reads DNSEndpoints.
const TrustedFlagUsage = "comma-separated namespaces whose DNSEndpoints may publish names that are no namespace's federated names (default: kfed's own namespace); every reader of the federation's DNSEndpoints must be given the same"

// ParseNamespaces reads a comma-separated list of namespace names, as the
// --trusted-namespaces flags take it.
func ParseNamespaces(s string) ([]string, error) {
	var out []string
	for _, ns := range strings.Split(s, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			continue
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("%q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
		out = append(out, ns)
	}
	return out, nil
}

// Federation is the federation whose names the rule reads; empty for the
// zero Endpoints, which refuses every name.
func (t Endpoints) Federation() string { return t.federation }

// Trusted are the namespaces trusted with names that are no namespace's.
func (t Endpoints) Trusted() []string { return slices.Clone(t.trusted) }

// Refusal is one endpoint a DNSEndpoint may not publish, and why.
type Refusal struct {
	Name       string
	RecordType string
	Reason     string
}

func (r Refusal) String() string { return r.RecordType + " " + r.Name + ": " + r.Reason }

// Check returns nil when a DNSEndpoint in namespace may publish name, and
// otherwise why it may not.
func (t Endpoints) Check(namespace, name string) error {
	name = strings.TrimSuffix(name, ".")
	if !plain(name) {
		return fmt.Errorf("%q is not a plain host name (escapes and empty labels are refused)", name)
	}
	name = asciiLower(name)
	owner, federated := t.owner(name)
	switch {
	case federated && owner == "":
		return fmt.Errorf("%s reads as a federated name of more than one namespace, and is published from none", name)
	case federated && owner != namespace:
		return fmt.Errorf("%s is a federated name of namespace %s, published only from DNSEndpoints in %s", name, owner, owner)
	case federated:
		return nil
	case slices.Contains(t.trusted, namespace):
		return nil
	}
	return fmt.Errorf("%s is not a federated name of namespace %s, and only namespaces %s may publish other names",
		name, namespace, strings.Join(t.trustedOrNone(), ", "))
}

func (t Endpoints) trustedOrNone() []string {
	if len(t.trusted) == 0 {
		return []string{"(none)"}
	}
	return t.trusted
}

// owner reads name (lower case, without a trailing dot) as a federated name:
// federated when the labels F.svc follow some label, and owner the label
// before them when every such reading agrees on it. It searches for ".F.svc"
// rather than splitting the name into labels: every reader runs it on every
// name of every object, and this way it allocates nothing.
func (t Endpoints) owner(name string) (owner string, federated bool) {
	marker := t.marker
	for i := 0; i < len(name); {
		j := strings.Index(name[i:], marker)
		if j < 0 {
			break
		}
		j += i
		if end := j + len(marker); end == len(name) || name[end] == '.' {
			ns := name[strings.LastIndexByte(name[:j], '.')+1 : j]
			if federated && owner != ns {
				return "", true
			}
			owner, federated = ns, true
		}
		i = j + 1
	}
	return owner, federated
}

// Admit returns what a reader may take of obj: obj itself when the rule
// admits every endpoint, or else a copy without the refused endpoints (its
// endpoint list new, the rest shared with obj), and the refusals. Neither
// may be changed by the caller: obj may be a cache's.
func (t Endpoints) Admit(obj *extdnsv1alpha1.DNSEndpoint) (*extdnsv1alpha1.DNSEndpoint, []Refusal) {
	var refused []Refusal
	first := -1
	for i := range obj.Spec.Endpoints {
		e := &obj.Spec.Endpoints[i]
		if err := t.Check(obj.Namespace, e.DNSName); err != nil {
			if first < 0 {
				first = i
			}
			refused = append(refused, Refusal{Name: e.DNSName, RecordType: e.RecordType, Reason: err.Error()})
		}
	}
	if first < 0 {
		return obj, nil
	}
	out := *obj
	out.Spec.Endpoints = make([]extdnsv1alpha1.Endpoint, first, len(obj.Spec.Endpoints)-len(refused))
	copy(out.Spec.Endpoints, obj.Spec.Endpoints[:first])
	for _, e := range obj.Spec.Endpoints[first+1:] {
		if t.Check(obj.Namespace, e.DNSName) == nil {
			out.Spec.Endpoints = append(out.Spec.Endpoints, e)
		}
	}
	return &out, refused
}

// plain reports whether name has no escape and no empty label, in one pass:
// readers check every name of every object.
func plain(name string) bool {
	if name == "" || name[len(name)-1] == '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '\\':
			return false
		case '.':
			if i == 0 || name[i-1] == '.' {
				return false
			}
		}
	}
	return true
}

// asciiLower lowers A to Z only, as DNS compares names (RFC 4343): Unicode
// case mapping would make names equal that no DNS server takes as one.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
