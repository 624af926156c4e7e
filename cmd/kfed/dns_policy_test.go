package main

import (
	"net/netip"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/controllers/mcs"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/internal/geo/regions"
	"github.com/kfed-io/kfed/policy/failover"
)

func TestPlanNamesPolicyAndOwner(t *testing.T) {
	ep := func(annotations map[string]string) *extdnsv1alpha1.DNSEndpoint {
		return &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", Annotations: annotations}}
	}
	tests := []struct {
		name          string
		ep            *extdnsv1alpha1.DNSEndpoint
		policy, owner string
	}{
		{"a Service routed by weight", ep(nil), "weighted", "default/db"},
		{"by proximity", ep(map[string]string{dnsendpoint.AnnotationRouting: dnsendpoint.RoutingProximity}), "proximity", "default/db"},
		{"by failover, serving a place", ep(map[string]string{dnsendpoint.AnnotationFailover: failover.State{Active: "europe-west1"}.Encode()}),
			"failover: europe-west1", "default/db"},
		{"by failover, no place up", ep(map[string]string{dnsendpoint.AnnotationFailover: failover.State{}.Encode()}),
			"failover (no place up: all)", "default/db"},
		{"a Gateway's names", ep(map[string]string{kfedv1alpha1.AnnotationHostnamesOf: "Gateway shop/front"}), "weighted", "Gateway shop/front"},
		{"the names of a LoadBalancer Service's exports", ep(map[string]string{kfedv1alpha1.AnnotationHostnamesOf: mcs.Origin(types.NamespacedName{Namespace: "default", Name: "db"})}),
			"weighted", "ServiceExport default/db"},
	}
	for _, tt := range tests {
		if got := policy(tt.ep); got != tt.policy {
			t.Errorf("%s: policy %q, want %q", tt.name, got, tt.policy)
		}
		if got := owner(tt.ep); got != tt.owner {
			t.Errorf("%s: owner %q, want %q", tt.name, got, tt.owner)
		}
	}
}

func TestPlanSaysWhatRoute53AndCloudDNSPublishForProximity(t *testing.T) {
	in := publish.Input{Names: publish.NewNames("fed", "kfed.test", "default", "db"), Regions: []string{"us-east1", "europe-west1"}}
	for _, s := range []struct {
		cluster, region, ip string
		weight              int
	}{{"c1", "us-east1", "127.1.0.1", 2}, {"c2", "us-east1", "127.2.0.1", 0}, {"c3", "europe-west1", "127.3.0.1", 1}} {
		at, _ := regions.Lookup(s.region)
		in.Clusters = append(in.Clusters, dnsendpoint.Cluster{Name: s.cluster, Region: s.region, Addresses: []netip.Addr{netip.MustParseAddr(s.ip)}, Weight: s.weight, Location: &at})
	}
	eps, table, err := publish.Endpoints(in)
	if err != nil {
		t.Fatal(err)
	}
	obj := extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", Labels: dnsendpoint.Selector("fed"),
		Annotations: map[string]string{dnsendpoint.AnnotationRouting: dnsendpoint.RoutingProximity}}, Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps}}
	dnsendpoint.SetClusters(&obj, table)
	objs := []extdnsv1alpha1.DNSEndpoint{obj}
	var tf tenancyFlags
	got := map[string]string{}
	for _, r := range toRecords(objs, geoPlaced(tf.desired(objs))) {
		if r.Type == "A" {
			got[r.Name+" "+r.Cluster] = r.Policy
		}
	}
	for row, want := range map[string]string{
		"db.default.fed.svc.kfed.test c1":          "proximity (geo)",
		"db.default.fed.svc.kfed.test c2":          "proximity (geo, left out: weight 0)",
		"db.default.fed.svc.kfed.test c3":          "proximity (geo)",
		"db.default.fed.svc.us-east1.kfed.test c1": "proximity (providers: weighted)",
		"c3.db.default.fed.svc.kfed.test c3":       "proximity (providers: weighted)",
	} {
		if got[row] != want {
			t.Errorf("%s: policy %q, want %q", row, got[row], want)
		}
	}
}
