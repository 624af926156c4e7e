package agent

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
)

// EndpointKey names one cluster's endpoint of a Service as reports carry it:
// "namespace/service/cluster".
func EndpointKey(namespace, service, cluster string) string {
	return namespace + "/" + service + "/" + cluster
}

// Targets turns the federation's DNSEndpoints into what a checker probes:
// one target per Service and cluster, the cluster's load-balancer addresses
// on the Service's health port — the port its kfed.io/health-port annotation
// names, else its first TCP port. Probe settings come from the object's
// kfed.io/health-* annotations (the services controller copies them from the
// Service, checked) over defaults. A cluster without an address or a TCP port
// to probe is not a target: it is never found unhealthy. Problems are
// returned beside the targets, which are still usable.
func Targets(eps []extdnsv1alpha1.DNSEndpoint, defaults healthcheck.Spec) ([]healthcheck.Target, []error) {
	var out []healthcheck.Target
	var errs []error
	for i := range eps {
		ep := &eps[i]
		spec, err := healthcheck.ParseAnnotations(ep.Annotations, defaults)
		if err != nil {
			// The controller checks these before copying them; an agent whose
			// own defaults make them invalid probes with its defaults.
			errs = append(errs, fmt.Errorf("DNSEndpoint %s/%s: %w; probing with the defaults", ep.Namespace, ep.Name, err))
			spec = defaults
		}
		clusters, err := dnsendpoint.ReadClusters(ep)
		if err != nil {
			errs = append(errs, fmt.Errorf("DNSEndpoint %s/%s: %w", ep.Namespace, ep.Name, err))
		}
		for _, c := range clusters {
			port := spec.Port
			if port == 0 {
				port = firstTCPPort(c.Ports)
			}
			if port == 0 || len(c.Addresses) == 0 {
				continue
			}
			t := healthcheck.Target{Key: EndpointKey(ep.Namespace, ep.Name, c.Name), Cluster: c.Name, Spec: spec}
			for _, a := range c.Addresses {
				t.Addrs = append(t.Addrs, netip.AddrPortFrom(a, port))
			}
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b healthcheck.Target) int { return strings.Compare(a.Key, b.Key) })
	return out, errs
}

func firstTCPPort(ports []dnsendpoint.Port) uint16 {
	for _, p := range ports {
		if (p.Protocol == "" || strings.EqualFold(p.Protocol, "TCP")) && p.Port > 0 && p.Port < 1<<16 {
			return uint16(p.Port)
		}
	}
	return 0
}
