package kfed

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

// fleetEndpoint is Service svc's DNSEndpoint placed in n clusters, three to
// a region, a zone each, in the layout the services controller writes
// (ADR 0003): the global name with every cluster's address, a name per
// cluster, region and zone, SRV over the cluster names, and the cluster
// table.
func fleetEndpoint(svc string, n int) extdnsv1alpha1.DNSEndpoint {
	names := dnsendpoint.NewNames("bench", "kfed.test", "bench", svc)
	ep := extdnsv1alpha1.DNSEndpoint{
		TypeMeta: metav1.TypeMeta{APIVersion: "externaldns.k8s.io/v1alpha1", Kind: "DNSEndpoint"},
		ObjectMeta: metav1.ObjectMeta{
			Name: svc, Namespace: "bench", ResourceVersion: "1000", UID: "0b6e2a4c-1d7e-4b7a-9a8e-3f6f0c2b9d1e", Generation: 1,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "kfed", "kfed.io/federation": "bench"},
			Annotations: map[string]string{"kfed.io/origin": "bench/" + svc},
		},
	}
	a := func(name string, targets ...string) {
		ep.Spec.Endpoints = append(ep.Spec.Endpoints, extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "A", Targets: targets, RecordTTL: 30})
	}
	var rows []dnsendpoint.Cluster
	var all, srv []string
	regions := map[string][]string{}
	var order []string
	for i := range n {
		c := fmt.Sprintf("cluster-%d", i+1)
		region := fmt.Sprintf("region-%d", i/3)
		zone := fmt.Sprintf("%s-%c", region, 'a'+i%3)
		addr := netip.AddrFrom4([4]byte{127, byte(100 + i/250), byte(i % 250), 1})
		rows = append(rows, dnsendpoint.Cluster{Name: c, Region: region, Zones: []string{zone}, Weight: 1,
			Addresses: []netip.Addr{addr}, ClusterIPs: []netip.Addr{netip.AddrFrom4([4]byte{10, 96, byte(i), 10})},
			Ports: []dnsendpoint.Port{{Name: "http", Protocol: "TCP", Port: 80}}})
		all = append(all, addr.String())
		srv = append(srv, "0 1 80 "+names.Cluster(c))
		if _, ok := regions[region]; !ok {
			order = append(order, region)
		}
		regions[region] = append(regions[region], addr.String())
		a(names.Cluster(c), addr.String())
		a(names.Zone(zone, region), addr.String())
	}
	a(names.Global(), all...)
	for _, r := range order {
		a(names.Region(r), regions[r]...)
	}
	ep.Spec.Endpoints = append(ep.Spec.Endpoints, extdnsv1alpha1.Endpoint{DNSName: names.SRV("http", "tcp"), RecordType: "SRV", Targets: srv, RecordTTL: 30})
	dnsendpoint.SetClusters(&ep, rows)
	return ep
}

// BenchmarkMemoryByClusters is BenchmarkMemoryPerName for 1,000 Services
// placed in N clusters: how the plugin's memory (the informer's objects and
// the index) and a DNSEndpoint's size grow with the fleet. It reports
// bytes, not time.
func BenchmarkMemoryByClusters(b *testing.B) {
	const services = 1000
	for _, n := range []int{3, 10, 30, 100} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			list := extdnsv1alpha1.DNSEndpointList{TypeMeta: metav1.TypeMeta{APIVersion: "externaldns.k8s.io/v1alpha1", Kind: "DNSEndpointList"}}
			for i := range services {
				list.Items = append(list.Items, fleetEndpoint(fmt.Sprintf("svc-%d", i), n))
			}
			one, err := json.Marshal(list.Items[0])
			if err != nil {
				b.Fatal(err)
			}
			raw, err := json.Marshal(list)
			if err != nil {
				b.Fatal(err)
			}
			list.Items = nil
			for b.Loop() {
				objects, all, names := memoryOf(b, raw, "bench")
				b.ReportMetric(float64(len(one)), "json-B/object")
				b.ReportMetric(names/services, "names/service")
				b.ReportMetric(float64(objects)/services, "objects-B/service")
				b.ReportMetric(float64(all-objects)/services, "index-B/service")
				b.ReportMetric(float64(all)/names, "B/name")
			}
		})
	}
}
