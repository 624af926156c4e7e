package dnsendpoint

import (
	"strings"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

// Names are the DNS names of one federated Service (docs/design.md, "DNS
// names").
type Names struct {
	federation, domain, service, namespace string
}

// NewNames returns the names of Service namespace/service in federation
// under domain.
func NewNames(federation, domain, namespace, service string) Names {
	return Names{
		federation: strings.ToLower(federation),
		domain:     strings.ToLower(strings.TrimSuffix(domain, ".")),
		service:    strings.ToLower(service),
		namespace:  strings.ToLower(namespace),
	}
}

func (n Names) base() string { return n.service + "." + n.namespace + "." + n.federation + ".svc" }

// Global is S.N.F.svc.D.
func (n Names) Global() string { return n.base() + "." + n.domain }

// Region is S.N.F.svc.R.D.
func (n Names) Region(r string) string { return n.base() + "." + r + "." + n.domain }

// Zone is S.N.F.svc.Z.R.D.
func (n Names) Zone(z, r string) string { return n.base() + "." + z + "." + r + "." + n.domain }

// Cluster is C.S.N.F.svc.D, the name SRV records target.
func (n Names) Cluster(c string) string { return c + "." + n.Global() }

// SRV is _port._proto.S.N.F.svc.D.
func (n Names) SRV(port, proto string) string {
	return "_" + port + "._" + strings.ToLower(proto) + "." + n.Global()
}

// Place reads a region or zone name back: the region of S.N.F.svc.R.D, or
// the zone and region of S.N.F.svc.Z.R.D. ok is false for every other name.
func (n Names) Place(name string) (zone, region string, ok bool) {
	rest, ok := strings.CutPrefix(name, n.base()+".")
	if !ok {
		return "", "", false
	}
	if rest, ok = strings.CutSuffix(rest, "."+n.domain); !ok {
		return "", "", false
	}
	switch parts := strings.Split(rest, "."); len(parts) {
	case 1:
		return "", parts[0], true
	case 2:
		return parts[0], parts[1], true
	}
	return "", "", false
}

// GlobalName returns the name of obj at which every cluster of a Service
// answers, S.N.F.svc.D, read from the layout rather than from a domain the
// reader may not know: the name that obj's per-cluster names
// C.S.N.F.svc.D (Names.Cluster) sit under, for a cluster C of its table.
// ok is false when obj has no per-cluster name (a Gateway's hostnames).
// The name is lower case, without a trailing dot.
func GlobalName(obj *extdnsv1alpha1.DNSEndpoint, clusters Clusters) (string, bool) {
	names := make(map[string]bool, len(obj.Spec.Endpoints))
	for i := range obj.Spec.Endpoints {
		names[strings.TrimSuffix(strings.ToLower(obj.Spec.Endpoints[i].DNSName), ".")] = true
	}
	for n := range names {
		for c := range clusters {
			if rest, ok := strings.CutPrefix(n, strings.ToLower(c)+"."); ok && names[rest] {
				return rest, true
			}
		}
	}
	return "", false
}

// The serial marker (ADR 0004): after deleting one of a federation's
// DNSEndpoints, the writer writes AnnotationLastDeleted on the federation's
// marker, a DNSEndpoint without endpoints named SerialMarker(federation) in
// kfed's namespace, so that every CoreDNS replica's serial — the highest
// resourceVersion it has seen — moves past the deletion, including one that
// starts after it.
const AnnotationLastDeleted = "kfed.io/last-deleted"

// SerialMarker is the name of federation's serial marker.
func SerialMarker(federation string) string { return "kfed-serial-" + federation }
