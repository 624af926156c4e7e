package gateways

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/policy/tenancy"
)

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

func TestDecide(t *testing.T) {
	three := map[string]place{
		"cluster-1": {region: "us-east1", zones: []string{"us-east1-b"}},
		"cluster-2": {region: "us-east1", zones: []string{"us-east1-c"}},
		"cluster-3": {region: "europe-west1", zones: []string{"europe-west1-b"}},
	}
	serving := func(a ...string) memberCopy { return memberCopy{outcome: publish.Serving, addrs: addrs(a...)} }
	shop := []tenancy.Verdict{{Hostname: "shop.example.com"}}
	for _, tc := range []struct {
		name string
		o    observation
		// records: "name type target,target" per endpoint
		records  []string
		clusters []string
		// conds: "type status reason" per condition
		conds []string
	}{
		{
			name: "hostname is published with every cluster's address",
			o: observation{verdicts: shop, ports: []int32{80}, placed: three, ttl: 30, members: map[string]memberCopy{
				"cluster-1": serving("127.1.200.1"), "cluster-2": serving("127.2.200.1"), "cluster-3": serving("127.3.200.1"),
			}},
			records:  []string{"shop.example.com A 127.1.200.1,127.2.200.1,127.3.200.1"},
			clusters: []string{"cluster-1", "cluster-2", "cluster-3"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published"},
		},
		{
			name: "IPv6 addresses are published as AAAA beside A",
			o: observation{verdicts: shop, placed: map[string]place{"cluster-1": {}, "cluster-2": {}}, ttl: 30, members: map[string]memberCopy{
				"cluster-1": serving("127.1.200.1"), "cluster-2": serving("::1"),
			}},
			records:  []string{"shop.example.com A 127.1.200.1", "shop.example.com AAAA ::1"},
			clusters: []string{"cluster-1", "cluster-2"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published"},
		},
		{
			name: "refused hostname is not published and the condition says why",
			o: observation{verdicts: []tenancy.Verdict{{Hostname: "shop.example.com"}, {Hostname: "*.example.com", Reason: "*.example.com is a wildcard"}},
				placed: map[string]place{"cluster-1": {}}, ttl: 30, members: map[string]memberCopy{"cluster-1": serving("127.1.200.1")}},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished False HostnameRefused"},
		},
		{
			name: "every hostname refused: no records",
			o: observation{verdicts: []tenancy.Verdict{{Hostname: "shop.example.com", Reason: "held by namespace a"}},
				placed: map[string]place{"cluster-1": {}}, members: map[string]memberCopy{"cluster-1": serving("127.1.200.1")}},
			conds: []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished False HostnameRefused"},
		},
		{
			name: "cluster not Ready keeps the addresses it had",
			o: observation{verdicts: shop, placed: map[string]place{"cluster-1": {}, "cluster-2": {}}, ttl: 30,
				members:  map[string]memberCopy{"cluster-1": serving("127.1.200.1")},
				previous: dnsendpoint.Clusters{"cluster-2": {Name: "cluster-2", Addresses: addrs("127.2.200.7")}}},
			records:  []string{"shop.example.com A 127.1.200.1,127.2.200.7"},
			clusters: []string{"cluster-1", "cluster-2"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published"},
		},
		{
			name: "cluster its inventory withdrew (ControlPlaneHealthy=False) leaves at once",
			o: observation{verdicts: shop, placed: map[string]place{"cluster-1": {}, "cluster-2": {withdrawn: true}}, ttl: 30,
				members:  map[string]memberCopy{"cluster-1": serving("127.1.200.1")},
				previous: dnsendpoint.Clusters{"cluster-2": {Name: "cluster-2", Addresses: addrs("127.2.200.7")}}},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published"},
		},
		{
			name: "copy that could not be written keeps its addresses and the problem is told",
			o: observation{verdicts: shop, placed: map[string]place{"cluster-1": {}}, ttl: 30,
				members:  map[string]memberCopy{"cluster-1": {outcome: publish.WriteFailed, problem: "cluster-1 rejected it"}},
				previous: dnsendpoint.Clusters{"cluster-1": {Name: "cluster-1", Addresses: addrs("127.1.200.1")}}},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed False CopyProblem", "kfed.io/HostnamesPublished True Published"},
		},
		{
			name: "conflicting member object: that cluster is not published",
			o: observation{verdicts: shop, placed: map[string]place{"cluster-1": {}, "cluster-2": {}}, ttl: 30,
				members: map[string]memberCopy{"cluster-1": serving("127.1.200.1"), "cluster-2": {outcome: publish.LeftAlone, problem: "kfed did not create it"}}},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed False CopyProblem", "kfed.io/HostnamesPublished True Published"},
		},
		{
			name:  "no copy has an address yet: nothing published, waiting",
			o:     observation{verdicts: shop, placed: map[string]place{"cluster-1": {}}, members: map[string]memberCopy{"cluster-1": {outcome: publish.Waiting}}},
			conds: []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished False WaitingForAddresses"},
		},
		{
			name: "placement naming an unknown cluster is told",
			o: observation{verdicts: shop, placed: map[string]place{"cluster-1": {}}, unknown: []string{"cluster-9"}, ttl: 30,
				members: map[string]memberCopy{"cluster-1": serving("127.1.200.1")}},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed False CopyProblem", "kfed.io/HostnamesPublished True Published"},
		},
		{
			name: "cluster the checkers find down leaves the hostname and keeps its row",
			o: observation{verdicts: shop, placed: three, ttl: 30, judged: true, unhealthy: map[string]string{"cluster-2": "connection refused"},
				members: map[string]memberCopy{"cluster-1": serving("127.1.200.1"), "cluster-2": serving("127.2.200.1"), "cluster-3": serving("127.3.200.1")}},
			records:  []string{"shop.example.com A 127.1.200.1,127.3.200.1"},
			clusters: []string{"cluster-1", "cluster-2", "cluster-3"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published", "kfed.io/Healthy False EndpointsUnhealthy"},
		},
		{
			name: "no cluster up: the hostname keeps them all (fail open)",
			o: observation{verdicts: shop, placed: map[string]place{"cluster-1": {}, "cluster-2": {}}, ttl: 30, judged: true,
				unhealthy: map[string]string{"cluster-1": "timeout", "cluster-2": "timeout"},
				members:   map[string]memberCopy{"cluster-1": serving("127.1.200.1"), "cluster-2": serving("127.2.200.1")}},
			records:  []string{"shop.example.com A 127.1.200.1,127.2.200.1"},
			clusters: []string{"cluster-1", "cluster-2"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published", "kfed.io/Healthy False NoEndpointHealthy"},
		},
		{
			name: "every cluster up under checkers: healthy",
			o: observation{verdicts: shop, placed: map[string]place{"cluster-1": {}}, ttl: 30, judged: true,
				members: map[string]memberCopy{"cluster-1": serving("127.1.200.1")}},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published", "kfed.io/Healthy True Healthy"},
		},
		{
			name: "a drained cluster leaves the hostname and keeps its row",
			o: observation{verdicts: shop, placed: drainedIn(three, "cluster-1"), ttl: 30, members: map[string]memberCopy{
				"cluster-1": serving("127.1.200.1"), "cluster-2": serving("127.2.200.1"), "cluster-3": serving("127.3.200.1"),
			}},
			records:  []string{"shop.example.com A 127.2.200.1,127.3.200.1"},
			clusters: []string{"cluster-1", "cluster-2", "cluster-3"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published", "kfed.io/Drained True DrainedClustersOut"},
		},
		{
			name: "an object only in drained clusters keeps them and says so",
			o: observation{verdicts: shop, placed: drainedIn(map[string]place{"cluster-1": {}}, "cluster-1"), ttl: 30,
				members: map[string]memberCopy{"cluster-1": serving("127.1.200.1")}},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published", "kfed.io/Drained False OnlyDrainedClusters"},
		},
		{
			name: "a drained cluster stays while the others are found down",
			o: observation{verdicts: shop, placed: drainedIn(map[string]place{"cluster-1": {}, "cluster-2": {}}, "cluster-1"), ttl: 30, judged: true,
				unhealthy: map[string]string{"cluster-2": "timeout"},
				members:   map[string]memberCopy{"cluster-1": serving("127.1.200.1"), "cluster-2": serving("127.2.200.1")}},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1", "cluster-2"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published", "kfed.io/Healthy False EndpointsUnhealthy", "kfed.io/Drained False OnlyDrainedClusters"},
		},
		{
			name: "each DNS provider has its own condition",
			o: observation{verdicts: shop, placed: map[string]place{"cluster-1": {}}, ttl: 30,
				members: map[string]memberCopy{"cluster-1": serving("127.1.200.1")},
				endpoint: &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: extdnsv1alpha1.DNSEndpointStatus{
					Publishers: []extdnsv1alpha1.PublisherStatus{{Provider: "rfc2136", ObservedGeneration: 2}, {Provider: "route53", ObservedGeneration: 1, Error: "InvalidChangeBatch"}},
				}}},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1"},
			conds: []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published",
				"kfed.io/Programmed-rfc2136 True Programmed", "kfed.io/Programmed-route53 False ProviderError"},
		},
		{
			name:  "object without hostnames publishes nothing and says so",
			o:     observation{placed: map[string]place{"cluster-1": {}}, members: map[string]memberCopy{"cluster-1": serving("127.1.200.1")}},
			conds: []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished False NoHostname"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(tc.o)
			if got := records(d.endpoints); !slices.Equal(got, tc.records) {
				t.Errorf("records %q, want %q", got, tc.records)
			}
			var names []string
			for _, c := range d.clusters {
				names = append(names, c.Name)
			}
			if !slices.Equal(names, tc.clusters) {
				t.Errorf("cluster table %v, want %v", names, tc.clusters)
			}
			var conds []string
			for _, c := range conditions(d, len(tc.o.placed), 1) {
				conds = append(conds, c.Type+" "+string(c.Status)+" "+c.Reason)
			}
			if !slices.Equal(conds, tc.conds) {
				t.Errorf("conditions %q, want %q", conds, tc.conds)
			}
		})
	}
}

// drainedIn is places with the named clusters drained.
func drainedIn(places map[string]place, names ...string) map[string]place {
	out := maps.Clone(places)
	for _, n := range names {
		p := out[n]
		p.drained = true
		out[n] = p
	}
	return out
}

// TestDecideTable: the cluster table carries what the plugin and the
// health checkers read of a Service's: place, weight, addresses, ports.
func TestDecideTable(t *testing.T) {
	d := decide(observation{
		verdicts: []tenancy.Verdict{{Hostname: "shop.example.com"}}, ports: []int32{80, 8443}, ttl: 30,
		placed:  map[string]place{"cluster-1": {region: "us-east1", zones: []string{"us-east1-b"}}},
		members: map[string]memberCopy{"cluster-1": {outcome: publish.Serving, addrs: addrs("127.1.200.2", "127.1.200.1")}},
	})
	obj := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}, Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: d.endpoints}}
	dnsendpoint.SetClusters(obj, d.clusters)
	table, err := dnsendpoint.ReadClusters(obj)
	if err != nil {
		t.Fatal(err)
	}
	c := table["cluster-1"]
	if c == nil || c.Region != "us-east1" || !slices.Equal(c.Zones, []string{"us-east1-b"}) || c.Weight != 1 ||
		!slices.Equal(c.Addresses, addrs("127.1.200.1", "127.1.200.2")) || len(c.Ports) != 2 || c.Ports[0].Port != 80 {
		t.Fatalf("cluster table row %+v", c)
	}
	if d.endpoints[0].RecordTTL != 30 {
		t.Errorf("TTL %d", d.endpoints[0].RecordTTL)
	}
}

func records(eps []extdnsv1alpha1.Endpoint) []string {
	var out []string
	for _, e := range eps {
		out = append(out, e.DNSName+" "+e.RecordType+" "+strings.Join(e.Targets, ","))
	}
	return out
}

func TestHostnamesOfGateway(t *testing.T) {
	gw := federatedGatewayFixture()
	routes := routesFixture()
	hosts, ports := hostnamesOf(gw, routes)
	slices.Sort(hosts)
	want := []string{"api.example.com", "grpc.example.com", "shop.example.com", "www.example.com"}
	if !slices.Equal(hosts, want) {
		t.Errorf("hostnames %v, want %v", hosts, want)
	}
	if !slices.Equal(ports, []int32{80, 443}) {
		t.Errorf("ports %v", ports)
	}
}

func TestProbeSettingsAskForAHostname(t *testing.T) {
	published := []string{"shop.example.com", "www.shop.example.com"}
	tests := []struct {
		name        string
		annotations map[string]string
		want        map[string]string
	}{
		{"no settings: a TCP connect, nothing to write", nil, nil},
		{"an http check asks for the first hostname",
			map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthPath: "/healthz"},
			map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthPath: "/healthz", kfedv1alpha1.AnnotationHealthHost: "shop.example.com"}},
		{"a host of the object's own is kept",
			map[string]string{kfedv1alpha1.AnnotationHealthCheck: "https", kfedv1alpha1.AnnotationHealthHost: "www.shop.example.com"},
			map[string]string{kfedv1alpha1.AnnotationHealthCheck: "https", kfedv1alpha1.AnnotationHealthHost: "www.shop.example.com"}},
		{"a tcp check asks for no host",
			map[string]string{kfedv1alpha1.AnnotationHealthInterval: "5s"},
			map[string]string{kfedv1alpha1.AnnotationHealthInterval: "5s"}},
	}
	for _, tt := range tests {
		if got := probeSettings(tt.annotations, published); !maps.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
