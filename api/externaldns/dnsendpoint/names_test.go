package dnsendpoint

import (
	"testing"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

func TestGlobalName(t *testing.T) {
	n := NewNames("fed", "Example.COM.", "shop", "web")
	ep := func(names ...string) *extdnsv1alpha1.DNSEndpoint {
		obj := &extdnsv1alpha1.DNSEndpoint{}
		for _, name := range names {
			obj.Spec.Endpoints = append(obj.Spec.Endpoints, extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "A"})
		}
		return obj
	}
	clusters := Clusters{"cluster-1": {Name: "cluster-1"}, "cluster-2": {Name: "cluster-2"}}
	tests := []struct {
		name   string
		obj    *extdnsv1alpha1.DNSEndpoint
		want   string
		wantOK bool
	}{
		{"a Service's names", ep(n.Region("us-east1"), n.Global(), n.Zone("b", "us-east1"), n.Cluster("cluster-2"), n.SRV("http", "TCP")), "web.shop.fed.svc.example.com", true},
		{"spelled in capitals with a trailing dot", ep("WEB.shop.fed.svc.example.com.", "Cluster-1.web.shop.fed.svc.example.com."), "web.shop.fed.svc.example.com", true},
		{"a Gateway's hostnames have no per-cluster name", ep("shop.example.com", "www.example.com"), "", false},
		{"a per-cluster name without its global name", ep(n.Cluster("cluster-1")), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := GlobalName(tt.obj, clusters)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("GlobalName = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
