package publish

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	"github.com/kfed-io/kfed/clusters/registry"
)

// ServiceRow is the cluster row a member's Service of type LoadBalancer
// gives (a federated Service's shard, an exported Service): the member's
// name and place, weight 1, the Service's cluster IPs and ports, and its
// load balancer's ingress IPs, a hostname ingress resolved with r (the
// first one; the error says why it did not resolve). Location, weight and
// verdict are the caller's.
func ServiceRow(ctx context.Context, r Resolver, m registry.Member, svc *corev1.Service) (dnsendpoint.Cluster, error) {
	s := dnsendpoint.Cluster{Name: m.Name, Region: m.Region, Zones: m.Zones, Weight: 1}
	for _, ip := range svc.Spec.ClusterIPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			s.ClusterIPs = append(s.ClusterIPs, a)
		}
	}
	for _, p := range svc.Spec.Ports {
		s.Ports = append(s.Ports, dnsendpoint.Port{Name: p.Name, Protocol: string(p.Protocol), Port: p.Port})
	}
	var errs []error
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(ing.IP); err == nil {
			s.Addresses = append(s.Addresses, a)
			continue
		}
		if ing.Hostname != "" && s.Hostname == "" {
			var addrs []netip.Addr
			var err error
			s.Hostname, addrs, err = ResolveHostname(ctx, r, ing.Hostname)
			if err != nil {
				errs = append(errs, fmt.Errorf("resolving ingress hostname %s of cluster %s: %w", s.Hostname, m.Name, err))
				continue
			}
			s.Addresses = append(s.Addresses, addrs...)
		}
	}
	return s, errors.Join(errs...)
}
