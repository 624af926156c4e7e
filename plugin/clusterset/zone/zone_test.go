package zone

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

const origin = "clusterset.local."

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

var (
	web     = &Import{Namespace: "shop", Name: "web", IPs: addrs("10.42.0.7", "fd00::7"), Ports: []Port{{"http", "tcp", 80}, {"", "tcp", 9090}}}
	db      = &Import{Namespace: "shop", Name: "db", Headless: true, Ports: []Port{{"sql", "tcp", 5432}}}
	dbPorts = []Port{{"sql", "tcp", 5432}, {"sql", "udp", 5432}}
	// db's endpoints: two pets with hostnames in cluster-1, one pod without
	// in cluster-2.
	db1 = &Slice{Namespace: "shop", Service: "db", Cluster: "cluster-1", Ports: dbPorts, Endpoints: []Endpoint{
		{Hostname: "db-0", Addrs: addrs("10.1.0.10")}, {Hostname: "db-1", Addrs: addrs("10.1.0.11")},
	}}
	db2 = &Slice{Namespace: "shop", Service: "db", Cluster: "cluster-2", Ports: dbPorts, Endpoints: []Endpoint{
		{Addrs: addrs("10.2.0.20")},
	}}
)

// show renders a name's records of every type as "TYPE rdata" lines, for
// comparing.
func show(n *Node) []string {
	var out []string
	for _, rrs := range [][]dns.RR{n.A, n.AAAA, n.SRV, n.TXT} {
		for _, rr := range rrs {
			out = append(out, dns.TypeToString[rr.Header().Rrtype]+" "+strings.TrimPrefix(rr.String(), rr.Header().String()))
		}
	}
	for _, rr := range n.Extra {
		out = append(out, "extra "+rr.Header().Name+" "+strings.TrimPrefix(rr.String(), rr.Header().String()))
	}
	return out
}

func TestBuildLaysOutTheSpecificationsNames(t *testing.T) {
	tests := []struct {
		name   string
		imp    *Import
		slices []*Slice
		want   map[string][]string // every name with records
	}{
		{
			name:   "ClusterSetIP import answers its IPs, SRV per port at the service name and per named port, endpoints unnamed",
			imp:    web,
			slices: []*Slice{db1}, // EndpointSlices give a ClusterSetIP import no names
			want: map[string][]string{
				"web.shop.svc.clusterset.local.": {
					"A 10.42.0.7", "AAAA fd00::7",
					"SRV 0 1 80 web.shop.svc.clusterset.local.", "SRV 0 1 9090 web.shop.svc.clusterset.local.",
					"extra web.shop.svc.clusterset.local. 10.42.0.7", "extra web.shop.svc.clusterset.local. fd00::7",
				},
				"_http._tcp.web.shop.svc.clusterset.local.": {
					"SRV 0 1 80 web.shop.svc.clusterset.local.",
					"extra web.shop.svc.clusterset.local. 10.42.0.7", "extra web.shop.svc.clusterset.local. fd00::7",
				},
			},
		},
		{
			name: "two protocols on one port number give one record at the service name, one at each SRV name",
			imp: &Import{Namespace: "shop", Name: "hello", IPs: addrs("10.42.0.9"),
				Ports: []Port{{"tcp", "tcp", 42}, {"udp", "udp", 42}}},
			want: map[string][]string{
				"hello.shop.svc.clusterset.local.": {"A 10.42.0.9", "SRV 0 1 42 hello.shop.svc.clusterset.local.",
					"extra hello.shop.svc.clusterset.local. 10.42.0.9"},
				"_tcp._tcp.hello.shop.svc.clusterset.local.": {"SRV 0 1 42 hello.shop.svc.clusterset.local.",
					"extra hello.shop.svc.clusterset.local. 10.42.0.9"},
				"_udp._udp.hello.shop.svc.clusterset.local.": {"SRV 0 1 42 hello.shop.svc.clusterset.local.",
					"extra hello.shop.svc.clusterset.local. 10.42.0.9"},
			},
		},
		{
			name: "ClusterSetIP import without IPs yet still exists",
			imp:  &Import{Namespace: "shop", Name: "new"},
			want: map[string][]string{"new.shop.svc.clusterset.local.": nil},
		},
		{
			name:   "headless import answers every ready endpoint of every cluster, by hostname or by address",
			imp:    db,
			slices: []*Slice{db1, db2},
			want: map[string][]string{
				"db.shop.svc.clusterset.local.": {
					"A 10.1.0.10", "A 10.1.0.11", "A 10.2.0.20",
					"SRV 0 1 5432 10-2-0-20.cluster-2.db.shop.svc.clusterset.local.",
					"SRV 0 1 5432 db-0.cluster-1.db.shop.svc.clusterset.local.",
					"SRV 0 1 5432 db-1.cluster-1.db.shop.svc.clusterset.local.",
					"extra 10-2-0-20.cluster-2.db.shop.svc.clusterset.local. 10.2.0.20",
					"extra db-0.cluster-1.db.shop.svc.clusterset.local. 10.1.0.10",
					"extra db-1.cluster-1.db.shop.svc.clusterset.local. 10.1.0.11",
				},
				"_sql._tcp.db.shop.svc.clusterset.local.": {
					"SRV 0 1 5432 10-2-0-20.cluster-2.db.shop.svc.clusterset.local.",
					"SRV 0 1 5432 db-0.cluster-1.db.shop.svc.clusterset.local.",
					"SRV 0 1 5432 db-1.cluster-1.db.shop.svc.clusterset.local.",
					"extra 10-2-0-20.cluster-2.db.shop.svc.clusterset.local. 10.2.0.20",
					"extra db-0.cluster-1.db.shop.svc.clusterset.local. 10.1.0.10",
					"extra db-1.cluster-1.db.shop.svc.clusterset.local. 10.1.0.11",
				},
				"_sql._udp.db.shop.svc.clusterset.local.": {
					"SRV 0 1 5432 10-2-0-20.cluster-2.db.shop.svc.clusterset.local.",
					"SRV 0 1 5432 db-0.cluster-1.db.shop.svc.clusterset.local.",
					"SRV 0 1 5432 db-1.cluster-1.db.shop.svc.clusterset.local.",
					"extra 10-2-0-20.cluster-2.db.shop.svc.clusterset.local. 10.2.0.20",
					"extra db-0.cluster-1.db.shop.svc.clusterset.local. 10.1.0.10",
					"extra db-1.cluster-1.db.shop.svc.clusterset.local. 10.1.0.11",
				},
				"db-0.cluster-1.db.shop.svc.clusterset.local.":      {"A 10.1.0.10"},
				"db-1.cluster-1.db.shop.svc.clusterset.local.":      {"A 10.1.0.11"},
				"10-2-0-20.cluster-2.db.shop.svc.clusterset.local.": {"A 10.2.0.20"},
			},
		},
		{
			name:   "headless import without a ready endpoint has no names",
			imp:    db,
			slices: []*Slice{{Namespace: "shop", Service: "db", Cluster: "cluster-1", Ports: dbPorts}},
			want:   map[string][]string{},
		},
		{
			name: "a hostname in two families answers both; an address two clusters share is answered once",
			imp:  &Import{Namespace: "shop", Name: "dual", Headless: true},
			slices: []*Slice{
				{Namespace: "shop", Service: "dual", Cluster: "cluster-1", Endpoints: []Endpoint{{Hostname: "p", Addrs: addrs("10.0.0.1")}}},
				{Namespace: "shop", Service: "dual", Cluster: "cluster-1", Endpoints: []Endpoint{{Hostname: "p", Addrs: addrs("fd00::1")}}},
				{Namespace: "shop", Service: "dual", Cluster: "cluster-2", Endpoints: []Endpoint{{Addrs: addrs("10.0.0.1", "fd00::2")}}},
			},
			want: map[string][]string{
				"dual.shop.svc.clusterset.local.":                    {"A 10.0.0.1", "AAAA fd00::1", "AAAA fd00::2"},
				"p.cluster-1.dual.shop.svc.clusterset.local.":        {"A 10.0.0.1", "AAAA fd00::1"},
				"10-0-0-1.cluster-2.dual.shop.svc.clusterset.local.": {"A 10.0.0.1"},
				"fd00--2.cluster-2.dual.shop.svc.clusterset.local.":  {"AAAA fd00::2"},
			},
		},
		{name: "no import, no names", slices: []*Slice{db1}, want: map[string][]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string][]string{}
			for name, n := range Build(origin, 5, "shop", tt.imp.nameOr("db"), tt.imp, tt.slices) {
				got[name] = show(n)
			}
			for name := range got {
				if _, ok := tt.want[name]; !ok {
					t.Errorf("unexpected name %s: %v", name, got[name])
				}
			}
			for name, want := range tt.want {
				g, ok := got[name]
				if !ok {
					t.Errorf("%s missing", name)
					continue
				}
				if !slices.Equal(g, want) {
					t.Errorf("%s:\n got %q\nwant %q", name, g, want)
				}
			}
		})
	}
}

func (imp *Import) nameOr(name string) string {
	if imp == nil {
		return name
	}
	return imp.Name
}

func TestZoneFollowsImportsAndSlices(t *testing.T) {
	z := New("ClusterSet.Local", 5)
	type want struct {
		name   string
		exists bool
		a      int // A records
	}
	check := func(t *testing.T, wants ...want) {
		t.Helper()
		for _, w := range wants {
			n, ok := z.Lookup(w.name)
			if ok != w.exists {
				t.Errorf("%s exists %v, want %v", w.name, ok, w.exists)
				continue
			}
			if ok && len(n.A) != w.a {
				t.Errorf("%s has %d A, want %d", w.name, len(n.A), w.a)
			}
		}
	}
	t.Run("dns-version is there from the start", func(t *testing.T) {
		n, ok := z.Lookup("dns-version.clusterset.local.")
		if !ok || len(n.TXT) != 1 || n.TXT[0].(*dns.TXT).Txt[0] != "1.0.0" {
			t.Fatalf("dns-version: %v %v", n, ok)
		}
		check(t, want{"svc.clusterset.local.", false, 0})
	})
	t.Run("slices before their import are kept but not served", func(t *testing.T) {
		z.SetSlice("shop/db-1", db1)
		check(t, want{"db.shop.svc.clusterset.local.", false, 0}, want{"shop.svc.clusterset.local.", false, 0})
	})
	t.Run("the import makes the names and their empty non-terminals", func(t *testing.T) {
		z.SetImport(db)
		z.SetSlice("shop/db-2", db2)
		z.SetImport(web)
		check(t,
			want{"db.shop.svc.clusterset.local.", true, 3},
			want{"db-0.cluster-1.db.shop.svc.clusterset.local.", true, 1},
			want{"cluster-1.db.shop.svc.clusterset.local.", true, 0},
			want{"_tcp.db.shop.svc.clusterset.local.", true, 0},
			want{"shop.svc.clusterset.local.", true, 0},
			want{"svc.clusterset.local.", true, 0},
			want{"web.shop.svc.clusterset.local.", true, 1},
			want{"cluster-1.web.shop.svc.clusterset.local.", false, 0},
			want{"other.shop.svc.clusterset.local.", false, 0},
		)
	})
	t.Run("an endpoint turning not ready leaves; its name goes", func(t *testing.T) {
		z.SetSlice("shop/db-1", &Slice{Namespace: "shop", Service: "db", Cluster: "cluster-1", Ports: dbPorts,
			Endpoints: db1.Endpoints[1:]})
		check(t,
			want{"db.shop.svc.clusterset.local.", true, 2},
			want{"db-0.cluster-1.db.shop.svc.clusterset.local.", false, 0},
			want{"db-1.cluster-1.db.shop.svc.clusterset.local.", true, 1},
		)
	})
	t.Run("a slice relabelled to another service moves", func(t *testing.T) {
		moved := *db2
		moved.Service = "web"
		z.SetSlice("shop/db-2", &moved)
		check(t, want{"db.shop.svc.clusterset.local.", true, 1}, want{"cluster-2.db.shop.svc.clusterset.local.", false, 0})
		z.SetSlice("shop/db-2", nil)
	})
	t.Run("deleting the imports empties the zone but for dns-version", func(t *testing.T) {
		z.DeleteImport("shop", "db")
		z.DeleteImport("shop", "web")
		check(t,
			want{"db.shop.svc.clusterset.local.", false, 0},
			want{"db-1.cluster-1.db.shop.svc.clusterset.local.", false, 0},
			want{"web.shop.svc.clusterset.local.", false, 0},
			want{"shop.svc.clusterset.local.", false, 0},
			want{"svc.clusterset.local.", false, 0},
		)
		if z.Len() != 1 {
			t.Errorf("Len %d, want 1 (dns-version)", z.Len())
		}
		z.SetSlice("shop/db-1", nil)
		if len(z.services) != 0 || len(z.slices) != 0 || len(z.ents) != 0 {
			t.Errorf("zone keeps %d services, %d slices, %d ENTs after everything went", len(z.services), len(z.slices), len(z.ents))
		}
	})
}

// decode is the API server's JSON of the upstream object o as the zone's
// wire type T decodes it: the zone's field names are the APIs'.
func decode[T any](t *testing.T, o any) *T {
	t.Helper()
	data, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestImportFromReadsTheSpec(t *testing.T) {
	si := &mcsv1beta1.ServiceImport{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: mcsv1beta1.ServiceImportSpec{
			Type: mcsv1beta1.ClusterSetIP, IPs: []string{"10.42.0.7", "bogus", "::ffff:10.42.0.8"},
			Ports: []mcsv1beta1.ServicePort{{Name: "HTTP", Port: 80}, {Name: "dns", Protocol: "UDP", Port: 53}, {Name: "zero"}, {Name: "Not_A_Label", Port: 81}},
		},
	}
	imp, err := ImportFrom(decode[ServiceImport](t, si))
	want := &Import{Namespace: "shop", Name: "web", IPs: addrs("10.42.0.7", "10.42.0.8"),
		Ports: []Port{{"http", "tcp", 80}, {"dns", "udp", 53}, {"", "tcp", 81}}}
	if fmt.Sprint(imp) != fmt.Sprint(want) {
		t.Errorf("got %+v, want %+v", imp, want)
	}
	for _, part := range []string{`"bogus"`, `"zero"`, `"Not_A_Label"`} {
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("error %v does not name %s", err, part)
		}
	}
}

func TestSliceFromKeepsReadyEndpoints(t *testing.T) {
	labels := map[string]string{mcsv1beta1.LabelServiceName: "db", mcsv1beta1.LabelSourceCluster: "cluster-1"}
	eps := func(mut func(*discoveryv1.EndpointSlice)) *discoveryv1.EndpointSlice {
		e := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "shop", Name: "db-x", Labels: labels},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("sql"), Port: ptr.To[int32](5432)}, {Name: ptr.To("all")}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.1.0.10"}, Hostname: ptr.To("db-0")},
				{Addresses: []string{"10.1.0.11"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
				{Addresses: []string{"10.1.0.12"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
				{Addresses: []string{"10.1.0.13"}, Hostname: ptr.To("Bad_Host")},
				{Addresses: []string{"fd00::1"}},
			},
		}
		if mut != nil {
			mut(e)
		}
		return e
	}
	tests := []struct {
		name    string
		eps     *discoveryv1.EndpointSlice
		want    *Slice
		wantErr []string
	}{
		{
			name: "ready and unknown endpoints are kept, not ready ones and other families left out",
			eps:  eps(nil),
			want: &Slice{Namespace: "shop", Service: "db", Cluster: "cluster-1", Ports: []Port{{"sql", "tcp", 5432}},
				Endpoints: []Endpoint{{"db-0", addrs("10.1.0.10")}, {"", addrs("10.1.0.11")}, {"", addrs("10.1.0.13")}}},
			wantErr: []string{`"Bad_Host"`, `"fd00::1"`},
		},
		{
			name:    "no source cluster: not served",
			eps:     eps(func(e *discoveryv1.EndpointSlice) { e.Labels = map[string]string{mcsv1beta1.LabelServiceName: "db"} }),
			wantErr: []string{mcsv1beta1.LabelSourceCluster},
		},
		{
			name:    "FQDN slices are not served",
			eps:     eps(func(e *discoveryv1.EndpointSlice) { e.AddressType = discoveryv1.AddressTypeFQDN }),
			wantErr: []string{"FQDN"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SliceFrom(decode[EndpointSlice](t, tt.eps))
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			for _, part := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), part) {
					t.Errorf("error %v does not name %s", err, part)
				}
			}
		})
	}
}
