package publish

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func TestPlaces(t *testing.T) {
	n := NewNames("fed", "kfed.test", "ns", "web")
	cluster := func(region string, zones ...string) *kfedv1alpha1.Cluster {
		cl := &kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
		cl.Spec.Region, cl.Spec.Zones = region, zones
		return cl
	}
	published := &extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{
		{DNSName: n.Region("asia-east1")}, {DNSName: n.Zone("asia-east1-a", "asia-east1")}, {DNSName: n.Global()},
	}}}
	tests := []struct {
		name           string
		joined         map[string]*kfedv1alpha1.Cluster
		published      *extdnsv1alpha1.DNSEndpoint
		regions, zones []string
	}{
		{"a joined cluster's region and zones", map[string]*kfedv1alpha1.Cluster{"c1": cluster("us-east1", "us-east1-b")}, nil,
			[]string{"us-east1"}, []string{"us-east1-b/us-east1"}},
		{"a cluster with no region yet has no place: its name would have an empty label", map[string]*kfedv1alpha1.Cluster{"c1": cluster("")}, nil,
			nil, nil},
		{"a place published before keeps its name after its last cluster left", nil, published,
			[]string{"asia-east1"}, []string{"asia-east1-a/asia-east1"}},
	}
	for _, tt := range tests {
		regions, zones := places(tt.joined, tt.published, n)
		if !slices.Equal(regions, tt.regions) || !slices.Equal(zones, tt.zones) {
			t.Errorf("%s: %v %v, want %v %v", tt.name, regions, zones, tt.regions, tt.zones)
		}
	}
}
