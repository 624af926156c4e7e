package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/internal/geo"
)

// describe is ranked as "group:cluster" entries, a draw's clusters marked
// with *, and where each is: "t2" a tier, "r30ms" a measured RTT, "1234km".
func describe(ranked []Ranked) string {
	var parts []string
	for _, r := range ranked {
		s := fmt.Sprintf("%d:%s", r.Group, r.Cluster)
		if r.Drawn {
			s += "*"
		}
		switch {
		case r.ByDistance:
			s += fmt.Sprintf(" %.0fkm", math.Round(r.Distance/10)*10) // to tens of km, as a person reads them
		case r.RTTMeasured:
			s += fmt.Sprintf(" t%d r%v", r.Tier, r.RTT)
		default:
			s += fmt.Sprintf(" t%d", r.Tier)
		}
		if r.Local {
			s += " local"
		}
		if r.ClusterIPs {
			s += " clusterIPs"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func TestRankExplainsTheOrderAppendFromDraws(t *testing.T) {
	var (
		c1 = member("cluster-1", "us-east1", "us-east1-b", useast1, 1, "127.1.0.1")
		c2 = member("cluster-2", "us-east1", "us-east1-c", useast1, 3, "127.2.0.1")
		c3 = member("cluster-3", "europe-west1", "europe-west1-b", euwest1, 1, "127.3.0.1")
		c4 = member("cluster-4", "us-east1", "us-east1-b", useast1, 0, "127.4.0.1")
	)
	c1.ClusterIPs = []netip.Addr{netip.MustParseAddr("10.0.0.1")}
	tokyo := geo.Point{Latitude: 35.68, Longitude: 139.69}
	tests := []struct {
		name       string
		cluster    string
		byDistance bool
		rtts       map[string]time.Duration
		at         *geo.Point
		want       string
	}{
		{"inside cluster-1: itself by cluster IP, then its region, then abroad, weight 0 last", "cluster-1", false, nil, nil,
			"0:cluster-1 t0 local clusterIPs, 1:cluster-2 t2, 2:cluster-3 t3, 3:cluster-4 t1"},
		{"inside cluster-3: the rest of the world in one group, drawn by weight", "cluster-3", false, nil, nil,
			"0:cluster-3 t0 local, 1:cluster-1* t3, 1:cluster-2* t3, 2:cluster-4 t3"},
		{"RTTs split a tier", "cluster-3", false, map[string]time.Duration{"cluster-1": 90 * time.Millisecond, "cluster-2": 2 * time.Millisecond}, nil,
			"0:cluster-3 t0 local, 1:cluster-2 t3 r2ms, 2:cluster-1 t3 r90ms, 3:cluster-4 t3"},
		{"at the edge without a place: weights alone", "", true, nil, nil,
			"0:cluster-1* t3, 0:cluster-2* t3, 0:cluster-3* t3, 1:cluster-4 t3"},
		{"at the edge from Tokyo, routed by proximity: Europe first", "", true, nil, &tokyo,
			"0:cluster-3 9510km, 1:cluster-1* 11310km, 1:cluster-2* 11310km, 2:cluster-4 11310km"},
		{"at the edge from Tokyo, routed by weight: distance is not read", "", false, nil, &tokyo,
			"0:cluster-1* t3, 0:cluster-2* t3, 0:cluster-3* t3, 1:cluster-4 t3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := New(tt.cluster, 30)
			eps, table := placed(c1, c2, c3, c4)
			if err := x.SetObject("default/demo", x.ParseRouted(eps, table, tt.byDistance)); err != nil {
				t.Fatal(err)
			}
			x.SetRTTs(tt.rtts)
			v := x.Inside()
			if tt.at != nil {
				v = x.At(*tt.at)
			}
			r, _ := x.Lookup(global + ".")
			ranked := x.Rank(r, dns.TypeA, v)
			if got := describe(ranked); got != tt.want {
				t.Errorf("ranked\n %s\nwant\n %s", got, tt.want)
			}
			// Whatever AppendFrom draws, its answer is Rank's groups in
			// order, each group's addresses together.
			group := map[string]int{}
			for _, rk := range ranked {
				for _, a := range rk.Addresses {
					group[a.String()] = rk.Group
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 200 {
				rrs, _ := r.AppendFrom(nil, dns.TypeA, v, rng.IntN)
				got := addressesOf(rrs)
				if len(got) != len(group) {
					t.Fatalf("answer %v, Rank says %v", got, group)
				}
				for i := 1; i < len(got); i++ {
					if group[got[i]] < group[got[i-1]] {
						t.Fatalf("answer %v puts %s (group %d) after %s (group %d)", got, got[i], group[got[i]], got[i-1], group[got[i-1]])
					}
				}
			}
		})
	}
}
