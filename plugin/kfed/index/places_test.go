package index

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/internal/geo"
)

var (
	useast1 = &geo.Point{Latitude: 33.20, Longitude: -80.01}
	euwest1 = &geo.Point{Latitude: 50.45, Longitude: 3.82}
)

// placed is the global name of a Service with a shard in each of clusters,
// as the services controller writes it: one endpoint, the cluster table.
func placed(clusters ...dnsendpoint.Cluster) ([]extdnsv1alpha1.Endpoint, dnsendpoint.Clusters) {
	ep := extdnsv1alpha1.Endpoint{DNSName: global, RecordType: "A", RecordTTL: 30}
	table := dnsendpoint.Clusters{}
	for i := range clusters {
		c := &clusters[i]
		for _, a := range c.Addresses {
			ep.Targets = append(ep.Targets, a.String())
		}
		table[c.Name] = c
	}
	return []extdnsv1alpha1.Endpoint{ep}, table
}

func member(name, region, zone string, at *geo.Point, weight int, addr string) dnsendpoint.Cluster {
	return dnsendpoint.Cluster{Name: name, Region: region, Zones: []string{zone}, Location: at, Weight: weight,
		Addresses: []netip.Addr{netip.MustParseAddr(addr)}}
}

func addressesOf(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		out = append(out, rr.(*dns.A).A.String())
	}
	return out
}

// last draws the last candidate each time: equally near clusters come out
// reversed, which tells a tier from a weighted draw across tiers.
func last(n int) int { return n - 1 }

func TestAppendFromOrdersByPlace(t *testing.T) {
	var (
		c1 = member("cluster-1", "us-east1", "us-east1-b", useast1, 1, "127.1.0.1")
		c2 = member("cluster-2", "us-east1", "us-east1-c", useast1, 1, "127.2.0.1")
		c3 = member("cluster-3", "europe-west1", "europe-west1-b", euwest1, 1, "127.3.0.1")
		c4 = member("cluster-4", "us-east1", "us-east1-b", useast1, 1, "127.4.0.1")
		c5 = member("cluster-5", "basement", "rack-1", nil, 1, "127.5.0.1")
	)
	newYork := geo.Point{Latitude: 40.71, Longitude: -74.01}
	frankfurt := geo.Point{Latitude: 50.11, Longitude: 8.68}
	tests := []struct {
		name       string
		cluster    string
		clusters   []dnsendpoint.Cluster
		client     *geo.Point
		weighted   bool // a Service routed by weight, not proximity
		want       []string
		wantVaries bool
	}{
		{name: "inside cluster-1: itself, its region, then Europe, whatever the draw", cluster: "cluster-1",
			clusters: []dnsendpoint.Cluster{c1, c2, c3}, want: []string{"127.1.0.1", "127.2.0.1", "127.3.0.1"}},
		{name: "inside cluster-1: its zone before its region", cluster: "cluster-1",
			clusters: []dnsendpoint.Cluster{c1, c2, c3, c4}, want: []string{"127.1.0.1", "127.4.0.1", "127.2.0.1", "127.3.0.1"}},
		{name: "inside cluster-3: the other region's clusters share a tier by weight", cluster: "cluster-3",
			clusters: []dnsendpoint.Cluster{c1, c2, c3}, want: []string{"127.3.0.1", "127.2.0.1", "127.1.0.1"}},
		{name: "a New York client: us-east1 (by weight), then Europe, then no place", client: &newYork,
			clusters: []dnsendpoint.Cluster{c1, c2, c3, c5}, want: []string{"127.2.0.1", "127.1.0.1", "127.3.0.1", "127.5.0.1"}, wantVaries: true},
		{name: "a Frankfurt client: Europe first", client: &frankfurt,
			clusters: []dnsendpoint.Cluster{c1, c2, c3}, want: []string{"127.3.0.1", "127.2.0.1", "127.1.0.1"}, wantVaries: true},
		{name: "clusters at one place are the same to every client", client: &frankfurt,
			clusters: []dnsendpoint.Cluster{c1, c2}, want: []string{"127.2.0.1", "127.1.0.1"}},
		{name: "no client location: the weighted order",
			clusters: []dnsendpoint.Cluster{c1, c2, c3}, want: []string{"127.3.0.1", "127.2.0.1", "127.1.0.1"}},
		{name: "a Service routed by weight: the weighted order for a located client too", client: &frankfurt, weighted: true,
			clusters: []dnsendpoint.Cluster{c1, c2, c3}, want: []string{"127.3.0.1", "127.2.0.1", "127.1.0.1"}},
		{name: "a Service routed by weight: tiers still, inside a cluster", cluster: "cluster-1", weighted: true,
			clusters: []dnsendpoint.Cluster{c1, c2, c3, c4}, want: []string{"127.1.0.1", "127.4.0.1", "127.2.0.1", "127.3.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := New(tt.cluster, 30)
			eps, table := placed(tt.clusters...)
			if err := x.SetObject("default/demo", x.ParseRouted(eps, table, !tt.weighted)); err != nil {
				t.Fatal(err)
			}
			v := x.Inside()
			if tt.client != nil {
				v = x.At(*tt.client)
			}
			r, _ := x.Lookup(global + ".")
			rrs, varies := r.AppendFrom(nil, dns.TypeA, v, last)
			if got := addressesOf(rrs); !slices.Equal(got, tt.want) {
				t.Errorf("addresses %v, want %v", got, tt.want)
			}
			if varies != tt.wantVaries {
				t.Errorf("order varies with the client: %v, want %v", varies, tt.wantVaries)
			}
		})
	}
}

func TestPlacesFollowTheLatestTable(t *testing.T) {
	x := New("cluster-1", 30)
	c1 := member("cluster-1", "us-east1", "us-east1-b", useast1, 1, "127.1.0.1")
	c2 := member("cluster-2", "europe-west1", "europe-west1-b", euwest1, 1, "127.2.0.1")
	c3 := member("cluster-3", "europe-west1", "europe-west1-b", euwest1, 1, "127.3.0.1")
	eps, table := placed(c1, c2, c3)
	if err := x.Set("default/demo", eps, table); err != nil {
		t.Fatal(err)
	}
	r, _ := x.Lookup(global + ".")
	if got, _ := r.AppendFrom(nil, dns.TypeA, x.Inside(), last); !slices.Equal(addressesOf(got), []string{"127.1.0.1", "127.3.0.1", "127.2.0.1"}) {
		t.Fatalf("before the move: %v", addressesOf(got))
	}
	// cluster-2 moves into cluster-1's region; another Service's table says
	// so first. The records of demo are not parsed again.
	other := member("cluster-2", "us-east1", "us-east1-c", useast1, 1, "127.2.0.9")
	eps, table = placed(other)
	eps[0].DNSName = "other.default.dev.svc.kfed.test"
	if err := x.Set("default/other", eps, table); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.AppendFrom(nil, dns.TypeA, x.Inside(), last); !slices.Equal(addressesOf(got), []string{"127.1.0.1", "127.2.0.1", "127.3.0.1"}) {
		t.Errorf("after cluster-2 moved to us-east1: %v", addressesOf(got))
	}
}

func TestAppendFromDoesNotAllocateForOrdering(t *testing.T) {
	x := New("cluster-1", 30)
	eps, table := placed(
		member("cluster-1", "us-east1", "us-east1-b", useast1, 1, "127.1.0.1"),
		member("cluster-2", "us-east1", "us-east1-c", useast1, 2, "127.2.0.1"),
		member("cluster-3", "europe-west1", "europe-west1-b", euwest1, 1, "127.3.0.1"),
		member("cluster-4", "basement", "rack-1", nil, 0, "127.4.0.1"),
	)
	if err := x.SetObject("default/demo", x.ParseRouted(eps, table, true)); err != nil {
		t.Fatal(err)
	}
	r, _ := x.Lookup(global + ".")
	buf := make([]dns.RR, 0, 8)
	for _, v := range []Vantage{x.Inside(), x.At(geo.Point{Latitude: 40.71, Longitude: -74.01}), {}} {
		// One allocation: the records themselves, with their addresses.
		if n := testing.AllocsPerRun(100, func() { r.AppendFrom(buf[:0], dns.TypeA, v, first) }); n != 1 {
			t.Errorf("AppendFrom allocates %v times, want 1 (the records)", n)
		}
	}
}

func TestARowWithoutLocationIsPlacedByItsRegion(t *testing.T) {
	x := New("", 30)
	eps, table := placed(
		member("cluster-1", "us-east1", "us-east1-b", nil, 1, "127.1.0.1"),
		member("cluster-3", "europe-west1", "europe-west1-b", nil, 1, "127.3.0.1"),
		member("cluster-9", "basement", "rack-1", nil, 1, "127.9.0.1"),
	)
	if err := x.SetObject("default/demo", x.ParseRouted(eps, table, true)); err != nil {
		t.Fatal(err)
	}
	r, _ := x.Lookup(global + ".")
	frankfurt := geo.Point{Latitude: 50.11, Longitude: 8.68}
	got, varies := r.AppendFrom(nil, dns.TypeA, x.At(frankfurt), first)
	if want := []string{"127.3.0.1", "127.1.0.1", "127.9.0.1"}; !slices.Equal(addressesOf(got), want) || !varies {
		t.Errorf("addresses %v (varies %v), want %v (varies true)", addressesOf(got), varies, want)
	}
}

func TestAMergedNameIsOrderedByDistanceOnlyWhereEveryPartIs(t *testing.T) {
	frankfurt := geo.Point{Latitude: 50.11, Longitude: 8.68}
	for _, tt := range []struct {
		name       string
		other      bool // the second object's routing by distance
		wantVaries bool
	}{
		{"both by distance", true, true},
		{"one by weight", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := New("", 30)
			eps, table := placed(member("cluster-1", "us-east1", "us-east1-b", useast1, 1, "127.1.0.1"))
			if err := x.SetObject("default/a", x.ParseRouted(eps, table, true)); err != nil {
				t.Fatal(err)
			}
			eps, table = placed(member("cluster-3", "europe-west1", "europe-west1-b", euwest1, 1, "127.3.0.1"))
			if err := x.SetObject("default/b", x.ParseRouted(eps, table, tt.other)); err != nil {
				t.Fatal(err)
			}
			r, _ := x.Lookup(global + ".")
			got, varies := r.AppendFrom(nil, dns.TypeA, x.At(frankfurt), first)
			if len(got) != 2 || varies != tt.wantVaries {
				t.Errorf("addresses %v, varies %v; want two, varies %v", addressesOf(got), varies, tt.wantVaries)
			}
		})
	}
}

func TestRTTsOrderClustersLabelsDoNotTellApart(t *testing.T) {
	const ms = time.Millisecond
	var (
		// No region or zone: labels put every other cluster in one tier.
		c1 = member("cluster-1", "", "", nil, 1, "127.1.0.1")
		c2 = member("cluster-2", "", "", nil, 1, "127.2.0.1")
		c3 = member("cluster-3", "", "", nil, 1, "127.3.0.1")
		c4 = member("cluster-4", "", "", nil, 1, "127.4.0.1")
		// Labelled: cluster-5 shares cluster-6's region.
		c5 = member("cluster-5", "us-east1", "us-east1-b", useast1, 1, "127.5.0.1")
		c6 = member("cluster-6", "us-east1", "us-east1-c", useast1, 1, "127.6.0.1")
		c7 = member("cluster-7", "europe-west1", "europe-west1-b", euwest1, 1, "127.7.0.1")
	)
	tests := []struct {
		name     string
		cluster  string
		clusters []dnsendpoint.Cluster
		rtts     map[string]time.Duration
		want     []string // with every draw taking the last candidate
	}{
		{"no RTTs: the weighted order", "cluster-1", []dnsendpoint.Cluster{c1, c2, c3},
			nil, []string{"127.1.0.1", "127.3.0.1", "127.2.0.1"}},
		{"loopback RTTs: too close to matter, the weighted order", "cluster-1", []dnsendpoint.Cluster{c1, c2, c3},
			map[string]time.Duration{"cluster-1": 600 * time.Microsecond, "cluster-2": 600 * time.Microsecond, "cluster-3": 1100 * time.Microsecond},
			[]string{"127.1.0.1", "127.3.0.1", "127.2.0.1"}},
		{"the nearer cluster by RTT comes first, whatever the draw", "cluster-1", []dnsendpoint.Cluster{c1, c2, c3},
			map[string]time.Duration{"cluster-2": 1100 * time.Microsecond, "cluster-3": 81 * ms},
			[]string{"127.1.0.1", "127.2.0.1", "127.3.0.1"}},
		{"clusters of about one RTT share by weight, before a farther one", "cluster-1", []dnsendpoint.Cluster{c1, c2, c3, c4},
			map[string]time.Duration{"cluster-2": 120 * ms, "cluster-3": 30 * ms, "cluster-4": 33 * ms},
			[]string{"127.1.0.1", "127.4.0.1", "127.3.0.1", "127.2.0.1"}},
		{"a cluster not measured follows the measured ones", "cluster-1", []dnsendpoint.Cluster{c1, c2, c3},
			map[string]time.Duration{"cluster-3": 200 * ms},
			[]string{"127.1.0.1", "127.3.0.1", "127.2.0.1"}},
		{"labels first: the own region before a faster cluster abroad", "cluster-5", []dnsendpoint.Cluster{c5, c6, c7},
			map[string]time.Duration{"cluster-6": 90 * ms, "cluster-7": 1 * ms},
			[]string{"127.5.0.1", "127.6.0.1", "127.7.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := New(tt.cluster, 30)
			eps, table := placed(tt.clusters...)
			if err := x.SetObject("default/demo", x.ParseRouted(eps, table, false)); err != nil {
				t.Fatal(err)
			}
			x.SetRTTs(tt.rtts)
			r, _ := x.Lookup(global + ".")
			rrs, _ := r.AppendFrom(nil, dns.TypeA, x.Inside(), last)
			if got := addressesOf(rrs); !slices.Equal(got, tt.want) {
				t.Errorf("addresses %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRTTsFollowTheLatestTable(t *testing.T) {
	x := New("cluster-1", 30)
	eps, table := placed(member("cluster-1", "", "", nil, 1, "127.1.0.1"), member("cluster-2", "", "", nil, 1, "127.2.0.1"),
		member("cluster-3", "", "", nil, 1, "127.3.0.1"))
	if err := x.Set("default/demo", eps, table); err != nil {
		t.Fatal(err)
	}
	r, _ := x.Lookup(global + ".")
	order := func() []string {
		rrs, _ := r.AppendFrom(nil, dns.TypeA, x.Inside(), last)
		return addressesOf(rrs)
	}
	x.SetRTTs(map[string]time.Duration{"cluster-2": 100 * time.Millisecond, "cluster-3": time.Millisecond})
	if got := order(); !slices.Equal(got, []string{"127.1.0.1", "127.3.0.1", "127.2.0.1"}) {
		t.Fatalf("cluster-3 nearer: %v", got)
	}
	x.SetRTTs(map[string]time.Duration{"cluster-2": time.Millisecond, "cluster-3": 100 * time.Millisecond})
	if got := order(); !slices.Equal(got, []string{"127.1.0.1", "127.2.0.1", "127.3.0.1"}) {
		t.Errorf("cluster-2 nearer: %v", got)
	}
	x.SetRTTs(nil)
	if got := order(); !slices.Equal(got, []string{"127.1.0.1", "127.3.0.1", "127.2.0.1"}) {
		t.Errorf("RTTs gone: %v, want the weighted order", got)
	}
}
