package publish

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

func ips(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// render shows records one a line, "name TYPE [cluster] targets", with the
// addresses of each name attributed to clusters through the cluster table,
// as every reader of the DNSEndpoint sees them.
func render(t *testing.T, eps []extdnsv1alpha1.Endpoint, table []dnsendpoint.Cluster) []string {
	t.Helper()
	obj := &extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps}}
	dnsendpoint.SetClusters(obj, table)
	clusters, err := dnsendpoint.ReadClusters(obj)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range eps {
		e := &eps[i]
		if e.SetIdentifier != "" || len(e.ProviderSpecific) > 0 {
			t.Errorf("%s %s has a set identifier or provider-specific properties, which ExternalDNS cannot read back", e.DNSName, e.RecordType)
		}
		if e.RecordType != "A" && e.RecordType != "AAAA" {
			out = append(out, e.DNSName+" "+e.RecordType+" "+strings.Join(e.Targets, ","))
			continue
		}
		groups, err := clusters.Groups(e)
		if err != nil {
			t.Errorf("%s %s: %v", e.DNSName, e.RecordType, err)
		}
		for _, g := range groups {
			line := e.DNSName + " " + e.RecordType
			if g.Cluster != nil {
				line += " [" + g.Cluster.Name + "]"
			}
			var addrs []string
			for _, a := range g.Addrs {
				addrs = append(addrs, a.String())
			}
			out = append(out, line+" "+strings.Join(addrs, ","))
		}
	}
	return out
}

var (
	web   = dnsendpoint.Port{Name: "web", Protocol: "TCP", Port: 80}
	east1 = dnsendpoint.Cluster{Name: "c1", Region: "us-east1", Zones: []string{"us-east1-b"}, Addresses: ips("127.1.0.1"), Weight: 1, Ports: []dnsendpoint.Port{web}}
	east2 = dnsendpoint.Cluster{Name: "c2", Region: "us-east1", Zones: []string{"us-east1-c"}, Addresses: ips("127.2.0.1"), Weight: 1, Ports: []dnsendpoint.Port{web}}
	eu    = dnsendpoint.Cluster{Name: "c3", Region: "europe-west1", Zones: []string{"europe-west1-b"}, Addresses: ips("127.3.0.1"), Weight: 2, Ports: []dnsendpoint.Port{web}}
	// all places of the three clusters above
	regions = []string{"us-east1", "europe-west1"}
	zones   = []string{"us-east1-b/us-east1", "us-east1-c/us-east1", "europe-west1-b/europe-west1"}
)

func TestEndpoints(t *testing.T) {
	names := NewNames("fed", "example.com", "ns", "web")
	tests := []struct {
		name   string
		in     Input
		want   []string
		errHas string
	}{
		{
			name: "three clusters in two regions get global, region, zone, cluster and SRV names",
			in:   Input{Names: names, Clusters: []dnsendpoint.Cluster{east1, east2, eu}, Regions: regions, Zones: zones},
			want: []string{
				"_web._tcp.web.ns.fed.svc.example.com SRV 0 1 80 c1.web.ns.fed.svc.example.com.,0 1 80 c2.web.ns.fed.svc.example.com.,0 2 80 c3.web.ns.fed.svc.example.com.",
				"c1.web.ns.fed.svc.example.com A [c1] 127.1.0.1",
				"c2.web.ns.fed.svc.example.com A [c2] 127.2.0.1",
				"c3.web.ns.fed.svc.example.com A [c3] 127.3.0.1",
				"web.ns.fed.svc.europe-west1-b.europe-west1.example.com A [c3] 127.3.0.1",
				"web.ns.fed.svc.europe-west1.example.com A [c3] 127.3.0.1",
				"web.ns.fed.svc.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.example.com A [c2] 127.2.0.1",
				"web.ns.fed.svc.example.com A [c3] 127.3.0.1",
				"web.ns.fed.svc.us-east1-b.us-east1.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.us-east1-c.us-east1.example.com A [c2] 127.2.0.1",
				"web.ns.fed.svc.us-east1.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.us-east1.example.com A [c2] 127.2.0.1",
			},
		},
		{
			name: "zone without endpoint answers CNAME to region, region without endpoint CNAME to global",
			in:   Input{Names: names, Clusters: []dnsendpoint.Cluster{east1}, Regions: regions, Zones: zones},
			want: []string{
				"_web._tcp.web.ns.fed.svc.example.com SRV 0 1 80 c1.web.ns.fed.svc.example.com.",
				"c1.web.ns.fed.svc.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.europe-west1-b.europe-west1.example.com CNAME web.ns.fed.svc.europe-west1.example.com",
				"web.ns.fed.svc.europe-west1.example.com CNAME web.ns.fed.svc.example.com",
				"web.ns.fed.svc.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.us-east1-b.us-east1.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.us-east1-c.us-east1.example.com CNAME web.ns.fed.svc.us-east1.example.com",
				"web.ns.fed.svc.us-east1.example.com A [c1] 127.1.0.1",
			},
		},
		{
			name: "no cluster with an endpoint leaves only fallbacks",
			in:   Input{Names: names, Regions: []string{"us-east1"}, Zones: []string{"us-east1-b/us-east1"}},
			want: []string{
				"web.ns.fed.svc.us-east1-b.us-east1.example.com CNAME web.ns.fed.svc.us-east1.example.com",
				"web.ns.fed.svc.us-east1.example.com CNAME web.ns.fed.svc.example.com",
			},
		},
		{
			name: "a cluster in two zones answers at both zone names",
			in: Input{Names: names, Regions: []string{"r"}, Zones: []string{"a/r", "b/r"},
				Clusters: []dnsendpoint.Cluster{{Name: "c1", Region: "r", Zones: []string{"a", "b"}, Addresses: ips("127.1.0.1"), Weight: 1}}},
			want: []string{
				"c1.web.ns.fed.svc.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.a.r.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.b.r.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.r.example.com A [c1] 127.1.0.1",
			},
		},
		{
			name: "IPv6-only cluster gets AAAA only; dual-stack both",
			in: Input{Names: names, Regions: []string{"r"}, Zones: []string{"z/r"}, Clusters: []dnsendpoint.Cluster{
				{Name: "v6", Region: "r", Zones: []string{"z"}, Addresses: ips("fd00::1"), Weight: 1},
				{Name: "ds", Region: "r", Zones: []string{"z"}, Addresses: ips("fd00::2", "127.9.0.1"), Weight: 1},
			}},
			want: []string{
				"ds.web.ns.fed.svc.example.com A [ds] 127.9.0.1",
				"ds.web.ns.fed.svc.example.com AAAA [ds] fd00::2",
				"v6.web.ns.fed.svc.example.com AAAA [v6] fd00::1",
				"web.ns.fed.svc.example.com A [ds] 127.9.0.1",
				"web.ns.fed.svc.example.com AAAA [ds] fd00::2",
				"web.ns.fed.svc.example.com AAAA [v6] fd00::1",
				"web.ns.fed.svc.r.example.com A [ds] 127.9.0.1",
				"web.ns.fed.svc.r.example.com AAAA [ds] fd00::2",
				"web.ns.fed.svc.r.example.com AAAA [v6] fd00::1",
				"web.ns.fed.svc.z.r.example.com A [ds] 127.9.0.1",
				"web.ns.fed.svc.z.r.example.com AAAA [ds] fd00::2",
				"web.ns.fed.svc.z.r.example.com AAAA [v6] fd00::1",
			},
		},
		{
			name: "hostname-only cluster is a CNAME where it is the sole target",
			in: Input{Names: names, Regions: []string{"r"}, Zones: []string{"z/r"}, Clusters: []dnsendpoint.Cluster{
				{Name: "aws", Region: "r", Zones: []string{"z"}, Hostname: "lb-1.elb.amazonaws.com", Addresses: ips("127.5.0.1"), Weight: 1},
			}},
			want: []string{
				"aws.web.ns.fed.svc.example.com CNAME lb-1.elb.amazonaws.com",
				"web.ns.fed.svc.example.com CNAME lb-1.elb.amazonaws.com",
				"web.ns.fed.svc.r.example.com CNAME lb-1.elb.amazonaws.com",
				"web.ns.fed.svc.z.r.example.com CNAME lb-1.elb.amazonaws.com",
			},
		},
		{
			name: "hostname beside IP clusters is published as its resolved addresses",
			in: Input{Names: names, Regions: []string{"r"}, Zones: []string{"z/r", "y/r"}, Clusters: []dnsendpoint.Cluster{
				{Name: "aws", Region: "r", Zones: []string{"z"}, Hostname: "lb-1.elb.amazonaws.com", Addresses: ips("127.5.0.1"), Weight: 1},
				{Name: "gcp", Region: "r", Zones: []string{"y"}, Addresses: ips("127.6.0.1"), Weight: 1},
			}},
			want: []string{
				"aws.web.ns.fed.svc.example.com CNAME lb-1.elb.amazonaws.com",
				"gcp.web.ns.fed.svc.example.com A [gcp] 127.6.0.1",
				"web.ns.fed.svc.example.com A [aws] 127.5.0.1",
				"web.ns.fed.svc.example.com A [gcp] 127.6.0.1",
				"web.ns.fed.svc.r.example.com A [aws] 127.5.0.1",
				"web.ns.fed.svc.r.example.com A [gcp] 127.6.0.1",
				"web.ns.fed.svc.y.r.example.com A [gcp] 127.6.0.1",
				"web.ns.fed.svc.z.r.example.com CNAME lb-1.elb.amazonaws.com",
			},
		},
		{
			name: "an unhealthy cluster leaves the shared names and SRV and keeps its own name",
			in: Input{Names: names, Regions: regions, Zones: zones, Clusters: []dnsendpoint.Cluster{east1, func() dnsendpoint.Cluster {
				s := east2
				s.Unhealthy = true
				return s
			}(), eu}},
			want: []string{
				"_web._tcp.web.ns.fed.svc.example.com SRV 0 1 80 c1.web.ns.fed.svc.example.com.,0 2 80 c3.web.ns.fed.svc.example.com.",
				"c1.web.ns.fed.svc.example.com A [c1] 127.1.0.1",
				"c2.web.ns.fed.svc.example.com A [c2] 127.2.0.1",
				"c3.web.ns.fed.svc.example.com A [c3] 127.3.0.1",
				"web.ns.fed.svc.europe-west1-b.europe-west1.example.com A [c3] 127.3.0.1",
				"web.ns.fed.svc.europe-west1.example.com A [c3] 127.3.0.1",
				"web.ns.fed.svc.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.example.com A [c3] 127.3.0.1",
				"web.ns.fed.svc.us-east1-b.us-east1.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.us-east1-c.us-east1.example.com CNAME web.ns.fed.svc.us-east1.example.com",
				"web.ns.fed.svc.us-east1.example.com A [c1] 127.1.0.1",
			},
		},
		{
			name: "with no healthy cluster the global name keeps them all and every place falls back to it",
			in: Input{Names: names, Regions: regions, Zones: zones, Clusters: func() []dnsendpoint.Cluster {
				out := []dnsendpoint.Cluster{east1, east2, eu}
				for i := range out {
					out[i].Unhealthy = true
				}
				return out
			}()},
			want: []string{
				"_web._tcp.web.ns.fed.svc.example.com SRV 0 1 80 c1.web.ns.fed.svc.example.com.,0 1 80 c2.web.ns.fed.svc.example.com.,0 2 80 c3.web.ns.fed.svc.example.com.",
				"c1.web.ns.fed.svc.example.com A [c1] 127.1.0.1",
				"c2.web.ns.fed.svc.example.com A [c2] 127.2.0.1",
				"c3.web.ns.fed.svc.example.com A [c3] 127.3.0.1",
				"web.ns.fed.svc.europe-west1-b.europe-west1.example.com CNAME web.ns.fed.svc.europe-west1.example.com",
				"web.ns.fed.svc.europe-west1.example.com CNAME web.ns.fed.svc.example.com",
				"web.ns.fed.svc.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.example.com A [c2] 127.2.0.1",
				"web.ns.fed.svc.example.com A [c3] 127.3.0.1",
				"web.ns.fed.svc.us-east1-b.us-east1.example.com CNAME web.ns.fed.svc.us-east1.example.com",
				"web.ns.fed.svc.us-east1-c.us-east1.example.com CNAME web.ns.fed.svc.us-east1.example.com",
				"web.ns.fed.svc.us-east1.example.com CNAME web.ns.fed.svc.example.com",
			},
		},
		{
			name: "a drained cluster leaves every name, its own and SRV too, and regions fall back",
			in:   Input{Names: names, Regions: regions, Zones: zones, Clusters: []dnsendpoint.Cluster{drained(east1), east2, eu}},
			want: []string{
				"_web._tcp.web.ns.fed.svc.example.com SRV 0 1 80 c2.web.ns.fed.svc.example.com.,0 2 80 c3.web.ns.fed.svc.example.com.",
				"c2.web.ns.fed.svc.example.com A [c2] 127.2.0.1",
				"c3.web.ns.fed.svc.example.com A [c3] 127.3.0.1",
				"web.ns.fed.svc.europe-west1-b.europe-west1.example.com A [c3] 127.3.0.1",
				"web.ns.fed.svc.europe-west1.example.com A [c3] 127.3.0.1",
				"web.ns.fed.svc.example.com A [c2] 127.2.0.1",
				"web.ns.fed.svc.example.com A [c3] 127.3.0.1",
				"web.ns.fed.svc.us-east1-b.us-east1.example.com CNAME web.ns.fed.svc.us-east1.example.com",
				"web.ns.fed.svc.us-east1-c.us-east1.example.com A [c2] 127.2.0.1",
				"web.ns.fed.svc.us-east1.example.com A [c2] 127.2.0.1",
			},
		},
		{
			name: "a name served only by a drained cluster keeps it",
			in:   Input{Names: names, Regions: regions, Zones: zones, Clusters: []dnsendpoint.Cluster{drained(east1)}},
			want: []string{
				"_web._tcp.web.ns.fed.svc.example.com SRV 0 1 80 c1.web.ns.fed.svc.example.com.",
				"c1.web.ns.fed.svc.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.europe-west1-b.europe-west1.example.com CNAME web.ns.fed.svc.europe-west1.example.com",
				"web.ns.fed.svc.europe-west1.example.com CNAME web.ns.fed.svc.example.com",
				"web.ns.fed.svc.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.us-east1-b.us-east1.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.us-east1-c.us-east1.example.com CNAME web.ns.fed.svc.us-east1.example.com",
				"web.ns.fed.svc.us-east1.example.com A [c1] 127.1.0.1",
			},
		},
		{
			name: "a drained cluster stays while every other cluster is found down, and answers before them",
			in: Input{Names: names, Regions: []string{"us-east1"}, Zones: zones[:2], Clusters: []dnsendpoint.Cluster{drained(east1), func() dnsendpoint.Cluster {
				s := east2
				s.Unhealthy = true
				return s
			}()}},
			want: []string{
				"_web._tcp.web.ns.fed.svc.example.com SRV 0 1 80 c1.web.ns.fed.svc.example.com.",
				"c1.web.ns.fed.svc.example.com A [c1] 127.1.0.1",
				"c2.web.ns.fed.svc.example.com A [c2] 127.2.0.1",
				"web.ns.fed.svc.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.us-east1-b.us-east1.example.com A [c1] 127.1.0.1",
				"web.ns.fed.svc.us-east1-c.us-east1.example.com CNAME web.ns.fed.svc.us-east1.example.com",
				"web.ns.fed.svc.us-east1.example.com A [c1] 127.1.0.1",
			},
		},
		{
			name:   "a label over 63 octets is refused",
			in:     Input{Names: NewNames("fed", "example.com", "ns", strings.Repeat("s", 64)), Clusters: []dnsendpoint.Cluster{east1}},
			errHas: "over DNS's 63",
		},
		{
			name:   "a name over 253 octets is refused",
			in:     Input{Names: NewNames(strings.Repeat("f", 60), strings.Repeat("d", 60)+"."+strings.Repeat("e", 60)+".com", "ns", strings.Repeat("s", 63)), Clusters: []dnsendpoint.Cluster{east1}},
			errHas: "over DNS's 253",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, table, err := Endpoints(tt.in)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("error %v, want one containing %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r := render(t, got, table); !slices.Equal(r, tt.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(r, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

func drained(c dnsendpoint.Cluster) dnsendpoint.Cluster {
	c.Drained = true
	return c
}

func TestDrainedKeepsTheRowInTheTable(t *testing.T) {
	_, table, err := Endpoints(Input{Names: NewNames("fed", "example.com", "ns", "web"), Clusters: []dnsendpoint.Cluster{drained(east1), east2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(table) != 2 || table[0].Name != "c1" || !table[0].Drained || table[1].Drained {
		t.Errorf("table %+v, want c1 drained and c2 not", table)
	}
}

func TestDrained(t *testing.T) {
	down := func(c dnsendpoint.Cluster) dnsendpoint.Cluster {
		c.Unhealthy = true
		return c
	}
	tests := []struct {
		name            string
		rows            []dnsendpoint.Cluster
		live, out, kept []string
	}{
		{name: "nothing drained keeps every row", rows: []dnsendpoint.Cluster{east1, east2}, live: []string{"c1", "c2"}},
		{name: "a drained cluster beside a serving one is out", rows: []dnsendpoint.Cluster{drained(east1), east2}, live: []string{"c2"}, out: []string{"c1"}},
		{name: "the only cluster, drained, is kept", rows: []dnsendpoint.Cluster{drained(east1)}, live: []string{"c1"}, kept: []string{"c1"}},
		{name: "every cluster drained keeps them all", rows: []dnsendpoint.Cluster{drained(east1), drained(east2)}, live: []string{"c1", "c2"}, kept: []string{"c1", "c2"}},
		{name: "a drained cluster beside only clusters found down is kept", rows: []dnsendpoint.Cluster{drained(east1), down(east2)}, live: []string{"c1", "c2"}, kept: []string{"c1"}},
		{name: "a drained cluster found down is out while another serves", rows: []dnsendpoint.Cluster{down(drained(east1)), east2}, live: []string{"c2"}, out: []string{"c1"}},
		{name: "no rows", live: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Drained(tt.rows)
			var live []string
			for _, r := range d.Live {
				live = append(live, r.Name)
			}
			if !slices.Equal(live, tt.live) || !slices.Equal(d.Out, tt.out) || !slices.Equal(d.Kept, tt.kept) {
				t.Errorf("live %v out %v kept %v, want live %v out %v kept %v", live, d.Out, d.Kept, tt.live, tt.out, tt.kept)
			}
		})
	}
}

func TestRemovingAClusterRemovesOnlyItsTargets(t *testing.T) {
	names := NewNames("fed", "example.com", "ns", "web")
	before, beforeTable, err := Endpoints(Input{Names: names, Clusters: []dnsendpoint.Cluster{east1, east2, eu}, Regions: regions, Zones: zones})
	if err != nil {
		t.Fatal(err)
	}
	after, afterTable, err := Endpoints(Input{Names: names, Clusters: []dnsendpoint.Cluster{east1, eu}, Regions: regions, Zones: zones})
	if err != nil {
		t.Fatal(err)
	}
	var gone, added []string
	b, a := render(t, before, beforeTable), render(t, after, afterTable)
	for _, l := range b {
		if !slices.Contains(a, l) {
			gone = append(gone, l)
		}
	}
	for _, l := range a {
		if !slices.Contains(b, l) {
			added = append(added, l)
		}
	}
	wantGone := []string{
		"_web._tcp.web.ns.fed.svc.example.com SRV 0 1 80 c1.web.ns.fed.svc.example.com.,0 1 80 c2.web.ns.fed.svc.example.com.,0 2 80 c3.web.ns.fed.svc.example.com.",
		"c2.web.ns.fed.svc.example.com A [c2] 127.2.0.1",
		"web.ns.fed.svc.example.com A [c2] 127.2.0.1",
		"web.ns.fed.svc.us-east1-c.us-east1.example.com A [c2] 127.2.0.1",
		"web.ns.fed.svc.us-east1.example.com A [c2] 127.2.0.1",
	}
	wantAdded := []string{
		"_web._tcp.web.ns.fed.svc.example.com SRV 0 1 80 c1.web.ns.fed.svc.example.com.,0 2 80 c3.web.ns.fed.svc.example.com.",
		"web.ns.fed.svc.us-east1-c.us-east1.example.com CNAME web.ns.fed.svc.us-east1.example.com",
	}
	if !slices.Equal(gone, wantGone) || !slices.Equal(added, wantAdded) {
		t.Errorf("removing c2:\ngone  %q\nadded %q", gone, added)
	}
}

func TestEndpointsCarryProvenanceForHealthAndWeights(t *testing.T) {
	s := eu
	s.ClusterIPs = ips("10.96.0.10", "fd00:10::a")
	s.Hostname = "lb-3.elb.amazonaws.com"
	s.Ports = []dnsendpoint.Port{web, {Port: 9000}} // an unnamed port has no SRV, but is probed
	eps, table, err := Endpoints(Input{Names: NewNames("fed", "example.com", "ns", "web"), TTL: 60, Clusters: []dnsendpoint.Cluster{s, east1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range eps {
		if e.RecordTTL != 60 {
			t.Errorf("%s TTL %d, want 60", e.DNSName, e.RecordTTL)
		}
	}
	want := []dnsendpoint.Cluster{
		{Name: "c1", Region: "us-east1", Zones: []string{"us-east1-b"}, Weight: 1, Addresses: ips("127.1.0.1"),
			Ports: []dnsendpoint.Port{{Name: "web", Protocol: "TCP", Port: 80}}},
		{Name: "c3", Region: "europe-west1", Zones: []string{"europe-west1-b"}, Weight: 2, Addresses: ips("127.3.0.1"),
			ClusterIPs: ips("10.96.0.10", "fd00:10::a"), Hostname: "lb-3.elb.amazonaws.com",
			Ports: []dnsendpoint.Port{{Name: "web", Protocol: "TCP", Port: 80}, {Protocol: "TCP", Port: 9000}}},
	}
	if !reflect.DeepEqual(table, want) {
		t.Errorf("cluster table\n got %+v\nwant %+v", table, want)
	}
}
