package services

// Fixtures shared by the tests of decide, as package publish's records tests have them.

import (
	"net/netip"

	"strings"
	"testing"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

func ips(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// render shows records one a line, "name TYPE [cluster] targets", with the
// addresses of each name attributed to clusters through the cluster table,
// as every reader of the DNSEndpoint sees them.
func render(t *testing.T, eps []extdnsv1alpha1.Endpoint, table []dnsendpoint.Cluster) []string {
	t.Helper()
	obj := &extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps}}
	dnsendpoint.SetClusters(obj, table)
	clusters, err := dnsendpoint.ReadClusters(obj)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range eps {
		e := &eps[i]
		if e.SetIdentifier != "" || len(e.ProviderSpecific) > 0 {
			t.Errorf("%s %s has a set identifier or provider-specific properties, which ExternalDNS cannot read back", e.DNSName, e.RecordType)
		}
		if e.RecordType != "A" && e.RecordType != "AAAA" {
			out = append(out, e.DNSName+" "+e.RecordType+" "+strings.Join(e.Targets, ","))
			continue
		}
		groups, err := clusters.Groups(e)
		if err != nil {
			t.Errorf("%s %s: %v", e.DNSName, e.RecordType, err)
		}
		for _, g := range groups {
			line := e.DNSName + " " + e.RecordType
			if g.Cluster != nil {
				line += " [" + g.Cluster.Name + "]"
			}
			var addrs []string
			for _, a := range g.Addrs {
				addrs = append(addrs, a.String())
			}
			out = append(out, line+" "+strings.Join(addrs, ","))
		}
	}
	return out
}

var (
	web   = dnsendpoint.Port{Name: "web", Protocol: "TCP", Port: 80}
	east1 = dnsendpoint.Cluster{Name: "c1", Region: "us-east1", Zones: []string{"us-east1-b"}, Addresses: ips("127.1.0.1"), Weight: 1, Ports: []dnsendpoint.Port{web}}
	east2 = dnsendpoint.Cluster{Name: "c2", Region: "us-east1", Zones: []string{"us-east1-c"}, Addresses: ips("127.2.0.1"), Weight: 1, Ports: []dnsendpoint.Port{web}}
	eu    = dnsendpoint.Cluster{Name: "c3", Region: "europe-west1", Zones: []string{"europe-west1-b"}, Addresses: ips("127.3.0.1"), Weight: 2, Ports: []dnsendpoint.Port{web}}
	// all places of the three clusters above
	regions = []string{"us-east1", "europe-west1"}
	zones   = []string{"us-east1-b/us-east1", "us-east1-c/us-east1", "europe-west1-b/europe-west1"}
)
