package agent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// Targets turns the federation's DNSEndpoints into what a checker probes:
// one target per Service and cluster, the cluster's load-balancer addresses
// on the Service's health port — the port its kfed.io/health-port annotation
// names, else its first TCP port. Probe settings come from the object's
// kfed.io/health-* annotations (the services controller copies them from the
// Service, checked) over defaults. A cluster without an address or a TCP port
// to probe is not a target: it is never found unhealthy. Problems are
// returned beside the targets, which are still usable.
//
// Only what rule lets the object publish is probed: an address that is a
// target of an admitted A or AAAA endpoint, or every address of a cluster
// whose load-balancer hostname an admitted CNAME targets. A DNSEndpoint that
// names another namespace's Service so cannot make every checker probe an
// address of its choosing.
func Targets(rule tenancy.Endpoints, eps []extdnsv1alpha1.DNSEndpoint, defaults healthcheck.Spec) ([]healthcheck.Target, []error) {
	var out []healthcheck.Target
	var errs []error
	for i := range eps {
		ep, refused := rule.Admit(&eps[i])
		if len(refused) > 0 {
			errs = append(errs, fmt.Errorf("DNSEndpoint %s/%s: not probing what it may not publish: %v", ep.Namespace, ep.Name, refused))
		}
		published := publishedTargets(ep)
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
			if port == 0 {
				continue
			}
			t := healthcheck.Target{Key: kfedv1alpha1.EndpointKey(ep.Namespace, ep.Name, c.Name), Cluster: c.Name, Spec: spec}
			for _, a := range c.Addresses {
				if published[a.String()] || (c.Hostname != "" && published[strings.ToLower(strings.TrimSuffix(c.Hostname, "."))]) {
					t.Addrs = append(t.Addrs, netip.AddrPortFrom(a, port))
				}
			}
			if len(t.Addrs) == 0 {
				continue
			}
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b healthcheck.Target) int { return strings.Compare(a.Key, b.Key) })
	return out, errs
}

// publishedTargets are the addresses ep's A and AAAA endpoints publish and
// the names its CNAMEs target (lower case, without a trailing dot).
func publishedTargets(ep *extdnsv1alpha1.DNSEndpoint) map[string]bool {
	out := map[string]bool{}
	for _, e := range ep.Spec.Endpoints {
		for _, t := range e.Targets {
			switch strings.ToUpper(e.RecordType) {
			case "A", "AAAA":
				if a, err := netip.ParseAddr(t); err == nil {
					out[a.Unmap().String()] = true
				}
			case "CNAME":
				out[strings.ToLower(strings.TrimSuffix(t, "."))] = true
			}
		}
	}
	return out
}

func firstTCPPort(ports []dnsendpoint.Port) uint16 {
	for _, p := range ports {
		if (p.Protocol == "" || strings.EqualFold(p.Protocol, "TCP")) && p.Port > 0 && p.Port < 1<<16 {
			return uint16(p.Port)
		}
	}
	return 0
}

// retarget gives the engine what the DNSEndpoints say to probe and the
// fleet assigns this checker, or nothing while this checker's cluster has
// health checking off.
func (a *agent) retarget(ctx context.Context, assign *assignment) error {
	var cl kfedv1alpha1.Cluster
	err := a.cache.Get(ctx, client.ObjectKey{Name: a.o.Cluster}, &cl)
	if err == nil && !cl.HealthCheckEnabled() {
		if !a.off.Swap(true) {
			a.o.Logger.Info("health checking is off in this cluster: retiring", "cluster", a.o.Cluster)
		}
		return errors.Join(a.engine.Set(nil), a.retire(ctx))
	}
	if a.off.Swap(false) {
		a.o.Logger.Info("health checking is on in this cluster again", "cluster", a.o.Cluster)
	}
	if err == nil {
		// The region is the checker's failure domain in the assignment; a
		// Cluster that cannot be read keeps the one read last.
		region, _ := cl.Location()
		a.setRegion(region)
	}
	var list extdnsv1alpha1.DNSEndpointList
	if err := a.cache.List(ctx, &list); err != nil {
		return err
	}
	targets, errs := Targets(a.tenancy(), list.Items, a.o.Defaults)
	fleet, err := a.fleet(ctx)
	if err != nil {
		// Probing everything errs on the safe side: the controller counts
		// only the panel's ballots, and this checker's among them.
		errs = append(errs, fmt.Errorf("%w; probing every endpoint", err))
	} else {
		targets = a.assigned(assign, fleet, targets)
	}
	errs = append(errs, a.engine.Set(targets))
	a.markDirty()
	return errors.Join(errs...)
}

// tenancy is the rule deciding what the agent may probe.
func (a *agent) tenancy() tenancy.Endpoints {
	trusted := a.o.TrustedNamespaces
	if len(trusted) == 0 {
		trusted = []string{a.o.Namespace}
	}
	return tenancy.NewEndpoints(a.o.Federation, trusted)
}
