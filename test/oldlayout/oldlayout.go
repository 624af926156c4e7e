// Package oldlayout turns DNSEndpoints written in the older per-cluster
// layout (ADR 0002: one endpoint per cluster, the cluster in its
// properties) into the layout the controllers write today. Test fixtures
// and the DNS benchmarks are written the older way, which is shorter to
// write by hand; kfed's readers still read it (dnsendpoint.ReadClusters),
// but nothing of kfed's writes it any more.
package oldlayout

import (
	"slices"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

// Upgrade rewrites an object in the older per-cluster layout in the
// current one: one endpoint per name and type with the targets of every
// cluster, the clusters in the table. An object already in the current
// layout, or without per-cluster endpoints, is left as it is.
func Upgrade(obj *extdnsv1alpha1.DNSEndpoint) error {
	if _, ok := obj.Annotations[dnsendpoint.AnnotationClusters]; ok {
		return nil
	}
	clusters, err := dnsendpoint.ReadClusters(obj)
	if err != nil || len(clusters) == 0 {
		return err
	}
	var eps []extdnsv1alpha1.Endpoint
	for _, e := range obj.Spec.Endpoints {
		i := slices.IndexFunc(eps, func(m extdnsv1alpha1.Endpoint) bool {
			return m.DNSName == e.DNSName && m.RecordType == e.RecordType
		})
		if i < 0 {
			eps = append(eps, extdnsv1alpha1.Endpoint{DNSName: e.DNSName, RecordType: e.RecordType, RecordTTL: e.RecordTTL})
			i = len(eps) - 1
		}
		for _, t := range e.Targets {
			if !slices.Contains(eps[i].Targets, t) {
				eps[i].Targets = append(eps[i].Targets, t)
			}
		}
	}
	rows := make([]dnsendpoint.Cluster, 0, len(clusters))
	for _, c := range clusters {
		rows = append(rows, *c)
	}
	obj.Spec.Endpoints = eps
	dnsendpoint.SetClusters(obj, rows)
	return nil
}
