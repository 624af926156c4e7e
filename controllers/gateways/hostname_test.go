package gateways

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/kfed-io/kfed/dns/publish"

	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// fakeResolver answers from a table, and fails for names it lacks.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func TestMemberAddresses(t *testing.T) {
	typ := func(t gatewayv1.AddressType) *gatewayv1.AddressType { return &t }
	for _, tt := range []struct {
		name string
		got  memberCopy
		want memberCopy
	}{
		{"Gateway: IPs, untyped ones too, and the first hostname; an implementation's own type is not read",
			addressesOf([]gatewayv1.GatewayStatusAddress{
				{Value: "127.1.200.1"}, {Type: typ(gatewayv1.IPAddressType), Value: "::1"},
				{Type: typ(gatewayv1.HostnameAddressType), Value: "nlb-1.elb.us-east-1.amazonaws.com"},
				{Type: typ(gatewayv1.HostnameAddressType), Value: "nlb-2.elb.us-east-1.amazonaws.com"},
				{Type: typ("example.com/pool"), Value: "127.9.9.9"},
			}),
			memberCopy{addrs: addrs("127.1.200.1", "::1"), hostname: "nlb-1.elb.us-east-1.amazonaws.com"}},
		{"Gateway: a hostname alone serves",
			addressesOf([]gatewayv1.GatewayStatusAddress{{Type: typ(gatewayv1.HostnameAddressType), Value: "nlb-1.example.net"}}),
			memberCopy{hostname: "nlb-1.example.net"}},
		{"Gateway: no address yet is waiting", addressesOf(nil), memberCopy{outcome: publish.Waiting}},
		{"Ingress: IPs and the first hostname",
			ingressAddresses([]networkingv1.IngressLoadBalancerIngress{{IP: "127.1.200.1"}, {Hostname: "lb-1.example.net"}, {Hostname: "lb-2.example.net"}}),
			memberCopy{addrs: addrs("127.1.200.1"), hostname: "lb-1.example.net"}},
		{"Ingress: no address yet is waiting", ingressAddresses(nil), memberCopy{outcome: publish.Waiting}},
	} {
		if tt.got.outcome != tt.want.outcome || tt.got.hostname != tt.want.hostname || !slices.Equal(tt.got.addrs, tt.want.addrs) {
			t.Errorf("%s: %+v, want %+v", tt.name, tt.got, tt.want)
		}
	}
}

// TestResolveHostnameAddress: a copy's hostname address is resolved every
// sync, as a Service's load balancer name; a failure is told, not hidden.
func TestResolveHostnameAddress(t *testing.T) {
	r := &reconciler{Controller: &Controller{Resolver: fakeResolver{"nlb-1.example.net": addrs("127.7.0.2", "127.7.0.1")}}}
	mc := resolve(context.Background(), r.Resolver, "aws", memberCopy{hostname: "NLB-1.example.net."})
	if mc.outcome != publish.Serving || mc.hostname != "nlb-1.example.net" || !slices.Equal(mc.addrs, addrs("127.7.0.2", "127.7.0.1")) {
		t.Errorf("resolved copy %+v", mc)
	}
	mc = resolve(context.Background(), r.Resolver, "aws", memberCopy{hostname: "nlb-9.example.net"})
	if mc.outcome != publish.Unresolved || !strings.Contains(mc.problem, "resolving the address nlb-9.example.net of cluster aws") {
		t.Errorf("unresolved copy %+v", mc)
	}
}

func TestDecideHostnameAddresses(t *testing.T) {
	shop := []tenancy.Verdict{{Hostname: "shop.example.com"}}
	placed := joined(cluster("aws", ""), cluster("gcp", ""))
	nlb := "nlb-1.elb.us-east-1.amazonaws.com"
	for _, tt := range []struct {
		name      string
		members   map[string]memberCopy
		previous  *extdnsv1alpha1.DNSEndpoint
		records   []string
		hostname  string // the aws row's
		problem   bool
		hostnames []string
	}{
		{
			name: "a hostname address is published as what it resolved to, the name kept in the table for aliases",
			members: map[string]memberCopy{
				"aws": {outcome: publish.Serving, hostname: nlb, addrs: addrs("127.7.0.1")},
				"gcp": {outcome: publish.Serving, addrs: addrs("127.2.200.1")},
			},
			records: []string{"shop.example.com A 127.2.200.1,127.7.0.1"}, hostname: nlb, hostnames: []string{nlb},
		},
		{
			name: "the sole cluster's hostname is still published as addresses (the hostname may be an apex)",
			members: map[string]memberCopy{
				"aws": {outcome: publish.Serving, hostname: nlb, addrs: addrs("127.7.0.1")},
				"gcp": {outcome: publish.Waiting},
			},
			records: []string{"shop.example.com A 127.7.0.1"}, hostname: nlb, hostnames: []string{nlb},
		},
		{
			name: "a hostname that did not resolve keeps the addresses it had, and says so",
			members: map[string]memberCopy{
				"aws": {outcome: publish.Unresolved, hostname: nlb, problem: "resolving the address"},
				"gcp": {outcome: publish.Serving, addrs: addrs("127.2.200.1")},
			},
			previous: publishedRows(dnsendpoint.Cluster{Name: "aws", Hostname: nlb, Addresses: addrs("127.7.0.9")}),
			records:  []string{"shop.example.com A 127.2.200.1,127.7.0.9"}, hostname: nlb, problem: true, hostnames: []string{nlb},
		},
		{
			name: "a hostname that never resolved publishes nothing for its cluster",
			members: map[string]memberCopy{
				"aws": {outcome: publish.Unresolved, hostname: nlb, problem: "resolving the address"},
				"gcp": {outcome: publish.Serving, addrs: addrs("127.2.200.1")},
			},
			records: []string{"shop.example.com A 127.2.200.1"}, problem: true,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := decide(observation{verdicts: shop, placed: placed, members: tt.members, endpoint: tt.previous, ttl: 30})
			if got := records(d.endpoints); !slices.Equal(got, tt.records) {
				t.Errorf("records %q, want %q", got, tt.records)
			}
			var row *dnsendpoint.Cluster
			for i := range d.clusters {
				if d.clusters[i].Name == "aws" {
					row = &d.clusters[i]
				}
			}
			if (row == nil) != (tt.hostname == "") || (row != nil && row.Hostname != tt.hostname) {
				t.Errorf("aws row %+v, want hostname %q", row, tt.hostname)
			}
			if (len(d.problems) > 0) != tt.problem {
				t.Errorf("problems %q", d.problems)
			}
			if !slices.Equal(d.hostnames, tt.hostnames) || slices.Contains(d.statusAddrs, netip.MustParseAddr("127.7.0.1")) {
				t.Errorf("status: addresses %v and names %v, want the names %v and no address of theirs", d.statusAddrs, d.hostnames, tt.hostnames)
			}
		})
	}
}
