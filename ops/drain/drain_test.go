package drain

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// drainEP is a DNSEndpoint of generation gen with rows for clusters
// ("cluster-1" plain, "cluster-1!" drained), records of ttl, and the
// generation each provider published ("route53=3").
func drainEP(name string, gen int64, ttl int64, clusters []string, published ...string) extdnsv1alpha1.DNSEndpoint {
	ep := extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Generation: gen,
		Labels: map[string]string{kfedv1alpha1.LabelFederation: "fed"}}}
	ep.Spec.Endpoints = []extdnsv1alpha1.Endpoint{{DNSName: name + ".example.com", RecordType: "A", Targets: []string{"127.0.0.1"}, RecordTTL: ttl}}
	var table []dnsendpoint.Cluster
	for _, c := range clusters {
		name, drained := strings.CutSuffix(c, "!")
		table = append(table, dnsendpoint.Cluster{Name: name, Drained: drained, Addresses: []netip.Addr{netip.MustParseAddr("127.0.0.1")}})
	}
	dnsendpoint.SetClusters(&ep, table)
	for _, p := range published {
		provider, g, _ := strings.Cut(p, "=")
		n, _ := strconv.ParseInt(g, 10, 64)
		ep.Status.Publishers = append(ep.Status.Publishers, extdnsv1alpha1.PublisherStatus{Provider: provider, ObservedGeneration: n})
	}
	return ep
}

func TestDrainProgress(t *testing.T) {
	tests := []struct {
		name        string
		eps         []extdnsv1alpha1.DNSEndpoint
		drained     bool
		done        bool
		objects     []string
		kept        []string
		unwritten   []string
		unpublished []string
		ttl         int64
	}{
		{name: "a table not yet rewritten is waited on",
			eps:     []extdnsv1alpha1.DNSEndpoint{drainEP("demo", 2, 30, []string{"cluster-1", "cluster-2"}, "route53=2")},
			drained: true, objects: []string{"default/demo"}, unwritten: []string{"default/demo"}},
		{name: "a rewritten table a provider has not published is waited on",
			eps:     []extdnsv1alpha1.DNSEndpoint{drainEP("demo", 3, 30, []string{"cluster-1!", "cluster-2"}, "route53=3", "rfc2136=2")},
			drained: true, objects: []string{"default/demo"}, unpublished: []string{"default/demo (rfc2136)"}, ttl: 30},
		{name: "a provider that has never published an object is waited on",
			eps: []extdnsv1alpha1.DNSEndpoint{drainEP("demo", 3, 30, []string{"cluster-1!", "cluster-2"}, "route53=3"),
				drainEP("other", 1, 30, []string{"cluster-2"}, "clouddns=1")},
			drained: true, objects: []string{"default/demo"}, unpublished: []string{"default/demo (clouddns)"}, ttl: 30},
		{name: "published everywhere is done, with the longest TTL, and a name kept there is named",
			eps: []extdnsv1alpha1.DNSEndpoint{drainEP("demo", 3, 30, []string{"cluster-1!", "cluster-2"}, "route53=3"),
				drainEP("solo", 1, 60, []string{"cluster-1!"}, "route53=1"),
				drainEP("elsewhere", 1, 300, []string{"cluster-2"}, "route53=1")},
			drained: true, done: true, objects: []string{"default/demo", "default/solo"}, kept: []string{"default/solo"}, ttl: 60},
		{name: "undrain waits for rows still drained",
			eps:     []extdnsv1alpha1.DNSEndpoint{drainEP("demo", 3, 30, []string{"cluster-1!", "cluster-2"}, "route53=3")},
			drained: false, objects: []string{"default/demo"}, unwritten: []string{"default/demo"}},
		{name: "undrain published everywhere is done",
			eps:     []extdnsv1alpha1.DNSEndpoint{drainEP("demo", 4, 0, []string{"cluster-1", "cluster-2"}, "route53=4")},
			drained: false, done: true, objects: []string{"default/demo"}, ttl: 30},
		{name: "a cluster that serves nothing is done at once", eps: []extdnsv1alpha1.DNSEndpoint{drainEP("demo", 1, 30, []string{"cluster-2"})},
			drained: true, done: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Progress(tt.eps, "cluster-1", tt.drained)
			if s.Done() != tt.done || !slices.Equal(s.Objects, tt.objects) || !slices.Equal(s.Kept, tt.kept) ||
				!slices.Equal(s.Unwritten, tt.unwritten) || !slices.Equal(s.Unpublished, tt.unpublished) || (tt.done && s.TTL != tt.ttl) {
				t.Errorf("got done %v objects %v kept %v unwritten %v unpublished %v ttl %d\nwant done %v objects %v kept %v unwritten %v unpublished %v ttl %d",
					s.Done(), s.Objects, s.Kept, s.Unwritten, s.Unpublished, s.TTL, tt.done, tt.objects, tt.kept, tt.unwritten, tt.unpublished, tt.ttl)
			}
		})
	}
}
