package services

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/healthcheck"
	"github.com/kfed-io/kfed/internal/geo"
)

func joinedClusters(cs ...dnsendpoint.Cluster) map[string]*kfedv1alpha1.Cluster {
	out := map[string]*kfedv1alpha1.Cluster{}
	for _, s := range cs {
		out[s.Name] = &kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: s.Name},
			Spec: kfedv1alpha1.ClusterSpec{Region: s.Region, Zones: s.Zones}}
	}
	return out
}

// publishedWith is the DNSEndpoint kfed writes for shards.
func publishedWith(t *testing.T, shards ...dnsendpoint.Cluster) *extdnsv1alpha1.DNSEndpoint {
	t.Helper()
	eps, table, err := publish.Endpoints(publish.Input{Names: publish.NewNames("fed", "example.com", "ns", "web"), Clusters: shards, Regions: regions, Zones: zones})
	if err != nil {
		t.Fatal(err)
	}
	obj := &extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps}}
	dnsendpoint.SetClusters(obj, table)
	return obj
}

func TestDecide(t *testing.T) {
	names := publish.NewNames("fed", "example.com", "ns", "web")
	moved := east2
	moved.Addresses = ips("127.2.0.99")
	unresolved := dnsendpoint.Cluster{Name: "c2", Region: "us-east1", Zones: []string{"us-east1-c"}, Hostname: "lb-2.elb.amazonaws.com", Weight: 1}
	all := map[string]bool{"c1": true, "c2": true, "c3": true}
	tests := []struct {
		name      string
		obs       observation
		want      []string // records of c2 and the us-east1-c zone, rendered
		hostnames bool
		offline   []string
		waiting   []string
	}{
		{
			name: "a serving shard publishes what was observed now",
			obs: observation{placed: all, published: publishedWith(t, east1, east2, eu),
				members: map[string]memberCopy{"c1": {outcome: publish.Serving, row: east1}, "c2": {outcome: publish.Serving, row: moved}, "c3": {outcome: publish.Serving, row: eu}}},
			want: []string{"c2.web.ns.fed.svc.example.com A [c2] 127.2.0.99", "web.ns.fed.svc.us-east1-c.us-east1.example.com A [c2] 127.2.0.99"},
		},
		{
			name: "a cluster whose shard write failed keeps the records it had",
			obs: observation{placed: all, published: publishedWith(t, east1, east2, eu),
				members: map[string]memberCopy{"c1": {outcome: publish.Serving, row: east1}, "c2": {outcome: publish.WriteFailed}, "c3": {outcome: publish.Serving, row: eu}}},
			want: []string{"c2.web.ns.fed.svc.example.com A [c2] 127.2.0.1", "web.ns.fed.svc.us-east1-c.us-east1.example.com A [c2] 127.2.0.1"},
		},
		{
			name: "a placed cluster that is not Ready keeps the records it had",
			obs: observation{placed: all, published: publishedWith(t, east1, east2, eu),
				members: map[string]memberCopy{"c1": {outcome: publish.Serving, row: east1}, "c3": {outcome: publish.Serving, row: eu}}},
			want:    []string{"c2.web.ns.fed.svc.example.com A [c2] 127.2.0.1", "web.ns.fed.svc.us-east1-c.us-east1.example.com A [c2] 127.2.0.1"},
			offline: []string{"c2"},
		},
		{
			name: "a cluster that is not Ready and never published has nothing to keep",
			obs: observation{placed: all, published: publishedWith(t, east1, eu),
				members: map[string]memberCopy{"c1": {outcome: publish.Serving, row: east1}, "c3": {outcome: publish.Serving, row: eu}}},
			want:    []string{"web.ns.fed.svc.us-east1-c.us-east1.example.com CNAME web.ns.fed.svc.us-east1.example.com"},
			offline: []string{"c2"},
		},
		{
			name: "a hostname that did not resolve keeps the addresses it resolved to before",
			obs: observation{placed: all, published: publishedWith(t, east1, dnsendpoint.Cluster{Name: "c2", Region: "us-east1", Zones: []string{"us-east1-c"},
				Hostname: "lb-2.elb.amazonaws.com", Addresses: ips("127.2.0.7"), Weight: 1}, eu),
				members: map[string]memberCopy{"c1": {outcome: publish.Serving, row: east1}, "c2": {outcome: publish.Unresolved, row: unresolved}, "c3": {outcome: publish.Serving, row: eu}}},
			want:      []string{"c2.web.ns.fed.svc.example.com CNAME lb-2.elb.amazonaws.com", "web.ns.fed.svc.us-east1-c.us-east1.example.com CNAME lb-2.elb.amazonaws.com"},
			hostnames: true,
		},
		{
			name: "a shard without ingress yet is waited on and its zone falls back",
			obs: observation{placed: all,
				members: map[string]memberCopy{"c1": {outcome: publish.Serving, row: east1}, "c2": {outcome: publish.Waiting}, "c3": {outcome: publish.Serving, row: eu}}},
			want:    []string{"web.ns.fed.svc.us-east1-c.us-east1.example.com CNAME web.ns.fed.svc.us-east1.example.com"},
			waiting: []string{"c2"},
		},
		{
			name: "a shard left alone publishes nothing for its cluster, not even what it had",
			obs: observation{placed: all, published: publishedWith(t, east1, east2, eu),
				members: map[string]memberCopy{"c1": {outcome: publish.Serving, row: east1}, "c2": {outcome: publish.LeftAlone}, "c3": {outcome: publish.Serving, row: eu}}},
			want: []string{"web.ns.fed.svc.us-east1-c.us-east1.example.com CNAME web.ns.fed.svc.us-east1.example.com"},
		},
		{
			name: "a cluster no longer placed leaves; its zone falls back to the region",
			obs: observation{placed: map[string]bool{"c1": true, "c3": true}, published: publishedWith(t, east1, east2, eu),
				members: map[string]memberCopy{"c1": {outcome: publish.Serving, row: east1}, "c3": {outcome: publish.Serving, row: eu}}},
			want: []string{"web.ns.fed.svc.us-east1-c.us-east1.example.com CNAME web.ns.fed.svc.us-east1.example.com"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.obs.names, tt.obs.cfg, tt.obs.joined = names, serviceconfig.Config{TTL: publish.DefaultTTL}, joinedClusters(east1, east2, eu)
			d, err := decide(tt.obs)
			st := d.status
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range render(t, d.endpoints, d.clusters) {
				if strings.HasPrefix(l, "c2.") || strings.Contains(l, "us-east1-c.us-east1.example.com ") {
					got = append(got, l)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("c2's records\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
			if (d.next > 0) != tt.hostnames {
				t.Errorf("decided again in %v; want a resync of a hostname: %v", d.next, tt.hostnames)
			}
			if !slices.Equal(st.notReady, tt.offline) || !slices.Equal(st.waitingOn, tt.waiting) {
				t.Errorf("status: not Ready %v waiting %v, want %v and %v", st.notReady, st.waitingOn, tt.offline, tt.waiting)
			}
		})
	}
}

func TestDecideKeepsPublishedPlacesAsFallbacks(t *testing.T) {
	// eu's cluster was unjoined: no joined cluster is in europe-west1 any
	// more, yet its names stay, as CNAMEs, for clients pinned to them.
	obs := observation{
		names: publish.NewNames("fed", "example.com", "ns", "web"), cfg: serviceconfig.Config{TTL: publish.DefaultTTL},
		joined: joinedClusters(east1), placed: map[string]bool{"c1": true},
		published: publishedWith(t, east1, eu),
		members:   map[string]memberCopy{"c1": {outcome: publish.Serving, row: east1}},
	}
	d, err := decide(obs)
	if err != nil {
		t.Fatal(err)
	}
	got := render(t, d.endpoints, d.clusters)
	for _, want := range []string{
		"web.ns.fed.svc.europe-west1.example.com CNAME web.ns.fed.svc.example.com",
		"web.ns.fed.svc.europe-west1-b.europe-west1.example.com CNAME web.ns.fed.svc.europe-west1.example.com",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %q in\n  %s", want, strings.Join(got, "\n  "))
		}
	}
}

func testService(mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func TestMatches(t *testing.T) {
	fed := testService(func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "grpc", Protocol: "TCP", Port: 9090})
	})
	tests := []struct {
		name     string
		existing *corev1.Service
		want     bool
	}{
		{"same selector and ports in another order match", testService(func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "grpc", Protocol: "TCP", Port: 9090, NodePort: 30001}, {Name: "http", Protocol: "TCP", Port: 80}}
		}), true},
		{"not a load balancer does not match", testService(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeClusterIP
			s.Spec.Ports = fed.Spec.Ports
		}), false},
		{"another selector does not match", testService(func(s *corev1.Service) {
			s.Spec.Selector = map[string]string{"app": "other"}
			s.Spec.Ports = fed.Spec.Ports
		}), false},
		{"a missing port does not match", testService(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := matches(tt.existing, fed); got != tt.want {
				t.Errorf("matches = %v, want %v", got, tt.want)
			}
		})
	}
}

// The shard is the federated Service less what kfed reads itself and what
// each member allocates for itself.
func TestDesiredCopyLeavesOutKfedsAndTheMembersFields(t *testing.T) {
	svc := testService(func(s *corev1.Service) {
		s.Annotations = map[string]string{"team": "shop", kfedv1alpha1.AnnotationTTL: "60"}
		s.Spec.LoadBalancerClass = new(kfedv1alpha1.LoadBalancerClassGlobal)
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.0.0.1", []string{"10.0.0.1"}
		s.Spec.Ports[0].NodePort = 31000
	})
	want := desiredCopy(svc, "fed")
	if _, ok := want.Annotations[kfedv1alpha1.AnnotationTTL]; ok || want.Annotations["team"] != "shop" {
		t.Errorf("shard annotations %v, want team without kfed's", want.Annotations)
	}
	if want.Spec.LoadBalancerClass != nil || want.Spec.ClusterIP != "" || want.Spec.ClusterIPs != nil || want.Spec.Ports[0].NodePort != 0 {
		t.Errorf("the shard carries the class, cluster IP or node port of the original: %+v", want.Spec)
	}
}

func TestStatusConditions(t *testing.T) {
	tests := []struct {
		name   string
		fill   func(*status)
		want   map[string]string // type → "Status/Reason"
		global bool
	}{
		{
			name: "bad input says only Valid False",
			fill: func(s *status) { s.invalid(reasonInvalidSpec, "annotation kfed.io/ttl") },
			want: map[string]string{kfedv1alpha1.ConditionValid: "False/InvalidSpec"},
		},
		{
			name: "every placed cluster serving: Placed and Published, global name in status",
			fill: func(s *status) { s.published("web.ns.fed.svc.example.com", []dnsendpoint.Cluster{east1, east2}, 2) },
			want: map[string]string{kfedv1alpha1.ConditionValid: "True/Valid", kfedv1alpha1.ConditionPlaced: "True/Placed", kfedv1alpha1.ConditionPublished: "True/Published"}, global: true,
		},
		{
			name: "a shard problem makes Placed False with its reason",
			fill: func(s *status) {
				s.copyProblem("c2", reasonShardConflict, "left alone")
				s.published("web.ns.fed.svc.example.com", []dnsendpoint.Cluster{east1}, 2)
			},
			want: map[string]string{kfedv1alpha1.ConditionValid: "True/Valid", kfedv1alpha1.ConditionPlaced: "False/ShardConflict", kfedv1alpha1.ConditionPublished: "True/Published"}, global: true,
		},
		{
			name: "no placed cluster Ready",
			fill: func(s *status) { s.offline("c1"); s.published("web.ns.fed.svc.example.com", nil, 1) },
			want: map[string]string{kfedv1alpha1.ConditionValid: "True/Valid", kfedv1alpha1.ConditionPlaced: "False/NoClusterReady", kfedv1alpha1.ConditionPublished: "False/WaitingForIngress"},
		},
		{
			name: "unknown clusters in the placement",
			fill: func(s *status) {
				s.placementWarning("names clusters that are not joined: gone")
				s.published("web.ns.fed.svc.example.com", []dnsendpoint.Cluster{east1}, 1)
			},
			want: map[string]string{kfedv1alpha1.ConditionValid: "True/Valid", kfedv1alpha1.ConditionPlaced: "False/UnknownClusters", kfedv1alpha1.ConditionPublished: "True/Published"}, global: true,
		},
		{
			name: "a provider left a name alone",
			fill: func(s *status) {
				s.published("web.ns.fed.svc.example.com", []dnsendpoint.Cluster{east1}, 1)
				s.providers([]extdnsv1alpha1.PublisherStatus{{Provider: "route53", ObservedGeneration: 3, Conflicts: []string{"c1.web"}}}, 3)
			},
			want: map[string]string{kfedv1alpha1.ConditionValid: "True/Valid", kfedv1alpha1.ConditionPlaced: "True/Placed", kfedv1alpha1.ConditionPublished: "True/Published", kfedv1alpha1.ConditionDNSPublished: "False/DNSConflict",
				"kfed.io/Programmed-route53": "False/DNSConflict"}, global: true,
		},
		{
			name: "a provider behind the current generation is still publishing",
			fill: func(s *status) {
				s.published("web.ns.fed.svc.example.com", []dnsendpoint.Cluster{east1}, 1)
				s.providers([]extdnsv1alpha1.PublisherStatus{{Provider: "rfc2136", ObservedGeneration: 2}}, 3)
			},
			want: map[string]string{kfedv1alpha1.ConditionValid: "True/Valid", kfedv1alpha1.ConditionPlaced: "True/Placed", kfedv1alpha1.ConditionPublished: "True/Published", kfedv1alpha1.ConditionDNSPublished: "False/Publishing",
				"kfed.io/Programmed-rfc2136": "Unknown/Publishing"}, global: true,
		},
		{
			name: "one provider's error is its own: the others say they hold the records",
			fill: func(s *status) {
				s.published("web.ns.fed.svc.example.com", []dnsendpoint.Cluster{east1}, 1)
				s.providers([]extdnsv1alpha1.PublisherStatus{{Provider: "rfc2136", ObservedGeneration: 3},
					{Provider: "route53", ObservedGeneration: 2, Error: "InvalidChangeBatch: RRSet of type A with DNS name c1.web is not permitted"}}, 3)
			},
			want: map[string]string{kfedv1alpha1.ConditionValid: "True/Valid", kfedv1alpha1.ConditionPlaced: "True/Placed", kfedv1alpha1.ConditionPublished: "True/Published", kfedv1alpha1.ConditionDNSPublished: "False/ProviderError",
				"kfed.io/Programmed-rfc2136": "True/Programmed", "kfed.io/Programmed-route53": "False/ProviderError"}, global: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := testService()
			svc.Generation = 4
			st := &status{}
			tt.fill(st)
			st.apply(svc)
			got := map[string]string{}
			for _, c := range svc.Status.Conditions {
				got[c.Type] = string(c.Status) + "/" + c.Reason
				if c.ObservedGeneration != 4 {
					t.Errorf("%s observedGeneration %d, want 4", c.Type, c.ObservedGeneration)
				}
			}
			for typ, want := range tt.want {
				if got[typ] != want {
					t.Errorf("%s = %s, want %s (all %v)", typ, got[typ], want, got)
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("conditions %v, want exactly %v", got, tt.want)
			}
			hasGlobal := len(svc.Status.LoadBalancer.Ingress) == 1 && svc.Status.LoadBalancer.Ingress[0].Hostname == "web.ns.fed.svc.example.com"
			if hasGlobal != tt.global {
				t.Errorf("ingress %v, want the global name: %v", svc.Status.LoadBalancer.Ingress, tt.global)
			}
		})
	}
}

func TestDecideAppliesTheCheckersVerdicts(t *testing.T) {
	const key = "ns/web/c2"
	fresh, stale := time.Second, time.Hour
	view := func(name string, age time.Duration, degraded bool, down ...string) publish.Checker {
		v := publish.Checker{Name: name, Age: age, Degraded: degraded, Unhealthy: map[string]string{}}
		for _, k := range down {
			v.Unhealthy[k] = "connection refused"
		}
		return v
	}
	sick := east2
	sick.Unhealthy = true
	serving := map[string]memberCopy{"c1": {outcome: publish.Serving, row: east1}, "c2": {outcome: publish.Serving, row: east2}, "c3": {outcome: publish.Serving, row: eu}}
	// fleet is nine checkers in nine regions that assign each endpoint
	// three (ADR 0012); the first n of key's panel and the off-panel
	// checkers set to say it is down, the panel's last `stale` ones stale.
	fleet := func(panelDown, offPanelDown, stalePanel int) []publish.Checker {
		var members []healthcheck.Checker
		cs := []publish.Checker{}
		for i := range 9 {
			name := fmt.Sprintf("f%d", i)
			members = append(members, healthcheck.Checker{Name: name, Domain: fmt.Sprintf("r%d", i), PerEndpoint: 3})
			cs = append(cs, publish.Checker{Name: name, Age: fresh, Unhealthy: map[string]string{}, Domain: fmt.Sprintf("r%d", i), PerEndpoint: 3})
		}
		onPanel := map[int]int{} // checker → its place on key's panel
		for place, i := range healthcheck.NewFleet(members).Panel(key, nil) {
			onPanel[i] = place
		}
		off := 0
		for i := range cs {
			place, on := onPanel[i]
			if on && place < panelDown || !on && off < offPanelDown {
				cs[i].Unhealthy[key] = "connection refused"
			}
			if !on {
				off++
			}
			if on && place >= 3-stalePanel {
				cs[i].Age = stale
			}
		}
		return cs
	}
	tests := []struct {
		name      string
		checkers  []publish.Checker
		published *extdnsv1alpha1.DNSEndpoint
		wantOut   bool   // c2 judged unhealthy: out of the shared names unless none is healthy
		cond      string // kfedv1alpha1.ConditionHealthy "Status/Reason", "" for none
	}{
		{name: "no checker configured: every endpoint is in", published: publishedWith(t, east1, sick, eu), cond: ""},
		{name: "two of three fresh checkers see it down: out",
			checkers: []publish.Checker{view("a", fresh, false, key), view("b", fresh, false, key), view("c", fresh, false)},
			wantOut:  true, cond: "False/EndpointsUnhealthy"},
		{name: "one of three sees it down: in",
			checkers: []publish.Checker{view("a", fresh, false, key), view("b", fresh, false), view("c", fresh, false)},
			cond:     "True/Healthy"},
		{name: "a checker cut off from everything is degraded and cannot remove it",
			checkers: []publish.Checker{view("a", fresh, true, key, "ns/web/c1", "ns/web/c3"), view("b", fresh, false), view("c", fresh, false)},
			cond:     "True/Healthy"},
		{name: "too few fresh checkers: an endpoint that was out stays out",
			checkers:  []publish.Checker{view("a", fresh, false, key), view("b", stale, false), view("c", stale, false)},
			published: publishedWith(t, east1, sick, eu), wantOut: true, cond: "False/EndpointsUnhealthy"},
		{name: "too few fresh checkers: an endpoint that was in stays in",
			checkers:  []publish.Checker{view("a", fresh, false, key), view("b", stale, false, key), view("c", stale, false, key)},
			published: publishedWith(t, east1, east2, eu), cond: "True/Healthy"},
		{name: "fresh checkers that see it up again bring it back",
			checkers:  []publish.Checker{view("a", fresh, false), view("b", fresh, false), view("c", stale, false, key)},
			published: publishedWith(t, east1, sick, eu), cond: "True/Healthy"},
		{name: "a single checker decides alone",
			checkers: []publish.Checker{view("only", fresh, false, key)}, wantOut: true, cond: "False/EndpointsUnhealthy"},
		{name: "in a fleet larger than K, checkers off the endpoint's panel do not vote: six see it down, in",
			checkers: fleet(0, 6, 0), cond: "True/Healthy"},
		{name: "two of the three checkers on its panel see it down: out, whatever the other six say",
			checkers: fleet(2, 0, 0), wantOut: true, cond: "False/EndpointsUnhealthy"},
		{name: "one of its panel sees it down, with all six others: in",
			checkers: fleet(1, 6, 0), cond: "True/Healthy"},
		{name: "two of its panel stale: the verdict stands, though six fresh checkers off the panel see it down",
			checkers:  fleet(1, 6, 2),
			published: publishedWith(t, east1, east2, eu), cond: "True/Healthy"},
		{name: "every endpoint down: all stay in the global name, fail open",
			checkers: []publish.Checker{view("a", fresh, false, key, "ns/web/c1", "ns/web/c3"), view("b", fresh, false, key, "ns/web/c1", "ns/web/c3")},
			wantOut:  true, cond: "False/NoEndpointHealthy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := observation{
				key: types.NamespacedName{Namespace: "ns", Name: "web"}, names: publish.NewNames("fed", "example.com", "ns", "web"),
				cfg: serviceconfig.Config{TTL: publish.DefaultTTL}, joined: joinedClusters(east1, east2, eu), placed: map[string]bool{"c1": true, "c2": true, "c3": true},
				published: tt.published, members: serving, health: publish.NewHealth(tt.checkers, time.Minute),
			}
			d, err := decide(obs)
			st := d.status
			if err != nil {
				t.Fatal(err)
			}
			got := render(t, d.endpoints, d.clusters)
			failOpen := tt.cond == "False/NoEndpointHealthy"
			if inGlobal := slices.Contains(got, "web.ns.fed.svc.example.com A [c2] 127.2.0.1"); inGlobal != (!tt.wantOut || failOpen) {
				t.Errorf("c2 in the global name: %v\n  %s", inGlobal, strings.Join(got, "\n  "))
			}
			if !slices.Contains(got, "c2.web.ns.fed.svc.example.com A [c2] 127.2.0.1") {
				t.Error("c2 lost its own name")
			}
			if c := d.clusters[1]; c.Name != "c2" || c.Unhealthy != tt.wantOut {
				t.Errorf("table row %+v, want c2 unhealthy=%v (the verdict kept for the next leader)", c, tt.wantOut)
			}
			svc := testService()
			st.apply(svc)
			cond := ""
			for _, c := range svc.Status.Conditions {
				if c.Type == kfedv1alpha1.ConditionHealthy {
					cond = string(c.Status) + "/" + c.Reason
					if c.Status == "False" && !strings.Contains(c.Message, "c2 (") {
						t.Errorf("condition does not name the endpoint that is out: %s", c.Message)
					}
				}
			}
			if cond != tt.cond {
				t.Errorf("%s = %q, want %q", kfedv1alpha1.ConditionHealthy, cond, tt.cond)
			}
		})
	}
}

func TestDecideWritesWhereEachClusterIs(t *testing.T) {
	onPrem := dnsendpoint.Cluster{Name: "c4", Region: "basement", Zones: []string{"rack-1"}, Addresses: ips("127.4.0.1"), Weight: 1, Ports: []dnsendpoint.Port{web}}
	joined := joinedClusters(east1, east2, eu, onPrem)
	joined["c1"].Spec.Location = &kfedv1alpha1.GeoLocation{Latitude: "40.71", Longitude: "-74.01"}
	// c2 was published with a location it no longer has: the Cluster is
	// what counts.
	stale := east2
	stale.Location = &geo.Point{Latitude: 1, Longitude: 1}
	obs := observation{
		names: publish.NewNames("fed", "example.com", "ns", "web"), cfg: serviceconfig.Config{TTL: publish.DefaultTTL}, joined: joined,
		placed: map[string]bool{"c1": true, "c2": true, "c3": true, "c4": true},
		members: map[string]memberCopy{"c1": {outcome: publish.Serving, row: east1}, "c2": {outcome: publish.Serving, row: stale},
			"c3": {outcome: publish.Serving, row: eu}, "c4": {outcome: publish.Serving, row: onPrem}},
	}
	d, err := decide(obs)
	if err != nil {
		t.Fatal(err)
	}
	if d.proximity {
		t.Error("a Service routed by weight (the default) is marked for proximity")
	}
	obs.cfg.Routing = serviceconfig.RoutingProximity
	if d, err := decide(obs); err != nil || !d.proximity {
		t.Errorf("a Service routed by proximity is not marked for it (%v)", err)
	}
	want := map[string]*geo.Point{
		"c1": {Latitude: 40.71, Longitude: -74.01}, // its spec.location
		"c2": {Latitude: 33.20, Longitude: -80.01}, // us-east1 in the region table
		"c3": {Latitude: 50.45, Longitude: 3.82},   // europe-west1
		"c4": nil,                                  // a region the table does not know
	}
	for _, c := range d.clusters {
		w, ok := want[c.Name]
		if !ok {
			t.Errorf("unexpected cluster %s", c.Name)
			continue
		}
		if (w == nil) != (c.Location == nil) || (w != nil && *w != *c.Location) {
			t.Errorf("cluster %s location %v, want %v", c.Name, c.Location, w)
		}
	}
	// The table carries it to readers.
	obj := &extdnsv1alpha1.DNSEndpoint{}
	dnsendpoint.SetClusters(obj, d.clusters)
	table, err := dnsendpoint.ReadClusters(obj)
	if err != nil {
		t.Fatal(err)
	}
	if l := table["c3"].Location; l == nil || *l != *want["c3"] {
		t.Errorf("c3 reads back at %v", l)
	}
}
