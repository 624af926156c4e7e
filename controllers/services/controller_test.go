package services

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kfed-io/kfed/dns/publish"

	corev1 "k8s.io/api/core/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/clusters/registry"
)

type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func TestReadIngressResolvesHostnameEverySync(t *testing.T) {
	m := registry.Member{Name: "aws", Region: "us-east-1", Zones: []string{"us-east-1a"}}
	shard := &corev1.Service{
		Spec: corev1.ServiceSpec{ClusterIPs: []string{"10.96.0.7"}, Ports: []corev1.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
			{Hostname: "LB-1.ELB.amazonaws.com."},
		}}},
	}
	tests := []struct {
		name    string
		dns     fakeResolver
		wantIPs []netip.Addr
		wantErr string
	}{
		{"hostname resolves to its current addresses", fakeResolver{"lb-1.elb.amazonaws.com": ips("127.7.0.1", "127.7.0.2")},
			ips("127.7.0.1", "127.7.0.2"), ""},
		{"addresses change, the next sync sees them", fakeResolver{"lb-1.elb.amazonaws.com": ips("127.7.0.9")},
			ips("127.7.0.9"), ""},
		{"resolution failure is reported, not hidden", fakeResolver{}, nil, "resolving ingress hostname lb-1.elb.amazonaws.com of cluster aws"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Controller{Resolver: tt.dns}
			got, err := c.readIngress(context.Background(), m, shard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got.Hostname != "lb-1.elb.amazonaws.com" || !slices.Equal(got.Addresses, tt.wantIPs) {
				t.Errorf("got hostname %q IPs %v, want %v", got.Hostname, got.Addresses, tt.wantIPs)
			}
			if !slices.Equal(got.ClusterIPs, ips("10.96.0.7")) || len(got.Ports) != 1 {
				t.Errorf("cluster IPs %v ports %v", got.ClusterIPs, got.Ports)
			}
		})
	}
}

func TestPreviousCopiesRoundTrip(t *testing.T) {
	names := publish.NewNames("fed", "example.com", "ns", "web")
	for _, shards := range [][]dnsendpoint.Cluster{
		{east1, east2, eu},
		{{Name: "aws", Region: "r", Zones: []string{"z"}, Hostname: "lb-1.elb.amazonaws.com", Weight: 1, Ports: []dnsendpoint.Port{web}}},
		{{Name: "dual", Region: "r", Zones: []string{"z", "y"}, Addresses: ips("127.4.0.1", "fd00::4"), ClusterIPs: ips("10.96.0.4"), Weight: 0}},
	} {
		in := publish.Input{Names: names, Clusters: shards, Regions: regions, Zones: zones}
		eps, table, err := publish.Endpoints(in)
		if err != nil {
			t.Fatal(err)
		}
		published := &extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps}}
		dnsendpoint.SetClusters(published, table)
		var again []dnsendpoint.Cluster
		for _, s := range publish.Previous(published) {
			again = append(again, s)
		}
		eps2, table2, err := publish.Endpoints(publish.Input{Names: names, Clusters: again, Regions: regions, Zones: zones})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := render(t, eps, table), render(t, eps2, table2); !slices.Equal(a, b) || !reflect.DeepEqual(table, table2) {
			t.Errorf("records rebuilt from the published ones differ:\n%s\nvs\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
		}
	}
}
