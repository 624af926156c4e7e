package dnsendpoint

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/internal/geo"
)

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

func withTable(table string, eps ...extdnsv1alpha1.Endpoint) *extdnsv1alpha1.DNSEndpoint {
	obj := &extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps}}
	if table != "" {
		obj.Annotations = map[string]string{AnnotationClusters: table}
	}
	return obj
}

func TestClusterTableRoundTrips(t *testing.T) {
	in := []Cluster{
		{Name: "c2", Region: "europe-west1", Zones: []string{"europe-west1-b"}, Weight: 0, Addresses: addrs("127.2.0.1"),
			Ports: []Port{{Name: "http", Protocol: "TCP", Port: 80}, {Protocol: "UDP", Port: 53}}, Unhealthy: true, Drained: true},
		{Name: "c1", Region: "us-east1", Zones: []string{"us-east1-b", "us-east1-c"}, Weight: 7,
			Addresses: addrs("127.1.0.1", "fd00::1"), ClusterIPs: addrs("10.96.0.1", "fd00:10::1"), Hostname: "lb-1.elb.amazonaws.com",
			Location: &geo.Point{Latitude: 33.2, Longitude: -80.01}},
	}
	obj := withTable("")
	SetClusters(obj, in)
	if !strings.HasPrefix(obj.Annotations[AnnotationClusters], `[{"name":"c1"`) {
		t.Errorf("the table is not sorted by name: %s", obj.Annotations[AnnotationClusters])
	}
	got, err := ReadClusters(obj)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range in {
		if !reflect.DeepEqual(*got[c.Name], c) {
			t.Errorf("cluster %s read back as\n %+v\nwant\n %+v", c.Name, *got[c.Name], c)
		}
	}
	SetClusters(obj, nil)
	if _, ok := obj.Annotations[AnnotationClusters]; ok {
		t.Error("an empty table is still written")
	}
}

func TestReadClustersBadValues(t *testing.T) {
	tests := []struct {
		name   string
		table  string
		want   map[string]Cluster
		errHas []string
	}{
		{name: "absent weight is the default", table: `[{"name":"c1","addresses":["127.1.0.1"]}]`,
			want: map[string]Cluster{"c1": {Name: "c1", Weight: DefaultWeight, Addresses: addrs("127.1.0.1")}}},
		{name: "zero weight is kept", table: `[{"name":"c1","weight":0}]`,
			want: map[string]Cluster{"c1": {Name: "c1", Weight: 0}}},
		{name: "negative weight is the default, reported", table: `[{"name":"c1","weight":-2}]`,
			want: map[string]Cluster{"c1": {Name: "c1", Weight: DefaultWeight}}, errHas: []string{"cluster c1: weight -2 is not a non-negative integer; using 1"}},
		{name: "fractional weight is the default, reported", table: `[{"name":"c1","weight":1.5}]`,
			want: map[string]Cluster{"c1": {Name: "c1", Weight: DefaultWeight}}, errHas: []string{"weight 1.5"}},
		{name: "weight as a string is the default, reported", table: `[{"name":"c1","weight":"3"}]`,
			want: map[string]Cluster{"c1": {Name: "c1", Weight: DefaultWeight}}, errHas: []string{`weight "3"`}},
		{name: "huge weight is capped", table: `[{"name":"c1","weight":99999999999}]`,
			want: map[string]Cluster{"c1": {Name: "c1", Weight: MaxWeight}}},
		{name: "a bad address costs only that address", table: `[{"name":"c1","addresses":["127.1.0.1","lb.example.com"],"clusterIPs":["10.0.0.1%eth0","10.0.0.2"]}]`,
			want:   map[string]Cluster{"c1": {Name: "c1", Weight: DefaultWeight, Addresses: addrs("127.1.0.1"), ClusterIPs: addrs("10.0.0.2")}},
			errHas: []string{`cluster c1 addresses: "lb.example.com" is not an IP address`, `cluster c1 cluster IPs: "10.0.0.1%eth0"`}},
		{name: "a cluster without a name is left out", table: `[{"weight":2},{"name":"c1"}]`,
			want: map[string]Cluster{"c1": {Name: "c1", Weight: DefaultWeight}}, errHas: []string{"cluster 0 has no name"}},
		{name: "a cluster listed twice keeps the first", table: `[{"name":"c1","weight":2},{"name":"c1","weight":3}]`,
			want: map[string]Cluster{"c1": {Name: "c1", Weight: 2}}, errHas: []string{"listed twice"}},
		{name: "a location is read", table: `[{"name":"c1","location":{"latitude":50.11,"longitude":8.68}}]`,
			want: map[string]Cluster{"c1": {Name: "c1", Weight: DefaultWeight, Location: &geo.Point{Latitude: 50.11, Longitude: 8.68}}}},
		{name: "a location off the map costs only the location", table: `[{"name":"c1","weight":2,"location":{"latitude":91,"longitude":8.68}}]`,
			want: map[string]Cluster{"c1": {Name: "c1", Weight: 2}}, errHas: []string{"cluster c1: location: latitude 91 is not within -90 to 90; left out"}},
		{name: "a location without a longitude is left out", table: `[{"name":"c1","location":{"latitude":50.11}}]`,
			want: map[string]Cluster{"c1": {Name: "c1", Weight: DefaultWeight}}, errHas: []string{`cluster c1: location {"latitude":50.11} is not`}},
		{name: "a location that is not an object is left out", table: `[{"name":"c1","location":"50.11,8.68"}]`,
			want: map[string]Cluster{"c1": {Name: "c1", Weight: DefaultWeight}}, errHas: []string{`location "50.11,8.68" is not`}},
		{name: "a null location is none", table: `[{"name":"c1","location":null}]`,
			want: map[string]Cluster{"c1": {Name: "c1", Weight: DefaultWeight}}},
		{name: "a table that is not JSON reads as none", table: `{"c1":`,
			want: map[string]Cluster{}, errHas: []string{"is not a JSON list of clusters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadClusters(withTable(tt.table))
			for _, want := range tt.errHas {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want one containing %q", err, want)
				}
			}
			if len(tt.errHas) == 0 && err != nil {
				t.Errorf("unexpected error %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d clusters, want %d: %v", len(got), len(tt.want), got)
			}
			for name, c := range tt.want {
				if got[name] == nil || !reflect.DeepEqual(*got[name], c) {
					t.Errorf("cluster %s: got %+v, want %+v", name, got[name], c)
				}
			}
		})
	}
}

func TestGroupsAttributesAddressesToClusters(t *testing.T) {
	const name = "web.ns.fed.svc.example.com"
	table := `[{"name":"c1","weight":3,"addresses":["127.1.0.1","127.1.0.2","fd00::1"]},` +
		`{"name":"c2","weight":0,"addresses":["127.2.0.1","127.9.9.9"]},{"name":"c3","addresses":["127.9.9.9"]}]`
	clusters, err := ReadClusters(withTable(table))
	if err != nil {
		t.Fatal(err)
	}
	type group struct {
		cluster string
		weight  int
		addrs   string
	}
	tests := []struct {
		name   string
		ep     extdnsv1alpha1.Endpoint
		want   []group
		errHas string
	}{
		{name: "each address goes to the cluster that has it",
			ep:   extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "A", Targets: []string{"127.2.0.1", "127.1.0.2", "127.1.0.1"}},
			want: []group{{"c1", 3, "127.1.0.2 127.1.0.1"}, {"c2", 0, "127.2.0.1"}}},
		{name: "AAAA reads the same table",
			ep:   extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "AAAA", Targets: []string{"fd00::1"}},
			want: []group{{"c1", 3, "fd00::1"}}},
		{name: "an address no cluster has is a group of its own, last",
			ep:   extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "A", Targets: []string{"192.0.2.1", "127.1.0.1"}},
			want: []group{{"c1", 3, "127.1.0.1"}, {"", 0, "192.0.2.1"}}},
		{name: "an address two clusters share goes to both",
			ep:   extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "A", Targets: []string{"127.9.9.9"}},
			want: []group{{"c2", 0, "127.9.9.9"}, {"c3", 1, "127.9.9.9"}}},
		{name: "a target of the wrong family or no address is left out, reported",
			ep:     extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "A", Targets: []string{"fd00::1", "127.1.0.1", "lb.example.com"}},
			want:   []group{{"c1", 3, "127.1.0.1"}},
			errHas: `target "fd00::1" is not an A address`},
		{name: "the older per-cluster layout reads its cluster from its properties",
			ep: extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "A", Targets: []string{"127.5.0.1"}, SetIdentifier: "old",
				ProviderSpecific: []extdnsv1alpha1.ProviderSpecificProperty{{Name: "kfed.io/cluster", Value: "old"}, {Name: "kfed.io/weight", Value: "4"}}},
			want: []group{{"old", 4, "127.5.0.1"}}},
		{name: "a bad weight in the older layout is the default, reported",
			ep: extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "A", Targets: []string{"127.5.0.1"}, SetIdentifier: "old",
				ProviderSpecific: []extdnsv1alpha1.ProviderSpecificProperty{{Name: "kfed.io/weight", Value: "heavy"}}},
			want: []group{{"old", DefaultWeight, "127.5.0.1"}}, errHas: "weight heavy is not a non-negative integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			groups, err := clusters.Groups(&tt.ep)
			if tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)) {
				t.Errorf("error %v, want one containing %q", err, tt.errHas)
			} else if tt.errHas == "" && err != nil {
				t.Errorf("unexpected error %v", err)
			}
			var got []group
			for _, g := range groups {
				var s []string
				for _, a := range g.Addrs {
					s = append(s, a.String())
				}
				gr := group{addrs: strings.Join(s, " ")}
				if g.Cluster != nil {
					gr.cluster, gr.weight = g.Cluster.Name, g.Cluster.Weight
				}
				got = append(got, gr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReadClustersOfTheOlderLayout(t *testing.T) {
	const name = "web.ns.fed.svc.example.com"
	props := func(kv ...string) []extdnsv1alpha1.ProviderSpecificProperty {
		var out []extdnsv1alpha1.ProviderSpecificProperty
		for i := 0; i < len(kv); i += 2 {
			out = append(out, extdnsv1alpha1.ProviderSpecificProperty{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	obj := withTable("",
		extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "A", Targets: []string{"127.1.0.1"}, SetIdentifier: "c1",
			ProviderSpecific: props("kfed.io/cluster", "c1", "kfed.io/region", "r", "kfed.io/zone", "a,b", "kfed.io/weight", "2", "kfed.io/cluster-ip", "10.0.0.1,fd00::a", "kfed.io/hostname", "lb.example.com")},
		extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "AAAA", Targets: []string{"fd00::1"}, SetIdentifier: "c1",
			ProviderSpecific: props("kfed.io/cluster", "c1", "kfed.io/weight", "2", "kfed.io/cluster-ip", "fd00::b")},
		extdnsv1alpha1.Endpoint{DNSName: "c1." + name, RecordType: "A", Targets: []string{"127.1.0.1"}, SetIdentifier: "c1",
			ProviderSpecific: props("kfed.io/cluster", "c1")},
		extdnsv1alpha1.Endpoint{DNSName: "_http._tcp." + name, RecordType: "SRV", Targets: []string{"0 1 80 c1." + name}},
	)
	got, err := ReadClusters(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := Cluster{Name: "c1", Region: "r", Zones: []string{"a", "b"}, Weight: 2, Addresses: addrs("127.1.0.1", "fd00::1"),
		ClusterIPs: addrs("10.0.0.1", "fd00::a", "fd00::b"), Hostname: "lb.example.com"}
	if len(got) != 1 || !reflect.DeepEqual(*got["c1"], want) {
		t.Errorf("got %+v, want c1 = %+v", got, want)
	}
}

func TestNamesPlace(t *testing.T) {
	n := NewNames("Fed", "Example.com.", "NS", "Web")
	tests := []struct {
		name         string
		zone, region string
		ok           bool
	}{
		{n.Region("us-east1"), "", "us-east1", true},
		{n.Zone("us-east1-b", "us-east1"), "us-east1-b", "us-east1", true},
		{n.Global(), "", "", false},
		{n.Cluster("c1"), "", "", false},
		{n.SRV("http", "TCP"), "", "", false},
		{"other.ns.fed.svc.r.example.com", "", "", false},
		{"web.ns.fed.svc.a.b.c.example.com", "", "", false},
	}
	for _, tt := range tests {
		z, r, ok := n.Place(tt.name)
		if z != tt.zone || r != tt.region || ok != tt.ok {
			t.Errorf("Place(%s) = %q, %q, %v; want %q, %q, %v", tt.name, z, r, ok, tt.zone, tt.region, tt.ok)
		}
	}
	if g := n.Global(); g != "web.ns.fed.svc.example.com" {
		t.Errorf("names are not lower case without a trailing dot: %s", g)
	}
}

func TestSRVWeightFitsSixteenBits(t *testing.T) {
	for w, want := range map[int]uint16{-1: 0, 0: 0, 7: 7, 70000: 65535} {
		if got := SRVWeight(w); got != want {
			t.Errorf("SRVWeight(%d) = %d, want %d", w, got, want)
		}
	}
}
