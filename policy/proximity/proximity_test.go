package proximity

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kfed-io/kfed/internal/geo"
)

// first draws the first candidate every time: a group keeps its given order.
func first(int) int { return 0 }

// last draws the last candidate every time: a group of positive weights is
// reversed, which tells a weighted draw from a fixed order.
func last(n int) int { return n - 1 }

var (
	newYork   = geo.Point{Latitude: 40.71, Longitude: -74.01}
	frankfurt = geo.Point{Latitude: 50.11, Longitude: 8.68}
	tokyo     = geo.Point{Latitude: 35.68, Longitude: 139.69}
	useast1   = geo.Point{Latitude: 33.20, Longitude: -80.01} // Moncks Corner
	euwest1   = geo.Point{Latitude: 50.45, Longitude: 3.82}   // St. Ghislain
	asiane1   = geo.Point{Latitude: 35.68, Longitude: 139.69} // Tokyo
)

func at(name, region string, zones []string, p *geo.Point, weight int) Cluster {
	c := Cluster{Name: name, Place: Place{Region: region, Zones: zones}, Weight: weight}
	if p != nil {
		c.Point, c.Located = *p, true
	}
	return c
}

func names(clusters []Cluster, order []int) []string {
	var out []string
	for _, i := range order {
		out = append(out, clusters[i].Name)
	}
	return out
}

func TestFromCluster(t *testing.T) {
	var (
		c1 = at("c1", "us-east1", []string{"us-east1-b"}, &useast1, 1)
		c2 = at("c2", "us-east1", []string{"us-east1-c"}, &useast1, 1)
		c3 = at("c3", "europe-west1", []string{"europe-west1-b"}, &euwest1, 1)
		c4 = at("c4", "us-east1", []string{"us-east1-b"}, &useast1, 1) // c1's zone
		c5 = at("c5", "asia-northeast1", []string{"asia-northeast1-a"}, &asiane1, 1)
	)
	unhealthy := func(c Cluster) Cluster { c.Unhealthy = true; return c }
	weight := func(c Cluster, w int) Cluster { c.Weight = w; return c }
	tests := []struct {
		name     string
		clusters []Cluster
		self     string
		intn     func(int) int
		want     []string
	}{
		{"own cluster, then its region, then the rest", []Cluster{c3, c2, c1}, "c1", first, []string{"c1", "c2", "c3"}},
		{"a cluster sharing the own zone comes before the region", []Cluster{c2, c3, c4, c1}, "c1", first, []string{"c1", "c4", "c2", "c3"}},
		{"clusters of the last tier are drawn by weight", []Cluster{c3, c5, c1}, "c1", last, []string{"c1", "c5", "c3"}},
		{"a tier of one is not drawn from the next", []Cluster{c3, c2, c1}, "c1", last, []string{"c1", "c2", "c3"}},
		{"an unhealthy region peer goes last, the other continent moves up", []Cluster{c1, unhealthy(c2), c3}, "c1", first, []string{"c1", "c3", "c2"}},
		{"weight 0 goes after every weighted cluster, own cluster too", []Cluster{weight(c1, 0), c2, weight(c3, 2)}, "c1", first, []string{"c2", "c3", "c1"}},
		{"weight-0 clusters keep their tier order among themselves", []Cluster{weight(c3, 0), weight(c2, 0), c1}, "c1", first, []string{"c1", "c2", "c3"}},
		{"without the own cluster every cluster is in one tier", []Cluster{c3, c2}, "elsewhere", last, []string{"c2", "c3"}},
		{"a cluster of no region shares a tier with nobody", []Cluster{at("c6", "", nil, nil, 1), c2, at("c7", "", nil, nil, 1)}, "c7", first, []string{"c7", "c6", "c2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := names(tt.clusters, FromCluster(nil, tt.clusters, tt.self, tt.intn))
			if !slices.Equal(got, tt.want) {
				t.Errorf("order %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFromPoint(t *testing.T) {
	var (
		east1 = at("east-1", "us-east1", nil, &useast1, 1)
		east2 = at("east-2", "us-east1", nil, &useast1, 1)
		eu    = at("eu", "europe-west1", nil, &euwest1, 1)
		asia  = at("asia", "asia-northeast1", nil, &asiane1, 1)
		lost  = at("lost", "basement", nil, nil, 1)
	)
	tests := []struct {
		name     string
		clusters []Cluster
		client   geo.Point
		intn     func(int) int
		want     []string
	}{
		{"a New York client gets the US first, Europe, then Asia", []Cluster{asia, eu, east1}, newYork, first, []string{"east-1", "eu", "asia"}},
		{"a Frankfurt client gets Europe first", []Cluster{east1, asia, eu}, frankfurt, first, []string{"eu", "east-1", "asia"}},
		{"a Tokyo client gets Asia first, then Europe, nearer than South Carolina", []Cluster{east1, eu, asia}, tokyo, first, []string{"asia", "eu", "east-1"}},
		{"clusters at the same place share by weight", []Cluster{east1, east2, eu}, newYork, last, []string{"east-2", "east-1", "eu"}},
		{"clusters without a location come after those with one", []Cluster{lost, asia, eu}, newYork, first, []string{"eu", "asia", "lost"}},
		{"clusters without a location share by weight", []Cluster{lost, at("lost-2", "", nil, nil, 1), eu}, newYork, last, []string{"eu", "lost-2", "lost"}},
		{"weight 0 comes after every weighted cluster, nearest first", []Cluster{at("near", "", nil, &useast1, 0), asia, at("mid", "", nil, &euwest1, 0)}, newYork, first, []string{"asia", "near", "mid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := names(tt.clusters, FromPoint(nil, tt.clusters, tt.client, tt.intn))
			if !slices.Equal(got, tt.want) {
				t.Errorf("order %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOrderGroupsWithinSlackOfTheNearest(t *testing.T) {
	// 0, 40 and 80 km: 40 is within 50 of 0, 80 is not, so it starts a
	// group of its own even though it is within 50 of 40.
	ranks := []Rank{{Key: 80, Weight: 1, ID: 0}, {Key: 40, Weight: 1, ID: 1}, {Key: 0, Weight: 1, ID: 2}}
	Order(ranks, SameDistance, last)
	var got []int16
	for _, r := range ranks {
		got = append(got, r.ID)
	}
	if !slices.Equal(got, []int16{1, 2, 0}) {
		t.Errorf("order %v, want [1 2 0]", got)
	}
}

func TestWeightsShareATierInProportion(t *testing.T) {
	clusters := []Cluster{
		at("self", "r", []string{"a"}, nil, 1),
		at("heavy", "far", nil, nil, 3),
		at("light", "away", nil, nil, 1),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	second := map[string]int{}
	const n = 40000
	var buf [3]int
	for range n {
		order := FromCluster(buf[:0], clusters, "self", rng.IntN)
		second[clusters[order[1]].Name]++
	}
	if got := float64(second["heavy"]) / n; got < 0.73 || got > 0.77 {
		t.Errorf("the cluster of weight 3 of 4 is second in %.3f of answers, want 0.75", got)
	}
}

func TestOrderDoesNotAllocate(t *testing.T) {
	clusters := []Cluster{
		at("c1", "us-east1", []string{"us-east1-b"}, &useast1, 1),
		at("c2", "us-east1", []string{"us-east1-c"}, &useast1, 2),
		at("c3", "europe-west1", nil, &euwest1, 1),
		at("c4", "asia-northeast1", nil, &asiane1, 0),
	}
	var buf [8]int
	if n := testing.AllocsPerRun(100, func() { FromCluster(buf[:0], clusters, "c1", rand.IntN) }); n != 0 {
		t.Errorf("FromCluster allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { FromPoint(buf[:0], clusters, newYork, rand.IntN) }); n != 0 {
		t.Errorf("FromPoint allocates %v times", n)
	}
}

func TestTier(t *testing.T) {
	self := Place{Region: "us-east1", Zones: []string{"us-east1-b", "us-east1-c"}}
	tests := []struct {
		name  string
		other Place
		want  int
	}{
		{"a cluster in one of the own zones", Place{Region: "us-east1", Zones: []string{"us-east1-c"}}, TierZone},
		{"a cluster in the own region, another zone", Place{Region: "us-east1", Zones: []string{"us-east1-d"}}, TierRegion},
		{"a cluster in another region with a zone of the same name", Place{Region: "us-east4", Zones: []string{"us-east1-b"}}, TierOther},
		{"a cluster of no region", Place{}, TierOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Tier(self, tt.other); got != tt.want {
				t.Errorf("Tier = %d, want %d", got, tt.want)
			}
		})
	}
	if got := Tier(Place{}, Place{}); got != TierOther {
		t.Errorf("two clusters of no region share tier %d, want %d", got, TierOther)
	}
}
