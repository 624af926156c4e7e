package publish

import (
	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// places lists the regions and zones ("zone/region") an object's names are
// published for (Input.Regions and Input.Zones): those of the joined
// clusters, and those with a name in the published DNSEndpoint (nil when
// none), so that a place keeps its name, as a CNAME fallback, after its
// last cluster leaves. A cluster with no region yet has no place of its own.
func places(joined map[string]*kfedv1alpha1.Cluster, published *extdnsv1alpha1.DNSEndpoint, n Names) (regions, zones []string) {
	for _, cl := range joined {
		region, zs := cl.Location()
		if region == "" {
			continue
		}
		regions = append(regions, region)
		for _, z := range zs {
			zones = append(zones, z+"/"+region)
		}
	}
	if published == nil {
		return regions, zones
	}
	for _, e := range published.Spec.Endpoints {
		switch z, r, ok := n.Place(e.DNSName); {
		case !ok:
		case z == "":
			regions = append(regions, r)
		default:
			zones = append(zones, z+"/"+r)
		}
	}
	return regions, zones
}

// Previous reads the cluster table of the published DNSEndpoint (nil when
// none), so that a cluster that cannot be read this time keeps what it had
// (keep). A table kfed wrote itself reads back whole; whatever could not be
// read is simply not kept.
func Previous(published *extdnsv1alpha1.DNSEndpoint) map[string]dnsendpoint.Cluster {
	out := map[string]dnsendpoint.Cluster{}
	if published == nil {
		return out
	}
	table, _ := dnsendpoint.ReadClusters(published)
	for name, c := range table {
		out[name] = *c
	}
	return out
}
