package index

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

// Inside a cluster, its own endpoint is answered first until it is more
// loaded than the others by load.Spill; then it is drawn with its next
// tier by its weight, which follows its load.
func TestOwnClusterSpillsWhenMoreLoaded(t *testing.T) {
	f := func(u float64) *float64 { return &u }
	for _, tt := range []struct {
		name      string
		loads     [3]*float64 // cluster-1 (own), cluster-2, cluster-3
		weights   [3]int
		ownFirst  float64 // share of answers with cluster-1 first, ± 0.03
		wantFirst bool    // cluster-1 first in every answer
	}{
		{name: "no loads: own first", weights: [3]int{1, 1, 1}, wantFirst: true},
		{name: "as loaded as the others: own first", loads: [3]*float64{f(0.325), f(0.325), f(0.325)}, weights: [3]int{68, 68, 68}, wantFirst: true},
		{name: "within the margin: own first", loads: [3]*float64{f(0.425), f(0.325), f(0.325)}, weights: [3]int{58, 68, 68}, wantFirst: true},
		{name: "0.975 against 0.325: spilled, drawn by weight", loads: [3]*float64{f(0.975), f(0.325), f(0.325)}, weights: [3]int{3, 68, 68}, ownFirst: 3.0 / 139},
		{name: "no figure of its own: own first", loads: [3]*float64{nil, f(0.325), f(0.325)}, weights: [3]int{68, 68, 68}, wantFirst: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := New("cluster-1", 30)
			clusters := dnsendpoint.Clusters{}
			var addrs []string
			for i, name := range []string{"cluster-1", "cluster-2", "cluster-3"} {
				a := netip.AddrFrom4([4]byte{127, byte(i + 1), 0, 1})
				clusters[name] = &dnsendpoint.Cluster{Name: name, Region: "us-east1", Weight: tt.weights[i], Addresses: []netip.Addr{a}, Load: tt.loads[i]}
				addrs = append(addrs, a.String())
			}
			eps := []extdnsv1alpha1.Endpoint{{DNSName: global, RecordType: "A", Targets: addrs, RecordTTL: 30}}
			if err := x.Set("default/demo", eps, clusters); err != nil {
				t.Fatal(err)
			}
			r, _ := x.Lookup(global + ".")
			rng := rand.New(rand.NewPCG(1, 2))
			const draws = 10000
			own := 0
			var buf []dns.RR
			for range draws {
				buf, _ = r.AppendFrom(buf[:0], dns.TypeA, x.Inside(), rng.IntN)
				if buf[0].(*dns.A).A.String() == "127.1.0.1" {
					own++
				}
			}
			share := float64(own) / draws
			switch {
			case tt.wantFirst && own != draws:
				t.Errorf("own cluster first in %.3f of answers, want all", share)
			case !tt.wantFirst && (share < tt.ownFirst-0.03 || share > tt.ownFirst+0.03):
				t.Errorf("own cluster first in %.3f of answers, want %.3f", share, tt.ownFirst)
			}
			ranked := x.Rank(r, dns.TypeA, x.Inside())
			spilled := false
			for _, rk := range ranked {
				spilled = spilled || rk.Spilled
			}
			if spilled == tt.wantFirst {
				t.Errorf("Rank says spilled %v: %+v", spilled, ranked)
			}
		})
	}
}

// BenchmarkAppendFromSpilled is an answer inside cluster-1 to a name of
// three clusters in one region: its own first (no loads), or spilled
// (cluster-1 at 0.97, the others at 0.30) and drawn with the others.
func BenchmarkAppendFromSpilled(b *testing.B) {
	f := func(u float64) *float64 { return &u }
	for _, bc := range []struct {
		name    string
		loads   [3]*float64
		weights [3]int
	}{
		{"own first", [3]*float64{}, [3]int{1, 1, 1}},
		{"spilled", [3]*float64{f(0.97), f(0.3), f(0.3)}, [3]int{3, 70, 70}},
	} {
		x := New("cluster-1", 30)
		clusters := dnsendpoint.Clusters{}
		var addrs []string
		for i, name := range []string{"cluster-1", "cluster-2", "cluster-3"} {
			a := netip.AddrFrom4([4]byte{127, byte(i + 1), 0, 1})
			clusters[name] = &dnsendpoint.Cluster{Name: name, Region: "us-east1", Weight: bc.weights[i], Addresses: []netip.Addr{a}, Load: bc.loads[i]}
			addrs = append(addrs, a.String())
		}
		if err := x.Set("default/demo", []extdnsv1alpha1.Endpoint{{DNSName: global, RecordType: "A", Targets: addrs, RecordTTL: 30}}, clusters); err != nil {
			b.Fatal(err)
		}
		r, _ := x.Lookup(global + ".")
		rng := rand.New(rand.NewPCG(1, 2))
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var buf []dns.RR
			for b.Loop() {
				buf, _ = r.AppendFrom(buf[:0], dns.TypeA, x.Inside(), rng.IntN)
			}
		})
	}
}
