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
	three := joined(cluster("cluster-1", "us-east1", "us-east1-b"), cluster("cluster-2", "us-east1", "us-east1-c"), cluster("cluster-3", "europe-west1", "europe-west1-b"))
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
			o: observation{verdicts: shop, placed: joined(cluster("cluster-1", ""), cluster("cluster-2", "")), ttl: 30, members: map[string]memberCopy{
				"cluster-1": serving("127.1.200.1"), "cluster-2": serving("::1"),
			}},
			records:  []string{"shop.example.com A 127.1.200.1", "shop.example.com AAAA ::1"},
			clusters: []string{"cluster-1", "cluster-2"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published"},
		},
		{
			name: "refused hostname is not published and the condition says why",
			o: observation{verdicts: []tenancy.Verdict{{Hostname: "shop.example.com"}, {Hostname: "*.example.com", Reason: "*.example.com is a wildcard"}},
				placed: joined(cluster("cluster-1", "")), ttl: 30, members: map[string]memberCopy{"cluster-1": serving("127.1.200.1")}},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished False HostnameRefused"},
		},
		{
			name: "every hostname refused: no records",
			o: observation{verdicts: []tenancy.Verdict{{Hostname: "shop.example.com", Reason: "held by namespace a"}},
				placed: joined(cluster("cluster-1", "")), members: map[string]memberCopy{"cluster-1": serving("127.1.200.1")}},
			conds: []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished False HostnameRefused"},
		},
		{
			name: "cluster not Ready keeps the addresses it had",
			o: observation{verdicts: shop, placed: joined(cluster("cluster-1", ""), cluster("cluster-2", "")), ttl: 30,
				members:  map[string]memberCopy{"cluster-1": serving("127.1.200.1")},
				endpoint: publishedRows(dnsendpoint.Cluster{Name: "cluster-2", Addresses: addrs("127.2.200.7")})},
			records:  []string{"shop.example.com A 127.1.200.1,127.2.200.7"},
			clusters: []string{"cluster-1", "cluster-2"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published"},
		},
		{
			name: "cluster its inventory withdrew (ControlPlaneHealthy=False) leaves at once",
			o: observation{verdicts: shop, placed: joined(cluster("cluster-1", ""), withdrawn(cluster("cluster-2", ""))), ttl: 30,
				members:  map[string]memberCopy{"cluster-1": serving("127.1.200.1")},
				endpoint: publishedRows(dnsendpoint.Cluster{Name: "cluster-2", Addresses: addrs("127.2.200.7")})},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published"},
		},
		{
			name: "copy that could not be written keeps its addresses and the problem is told",
			o: observation{verdicts: shop, placed: joined(cluster("cluster-1", "")), ttl: 30,
				members:  map[string]memberCopy{"cluster-1": {outcome: publish.WriteFailed, problem: "cluster-1 rejected it"}},
				endpoint: publishedRows(dnsendpoint.Cluster{Name: "cluster-1", Addresses: addrs("127.1.200.1")})},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed False CopyProblem", "kfed.io/HostnamesPublished True Published"},
		},
		{
			name: "conflicting member object: that cluster is not published",
			o: observation{verdicts: shop, placed: joined(cluster("cluster-1", ""), cluster("cluster-2", "")), ttl: 30,
				members: map[string]memberCopy{"cluster-1": serving("127.1.200.1"), "cluster-2": {outcome: publish.LeftAlone, problem: "kfed did not create it"}}},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed False CopyProblem", "kfed.io/HostnamesPublished True Published"},
		},
		{
			name:  "no copy has an address yet: nothing published, waiting",
			o:     observation{verdicts: shop, placed: joined(cluster("cluster-1", "")), members: map[string]memberCopy{"cluster-1": {outcome: publish.Waiting}}},
			conds: []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished False WaitingForAddresses"},
		},
		{
			name: "placement naming an unknown cluster is told",
			o: observation{verdicts: shop, placed: joined(cluster("cluster-1", "")), unknown: []string{"cluster-9"}, ttl: 30,
				members: map[string]memberCopy{"cluster-1": serving("127.1.200.1")}},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed False CopyProblem", "kfed.io/HostnamesPublished True Published"},
		},
		{
			name: "cluster the checkers find down leaves the hostname and keeps its row",
			o: observation{verdicts: shop, placed: three, ttl: 30, health: checkersFinding(map[string]string{"cluster-2": "connection refused"}),
				members: map[string]memberCopy{"cluster-1": serving("127.1.200.1"), "cluster-2": serving("127.2.200.1"), "cluster-3": serving("127.3.200.1")}},
			records:  []string{"shop.example.com A 127.1.200.1,127.3.200.1"},
			clusters: []string{"cluster-1", "cluster-2", "cluster-3"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published", "kfed.io/Healthy False EndpointsUnhealthy"},
		},
		{
			name: "no cluster up: the hostname keeps them all (fail open)",
			o: observation{verdicts: shop, placed: joined(cluster("cluster-1", ""), cluster("cluster-2", "")), ttl: 30,
				health:  checkersFinding(map[string]string{"cluster-1": "timeout", "cluster-2": "timeout"}),
				members: map[string]memberCopy{"cluster-1": serving("127.1.200.1"), "cluster-2": serving("127.2.200.1")}},
			records:  []string{"shop.example.com A 127.1.200.1,127.2.200.1"},
			clusters: []string{"cluster-1", "cluster-2"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published", "kfed.io/Healthy False NoEndpointHealthy"},
		},
		{
			name: "every cluster up under checkers: healthy",
			o: observation{verdicts: shop, placed: joined(cluster("cluster-1", "")), ttl: 30, health: checkersFinding(nil),
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
			o: observation{verdicts: shop, placed: drainedIn(joined(cluster("cluster-1", "")), "cluster-1"), ttl: 30,
				members: map[string]memberCopy{"cluster-1": serving("127.1.200.1")}},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published", "kfed.io/Drained False OnlyDrainedClusters"},
		},
		{
			name: "a drained cluster stays while the others are found down",
			o: observation{verdicts: shop, placed: drainedIn(joined(cluster("cluster-1", ""), cluster("cluster-2", "")), "cluster-1"), ttl: 30,
				health:  checkersFinding(map[string]string{"cluster-2": "timeout"}),
				members: map[string]memberCopy{"cluster-1": serving("127.1.200.1"), "cluster-2": serving("127.2.200.1")}},
			records:  []string{"shop.example.com A 127.1.200.1"},
			clusters: []string{"cluster-1", "cluster-2"},
			conds:    []string{"kfed.io/Valid True Valid", "kfed.io/Placed True Placed", "kfed.io/HostnamesPublished True Published", "kfed.io/Healthy False EndpointsUnhealthy", "kfed.io/Drained False OnlyDrainedClusters"},
		},
		{
			name: "each DNS provider has its own condition",
			o: observation{verdicts: shop, placed: joined(cluster("cluster-1", "")), ttl: 30,
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
			o:     observation{placed: joined(cluster("cluster-1", "")), members: map[string]memberCopy{"cluster-1": serving("127.1.200.1")}},
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

// cluster is a joined Cluster in region and zones.
func cluster(name, region string, zones ...string) *kfedv1alpha1.Cluster {
	return &kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kfedv1alpha1.ClusterSpec{Region: region, Zones: zones}}
}

// withdrawn is cl as its inventory withdrew it (ControlPlaneHealthy=False).
func withdrawn(cl *kfedv1alpha1.Cluster) *kfedv1alpha1.Cluster {
	cl.Status.Conditions = []metav1.Condition{{Type: kfedv1alpha1.ClusterReady, Status: metav1.ConditionFalse, Reason: kfedv1alpha1.ReasonControlPlaneUnhealthy}}
	return cl
}

func joined(cls ...*kfedv1alpha1.Cluster) map[string]*kfedv1alpha1.Cluster {
	out := map[string]*kfedv1alpha1.Cluster{}
	for _, cl := range cls {
		out[cl.Name] = cl
	}
	return out
}

// drainedIn is clusters with the named ones drained.
func drainedIn(clusters map[string]*kfedv1alpha1.Cluster, names ...string) map[string]*kfedv1alpha1.Cluster {
	out := map[string]*kfedv1alpha1.Cluster{}
	for n, cl := range clusters {
		out[n] = cl.DeepCopy()
		out[n].Spec.Drained = slices.Contains(names, n)
	}
	return out
}

// publishedRows is a DNSEndpoint published with the cluster table rows.
func publishedRows(rows ...dnsendpoint.Cluster) *extdnsv1alpha1.DNSEndpoint {
	ep := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
	dnsendpoint.SetClusters(ep, rows)
	return ep
}

// checkersFinding is the view of one fresh checker that finds the
// endpoints of the clusters down named (key: cluster, value: reason) down:
// a quorum of one.
func checkersFinding(down map[string]string) publish.Health {
	c := publish.Checker{Name: "kfed-system/checker", Cluster: "cluster-1", Unhealthy: map[string]string{}}
	for cluster, reason := range down {
		c.Unhealthy[kfedv1alpha1.EndpointKey("", "", cluster)] = reason
	}
	return publish.NewHealth([]publish.Checker{c}, 0)
}

// TestDecideTable: the cluster table carries what the plugin and the
// health checkers read of a Service's: place, weight, addresses, ports.
func TestDecideTable(t *testing.T) {
	d := decide(observation{
		verdicts: []tenancy.Verdict{{Hostname: "shop.example.com"}}, ports: []int32{80, 8443}, ttl: 30,
		placed:  joined(cluster("cluster-1", "us-east1", "us-east1-b")),
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
