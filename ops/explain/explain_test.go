package explain

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/internal/geo"
	"github.com/kfed-io/kfed/policy/failover"
)

var names = publish.NewNames("dev", "kfed.test", "default", "demo")

func shard(name, region, zone, addr string, weight int) dnsendpoint.Cluster {
	return dnsendpoint.Cluster{Name: name, Region: region, Zones: []string{zone}, Weight: weight,
		Addresses: []netip.Addr{netip.MustParseAddr(addr)}, ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.0." + addr[len(addr)-1:])},
		Ports: []dnsendpoint.Port{{Name: "http", Protocol: "TCP", Port: 8080}}}
}

// demo is the DNSEndpoint the services controller writes for default/demo
// with shards, as publish builds it, with annotations.
func demo(t *testing.T, annotations map[string]string, serving map[string]bool, shards ...dnsendpoint.Cluster) extdnsv1alpha1.DNSEndpoint {
	t.Helper()
	in := publish.Input{Names: names, Clusters: shards, Serving: serving,
		Regions: []string{"us-east1", "europe-west1"}, Zones: []string{"us-east1-b/us-east1", "us-east1-c/us-east1", "europe-west1-b/europe-west1"}}
	eps, table, err := publish.Endpoints(in)
	if err != nil {
		t.Fatal(err)
	}
	ep := extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo", Generation: 4, Labels: dnsendpoint.Selector("dev"), Annotations: annotations},
		Spec:       extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps},
		Status:     extdnsv1alpha1.DNSEndpointStatus{Publishers: []extdnsv1alpha1.PublisherStatus{{Provider: "rfc2136", ObservedGeneration: 4}}},
	}
	dnsendpoint.SetClusters(&ep, table)
	return ep
}

// last draws the last candidate: a deterministic answer order.
func last(n int) int { return n - 1 }

func addresses(answer []string) []string {
	var out []string
	for _, a := range answer {
		f := strings.Fields(a)
		out = append(out, f[len(f)-1])
	}
	return out
}

func TestExplainSaysWhatThePluginAnswersAndWhy(t *testing.T) {
	c1 := shard("cluster-1", "us-east1", "us-east1-b", "127.0.1.1", 1)
	c2 := shard("cluster-2", "us-east1", "us-east1-c", "127.0.1.2", 2)
	c3 := shard("cluster-3", "europe-west1", "europe-west1-b", "127.0.1.3", 1)
	down := c2
	down.Unhealthy = true
	drained, drainedDown := c1, c3
	drained.Drained = true
	drainedDown.Drained, drainedDown.Unhealthy = true, true
	proximity := map[string]string{dnsendpoint.AnnotationRouting: dnsendpoint.RoutingProximity}
	tokyo := &geo.Point{Latitude: 35.68, Longitude: 139.69}
	newYork := &geo.Point{Latitude: 40.71, Longitude: -74.01}
	// Three checkers; checker-b finds cluster-2 down, checker-c is stale.
	health := publish.NewHealth([]publish.Checker{
		{Name: "checker-a", Age: time.Second, Unhealthy: map[string]string{"default/demo/cluster-2": "connection refused"}},
		{Name: "checker-b", Age: time.Second, Unhealthy: map[string]string{"default/demo/cluster-2": "connection refused"}},
		{Name: "checker-c", Age: time.Hour},
	}, 0)
	failed := demo(t, map[string]string{dnsendpoint.AnnotationFailover: failover.State{Active: "europe-west1"}.Encode()},
		map[string]bool{"cluster-3": true}, c1, c2, c3)

	tests := []struct {
		name   string
		q      Query
		eps    []extdnsv1alpha1.DNSEndpoint
		owner  map[string]string
		health publish.Health
		// want are the answer's addresses with every draw taking the last
		// candidate; has are phrases the text must hold.
		want []string
		has  []string
	}{
		{"inside cluster-1: its own cluster IP first, then its region, then Europe",
			Query{Name: names.Global(), Type: dns.TypeA, From: "cluster-1"}, []extdnsv1alpha1.DNSEndpoint{demo(t, proximity, nil, c1, c2, c3)}, nil, publish.Health{},
			[]string{"10.96.0.1", "127.0.1.2", "127.0.1.3"},
			[]string{"cluster-1's CoreDNS", "#1 cluster-1 10.96.0.1: this CoreDNS's own cluster, first, by its cluster IPs",
				"#2 cluster-2 127.0.1.2: own region, weight 2", "#3 cluster-3 127.0.1.3: elsewhere", "no health checkers",
				"provider rfc2136 has the latest records"}},
		{"at the edge from Tokyo: Europe first, by distance",
			Query{Name: names.Global(), Type: dns.TypeA, Subnet: netip.MustParsePrefix("203.0.113.0/24"), Location: tokyo},
			[]extdnsv1alpha1.DNSEndpoint{demo(t, proximity, nil, c1, c2, c3)}, map[string]string{kfedv1alpha1.AnnotationRouting: "proximity"}, publish.Health{},
			[]string{"127.0.1.3", "127.0.1.2", "127.0.1.1"},
			[]string{"client in 203.0.113.0/24, placed by GeoIP at 35.68, 139.69", "routing: proximity", "#1 cluster-3 127.0.1.3: 9507 km from the client",
				"#2 cluster-1 127.0.1.1: 11314 km from the client, weight 1, drawn by weight"}},
		{"at the edge from New York: us-east1 first, drawn by weight",
			Query{Name: names.Global(), Type: dns.TypeA, Subnet: netip.MustParsePrefix("192.0.2.0/24"), Location: newYork},
			[]extdnsv1alpha1.DNSEndpoint{demo(t, proximity, nil, c1, c2, c3)}, nil, publish.Health{},
			[]string{"127.0.1.2", "127.0.1.1", "127.0.1.3"}, nil},
		{"a name routed by weight ignores the client's place",
			Query{Name: names.Global(), Type: dns.TypeA, Subnet: netip.MustParsePrefix("203.0.113.0/24"), Location: tokyo},
			[]extdnsv1alpha1.DNSEndpoint{demo(t, nil, nil, c1, c2, c3)}, nil, publish.Health{},
			[]string{"127.0.1.3", "127.0.1.2", "127.0.1.1"}, []string{"routing: weighted", "#1 cluster-1 127.0.1.1: elsewhere, weight 1, drawn"}},
		{"an unhealthy cluster is left out, with every checker's vote",
			Query{Name: names.Global(), Type: dns.TypeA, From: "cluster-3"}, []extdnsv1alpha1.DNSEndpoint{demo(t, nil, nil, c1, down, c3)}, nil, health,
			[]string{"10.96.0.3", "127.0.1.1"},
			[]string{"cluster-2 (us-east1 us-east1-c) weight 2, unhealthy: 2 of 2 fresh checkers see it down",
				"votes: checker-a down, checker-b down, checker-c stale (not counted)", "unhealthy by the checkers' verdict: left out of the shared names, kept at its own name (a checker says: connection refused)"}},
		{"a drained cluster leaves every name while another can answer",
			Query{Name: names.Global(), Type: dns.TypeA, From: "cluster-1"}, []extdnsv1alpha1.DNSEndpoint{demo(t, nil, nil, drained, c2, c3)}, nil, publish.Health{},
			[]string{"127.0.1.2", "127.0.1.3"},
			[]string{"cluster-1 (us-east1 us-east1-b) weight 1, healthy, drained", "drained (kfed drain): out of every name while another cluster can answer"}},
		{"a name only drained clusters can answer keeps them",
			Query{Name: names.Global(), Type: dns.TypeA}, []extdnsv1alpha1.DNSEndpoint{demo(t, nil, nil, drained, drainedDown)}, nil, publish.Health{},
			[]string{"127.0.1.1"},
			[]string{"drained (kfed drain), but kept: no other cluster that is neither drained nor down can answer"}},
		{"a region without a serving cluster falls back to the global name",
			Query{Name: names.Region("us-east1"), Type: dns.TypeA}, []extdnsv1alpha1.DNSEndpoint{failed}, map[string]string{
				kfedv1alpha1.AnnotationRouting: "failover", kfedv1alpha1.AnnotationFailoverOrder: "us-east1,europe-west1", kfedv1alpha1.AnnotationFailoverPin: "europe-west1"},
			publish.Health{},
			[]string{names.Global() + ".", "127.0.1.3"},
			[]string{"alias to " + names.Global(), "routing: failover, failover order us-east1, europe-west1, pinned to europe-west1, active place europe-west1",
				"a passive place: the failover order's active place is europe-west1", "2. " + names.Global()}},
		{"SRV names each serving cluster with its weight",
			Query{Name: names.SRV("http", "TCP"), Type: dns.TypeSRV}, []extdnsv1alpha1.DNSEndpoint{demo(t, nil, nil, c1, c3)}, nil, publish.Health{},
			[]string{names.Cluster("cluster-1") + ".", names.Cluster("cluster-3") + "."},
			[]string{"(additional) " + names.Cluster("cluster-1") + ".\t30\tIN\tA\t127.0.1.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := World{Federation: "dev", Trusted: []string{"kfed-system"}, Endpoints: tt.eps, Health: tt.health}
			if tt.owner != nil {
				w.Owner = func(ep *extdnsv1alpha1.DNSEndpoint) (Owner, bool) {
					return Owner{Kind: "Service", Namespace: ep.Namespace, Name: ep.Name, Annotations: tt.owner}, true
				}
			}
			e, err := Explain(tt.q, w, last)
			if err != nil {
				t.Fatal(err)
			}
			if got := addresses(e.Answer); !slices.Equal(got, tt.want) {
				t.Errorf("answer %v, want %v", got, tt.want)
			}
			text := e.String()
			for _, h := range tt.has {
				if !strings.Contains(text, h) {
					t.Errorf("the explanation does not say %q:\n%s", h, text)
				}
			}
		})
	}
}

func TestExplainNamesWhatIsWrong(t *testing.T) {
	c1 := shard("cluster-1", "us-east1", "us-east1-b", "127.0.1.1", 1)
	theirs := demo(t, nil, nil, c1)
	theirs.Namespace = "other" // claims default's names
	tests := []struct {
		name    string
		q       Query
		eps     []extdnsv1alpha1.DNSEndpoint
		errHas  string
		rcode   string
		refused string
	}{
		{"a name no DNSEndpoint has", Query{Name: "nope.kfed.test", Type: dns.TypeA}, nil, "no DNSEndpoint has the name", "", ""},
		{"a type explain does not answer", Query{Name: names.Global(), Type: dns.TypeTXT}, nil, "explain answers A, AAAA and SRV", "", ""},
		{"not a name", Query{Name: "a..b", Type: dns.TypeA}, nil, "is not a DNS name", "", ""},
		{"another namespace's name is refused, and not served", Query{Name: names.Global(), Type: dns.TypeA},
			[]extdnsv1alpha1.DNSEndpoint{theirs}, "", "NXDOMAIN", "other/demo: A " + names.Global()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Explain(tt.q, World{Federation: "dev", Endpoints: tt.eps}, last)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("error %v, want one saying %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Rcode != tt.rcode || len(e.Refused) != 1 || !strings.HasPrefix(e.Refused[0], tt.refused) {
				t.Errorf("rcode %s, refused %q, want %s and %q", e.Rcode, e.Refused, tt.rcode, tt.refused)
			}
		})
	}
	if _, err := Explain(Query{Name: "nope.kfed.test", Type: dns.TypeA}, World{}, last); !errors.Is(err, ErrNoSuchName) {
		t.Errorf("error %v, want ErrNoSuchName", err)
	}
}

// At the edge, a subnet's answer among weights that follow loads is the
// one its own draw gives it, as the plugin's: the same whatever the random
// draw would take, and spread over the clusters by weight across subnets.
func TestExplainGivesASubnetItsOwnDraw(t *testing.T) {
	c1 := shard("cluster-1", "us-east1", "us-east1-b", "127.0.1.1", 50)
	c2 := shard("cluster-2", "us-east1", "us-east1-c", "127.0.1.2", 50)
	c3 := shard("cluster-3", "europe-west1", "europe-west1-b", "127.0.1.3", 50)
	for _, c := range []*dnsendpoint.Cluster{&c1, &c2, &c3} {
		c.Load = new(0.5)
	}
	w := World{Federation: "dev", Endpoints: []extdnsv1alpha1.DNSEndpoint{demo(t, nil, nil, c1, c2, c3)}}
	first := func(int) int { return 0 }
	firsts := map[string]int{}
	for i := range 60 {
		q := Query{Name: names.Global(), Type: dns.TypeA, Subnet: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i), 0}), 24)}
		a, err := Explain(q, w, first)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Explain(q, w, last)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Answer, b.Answer) {
			t.Fatalf("subnet %s: answer %v with one draw, %v with another", q.Subnet, a.Answer, b.Answer)
		}
		firsts[a.Answer[0]]++
	}
	if len(firsts) != 3 {
		t.Errorf("firsts %v over 60 subnets, want each of the three clusters", firsts)
	}
}
