package mcs

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
)

// lb is cluster's export of a LoadBalancer Service at address, created at
// seconds after t0, with annotations.
func lb(cluster, region string, at int, address string, annotations map[string]string) lbExport {
	e := export(cluster, at, service())
	e.Export.Annotations = annotations
	row := dnsendpoint.Cluster{Name: cluster, Region: region, Zones: []string{region + "-a"}, Weight: 1,
		Ports: []dnsendpoint.Port{{Name: "tcp", Protocol: "TCP", Port: 42}}}
	o := publish.Waiting
	if address != "" {
		row.Addresses, o = []netip.Addr{netip.MustParseAddr(address)}, publish.Serving
	}
	return lbExport{export: e, row: row, outcome: o}
}

// down is three fresh checkers that all find clusters down.
func down(clusters ...string) publish.Health {
	var cs []publish.Checker
	for _, name := range []string{"k1", "k2", "k3"} {
		c := publish.Checker{Name: name, Unhealthy: map[string]string{}}
		for _, cl := range clusters {
			c.Unhealthy[kfedv1alpha1.EndpointKey("ns", "hello", cl)] = "connection refused"
		}
		cs = append(cs, c)
	}
	return publish.NewHealth(cs, 0)
}

// drained is joined with the clusters in out drained (kfed drain).
func drained(j map[string]*kfedv1alpha1.Cluster, out ...string) map[string]*kfedv1alpha1.Cluster {
	for _, n := range out {
		j[n].Spec.Drained = true
	}
	return j
}

func joined(names ...string) map[string]*kfedv1alpha1.Cluster {
	out := map[string]*kfedv1alpha1.Cluster{}
	for _, n := range names {
		out[n] = &kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: n}}
		out[n].Spec.Region = map[string]string{"c1": "us-east1", "c2": "europe-west1"}[n]
	}
	return out
}

// answers is what the decision publishes at name, sorted.
func answers(d globalDecision, name string) []string {
	var out []string
	for _, e := range d.endpoints {
		if e.DNSName == name && (e.RecordType == "A" || e.RecordType == "CNAME") {
			out = append(out, e.Targets...)
		}
	}
	slices.Sort(out)
	return out
}

func TestDecideGlobal(t *testing.T) {
	const global = "hello.ns.fed.svc.kfed.test"
	published := func(rows ...dnsendpoint.Cluster) *extdnsv1alpha1.DNSEndpoint {
		ep := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hello"}}
		dnsendpoint.SetClusters(ep, rows)
		return ep
	}
	failover := map[string]string{"kfed.io/routing": "failover", "kfed.io/failover-order": "us-east1,europe-west1"}
	tests := []struct {
		name      string
		in        globalInput
		publish   bool
		answers   []string
		healthy   map[string]bool
		reason    string
		msgHas    string
		annotates map[string]string
	}{
		{name: "no export of a LoadBalancer publishes nothing"},
		{
			name: "two exports answer both load balancers at the global name",
			in: globalInput{exports: []lbExport{lb("c1", "us-east1", 0, "127.1.0.1", nil), lb("c2", "europe-west1", 5, "127.2.0.1", nil)},
				joined: joined("c1", "c2"), ready: map[string]bool{"c1": true, "c2": true}},
			publish: true, answers: []string{"127.1.0.1", "127.2.0.1"}, healthy: map[string]bool{"c1": true, "c2": true},
			reason: ReasonPublished, msgHas: "answers clusters c1, c2",
		},
		{
			name: "a load balancer the checkers find down leaves the global name and the slices",
			in: globalInput{exports: []lbExport{lb("c1", "us-east1", 0, "127.1.0.1", nil), lb("c2", "europe-west1", 5, "127.2.0.1", nil)},
				joined: joined("c1", "c2"), ready: map[string]bool{"c1": true, "c2": true}, health: down("c2")},
			publish: true, answers: []string{"127.1.0.1"}, healthy: map[string]bool{"c1": true, "c2": false},
			reason: ReasonPublished, msgHas: "unhealthy: c2",
		},
		{
			name: "every load balancer down keeps them all, failing open",
			in: globalInput{exports: []lbExport{lb("c1", "us-east1", 0, "127.1.0.1", nil), lb("c2", "europe-west1", 5, "127.2.0.1", nil)},
				joined: joined("c1", "c2"), ready: map[string]bool{"c1": true, "c2": true}, health: down("c1", "c2")},
			publish: true, answers: []string{"127.1.0.1", "127.2.0.1"}, healthy: map[string]bool{"c1": true, "c2": true},
			reason: ReasonPublished, msgHas: "failing open",
		},
		{
			name: "the oldest export's failover routing wins, and the younger one that differs is named",
			in: globalInput{exports: []lbExport{lb("c2", "europe-west1", 0, "127.2.0.1", nil), lb("c1", "us-east1", 5, "127.1.0.1", failover)},
				joined: joined("c1", "c2"), ready: map[string]bool{"c1": true, "c2": true}},
			publish: true, answers: []string{"127.1.0.1", "127.2.0.1"}, healthy: map[string]bool{"c1": true, "c2": true},
			reason: ReasonPublished, msgHas: "exports in clusters c1 differ from the oldest export's, cluster c2's",
		},
		{
			name: "failover routing on the oldest export answers only the first place up",
			in: globalInput{exports: []lbExport{lb("c1", "us-east1", 0, "127.1.0.1", failover), lb("c2", "europe-west1", 5, "127.2.0.1", failover)},
				joined: joined("c1", "c2"), ready: map[string]bool{"c1": true, "c2": true}, now: t0},
			publish: true, answers: []string{"127.1.0.1"}, healthy: map[string]bool{"c1": true, "c2": true},
			reason: ReasonPublished, msgHas: "failover:", annotates: map[string]string{dnsendpoint.AnnotationFailover: `{"active":"us-east1"`},
		},
		{
			name: "proximity routing is said on the records",
			in: globalInput{exports: []lbExport{lb("c1", "us-east1", 0, "127.1.0.1", map[string]string{"kfed.io/routing": "proximity"})},
				joined: joined("c1"), ready: map[string]bool{"c1": true}},
			publish: true, answers: []string{"127.1.0.1"}, reason: ReasonPublished,
			annotates: map[string]string{dnsendpoint.AnnotationRouting: dnsendpoint.RoutingProximity},
		},
		{
			name: "a drained cluster leaves the global name while another can answer",
			in: globalInput{exports: []lbExport{lb("c1", "us-east1", 0, "127.1.0.1", nil), lb("c2", "europe-west1", 5, "127.2.0.1", nil)},
				joined: drained(joined("c1", "c2"), "c1"), ready: map[string]bool{"c1": true, "c2": true}},
			publish: true, answers: []string{"127.2.0.1"}, healthy: map[string]bool{"c1": false, "c2": true}, reason: ReasonPublished,
		},
		{
			name: "a name only drained clusters serve keeps them",
			in: globalInput{exports: []lbExport{lb("c1", "us-east1", 0, "127.1.0.1", nil)},
				joined: drained(joined("c1", "c2"), "c1"), ready: map[string]bool{"c1": true, "c2": true}},
			publish: true, answers: []string{"127.1.0.1"}, healthy: map[string]bool{"c1": true}, reason: ReasonPublished,
		},
		{
			name: "failover counts a drained place unavailable",
			in: globalInput{exports: []lbExport{lb("c1", "us-east1", 0, "127.1.0.1", failover), lb("c2", "europe-west1", 5, "127.2.0.1", failover)},
				joined: drained(joined("c1", "c2"), "c1"), ready: map[string]bool{"c1": true, "c2": true}, now: t0},
			publish: true, answers: []string{"127.2.0.1"}, reason: ReasonPublished,
			annotates: map[string]string{dnsendpoint.AnnotationFailover: `{"active":"europe-west1"`},
		},
		{
			name: "a member that is not Ready keeps the row it had",
			in: globalInput{exports: []lbExport{lb("c1", "us-east1", 0, "127.1.0.1", nil)},
				joined: joined("c1", "c2"), ready: map[string]bool{"c1": true},
				published: published(dnsendpoint.Cluster{Name: "c2", Region: "europe-west1", Weight: 1, Addresses: []netip.Addr{netip.MustParseAddr("127.2.0.1")}})},
			publish: true, answers: []string{"127.1.0.1", "127.2.0.1"}, reason: ReasonPublished,
		},
		{
			name: "a cluster whose export went leaves the name",
			in: globalInput{exports: []lbExport{lb("c1", "us-east1", 0, "127.1.0.1", nil)},
				joined: joined("c1", "c2"), ready: map[string]bool{"c1": true, "c2": true},
				published: published(dnsendpoint.Cluster{Name: "c2", Region: "europe-west1", Weight: 1, Addresses: []netip.Addr{netip.MustParseAddr("127.2.0.1")}})},
			publish: true, answers: []string{"127.1.0.1"}, reason: ReasonPublished,
		},
		{
			name: "an annotation that does not parse is reported and its default used",
			in: globalInput{exports: []lbExport{lb("c1", "us-east1", 0, "127.1.0.1", map[string]string{"kfed.io/ttl": "soon"})},
				joined: joined("c1"), ready: map[string]bool{"c1": true}},
			publish: true, answers: []string{"127.1.0.1"}, reason: ReasonInvalidAnnotations, msgHas: "kfed.io/ttl",
		},
		{
			name: "a load balancer without an address yet publishes the name without it",
			in: globalInput{exports: []lbExport{lb("c1", "us-east1", 0, "", nil)},
				joined: joined("c1"), ready: map[string]bool{"c1": true}},
			publish: true, reason: ReasonPublished, msgHas: "no cluster with a load balancer address yet",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.key = types.NamespacedName{Namespace: "ns", Name: "hello"}
			tt.in.names = publish.NewNames("fed", "kfed.test", "ns", "hello")
			d := decideGlobal(tt.in)
			if d.publish != tt.publish {
				t.Fatalf("publish %v, want %v (%+v)", d.publish, tt.publish, d.condition)
			}
			if got := answers(d, global); !slices.Equal(got, tt.answers) {
				t.Errorf("%s answers %v, want %v", global, got, tt.answers)
			}
			for name, want := range tt.healthy {
				if d.healthy[name] != want {
					t.Errorf("cluster %s healthy in the slices: %v, want %v", name, d.healthy[name], want)
				}
			}
			if d.condition.Reason != tt.reason || !strings.Contains(d.condition.Message, tt.msgHas) {
				t.Errorf("condition %s: %s, want reason %q and a message with %q", d.condition.Reason, d.condition.Message, tt.reason, tt.msgHas)
			}
			for k, v := range tt.annotates {
				if !strings.HasPrefix(d.annotations[k], v) {
					t.Errorf("annotation %s = %q, want it to begin %q", k, d.annotations[k], v)
				}
			}
		})
	}
}

// An unhealthy cluster's load balancer is in other members' slices not
// ready and not serving; its own member keeps its pods as they are.
func TestEndpointsInMarksAnUnhealthyLoadBalancer(t *testing.T) {
	lbSvc := service(func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.5"}}
	})
	d := Decide([]Export{export("c1", 0, lbSvc, "10.1.0.1"), export("c2", 1, lbSvc, "10.2.0.1")})
	d.Import.Sources[1].Unhealthy = true // c2
	ready := func(member, source string) []bool {
		var out []bool
		for _, eps := range d.Import.EndpointsIn(member, d.Import.Sources[slices.IndexFunc(d.Import.Sources, func(s Source) bool { return s.Cluster == source })]) {
			for _, ep := range eps.Endpoints {
				out = append(out, ep.Conditions.Ready == nil || *ep.Conditions.Ready, ep.Conditions.Serving == nil || *ep.Conditions.Serving)
			}
		}
		return out
	}
	for _, tc := range []struct {
		member, source string
		want           []bool // ready, serving of each endpoint
	}{
		{"c1", "c2", []bool{false, false}},
		{"c3", "c2", []bool{false, false}},
		{"c3", "c1", []bool{true, true}},
		{"c2", "c2", []bool{true, true}},
	} {
		if got := ready(tc.member, tc.source); !slices.Equal(got, tc.want) {
			t.Errorf("in %s, %s's endpoints ready/serving %v, want %v", tc.member, tc.source, got, tc.want)
		}
	}
	if !*d.Import.Sources[1].Ingress[0].Endpoints[0].Conditions.Ready {
		t.Error("marking a source changed the import's own endpoints")
	}
}

// readyEndpoints weighs a cluster by its ready endpoints.
func TestReadyEndpoints(t *testing.T) {
	slice := discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{
		{Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		{Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
		{},
	}}
	if got := readyEndpoints([]discoveryv1.EndpointSlice{slice}); got != 2 {
		t.Errorf("weight %d, want the 2 ready endpoints", got)
	}
	if got := readyEndpoints(nil); got != dnsendpoint.DefaultWeight {
		t.Errorf("weight without slices %d, want the default", got)
	}
}
