package healthcheck

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// fleetOf is n checkers named c000… spread round-robin over the domains
// given, each asking for k checkers per endpoint.
func fleetOf(n, k int, domains ...string) []Checker {
	out := make([]Checker, n)
	for i := range out {
		out[i] = Checker{Name: fmt.Sprintf("c%03d", i), Domain: domains[i%len(domains)], PerEndpoint: k}
	}
	return out
}

func regions(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("region-%d", i)
	}
	return out
}

// panelNames is key's panel by name, sorted.
func panelNames(f *Fleet, cs []Checker, key string) []string {
	var out []string
	for _, i := range f.Panel(key, nil) {
		out = append(out, cs[i].Name)
	}
	slices.Sort(out)
	return out
}

func endpointKey(i int) string { return fmt.Sprintf("shop/web-%d/cluster-%d", i/7, i%7) }

func TestPanelSize(t *testing.T) {
	for _, tc := range []struct {
		name     string
		checkers []Checker
		wantK    int
		wantAll  bool
	}{
		{"three checkers under the default: every checker probes every endpoint",
			fleetOf(3, DefaultCheckersPerEndpoint, "us-east1", "europe-west1"), 3, true},
		{"exactly K checkers: all of them", fleetOf(15, 15, regions(4)...), 15, true},
		{"one more than K: K of them", fleetOf(16, 15, regions(4)...), 15, false},
		{"agents from before fleets (0) probe everything", fleetOf(40, 0, regions(4)...), 40, true},
		{"the smallest K asked for wins; 0 asks nothing",
			append(fleetOf(30, 0, "r"), Checker{Name: "x", PerEndpoint: 9}, Checker{Name: "y", PerEndpoint: 5}), 5, false},
		{"no checkers", nil, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFleet(tc.checkers)
			if f.K() != tc.wantK || f.All() != tc.wantAll {
				t.Fatalf("K %d, all %v; want %d, %v", f.K(), f.All(), tc.wantK, tc.wantAll)
			}
			for i := range 200 {
				key := endpointKey(i)
				p := f.Panel(key, nil)
				if len(p) != tc.wantK {
					t.Fatalf("panel of %s has %d checkers, want %d", key, len(p), tc.wantK)
				}
				probing := 0
				for _, c := range tc.checkers {
					if f.Probes(c.Name, key) {
						probing++
					}
				}
				if probing != tc.wantK {
					t.Fatalf("%d checkers say they probe %s, want %d", probing, key, tc.wantK)
				}
			}
		})
	}
}

func TestPanelSpreadsOverDomains(t *testing.T) {
	for _, tc := range []struct {
		name     string
		checkers []Checker
		// per endpoint, the most and fewest panel seats one domain holds
		wantMost, wantFewest int
	}{
		{"30 regions, K 15: 15 regions, one checker each", fleetOf(300, 15, regions(30)...), 1, 0},
		{"15 regions, K 15: every region once", fleetOf(300, 15, regions(15)...), 1, 1},
		{"4 regions, K 15: 3 or 4 each", fleetOf(300, 15, regions(4)...), 4, 3},
		{"2 regions, K 5: 2 or 3 each", fleetOf(50, 5, regions(2)...), 3, 2},
		{"one region: no spread to make", fleetOf(50, 5, "r"), 5, 5},
		{"a region with one checker sits on every panel when regions are fewer than K",
			append(fleetOf(100, 7, "big"), Checker{Name: "lonely", Domain: "small", PerEndpoint: 7}), 6, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFleet(tc.checkers)
			domains := map[string]bool{}
			for _, c := range tc.checkers {
				domains[c.Domain] = true
			}
			for i := range 500 {
				seats := map[string]int{}
				for d := range domains {
					seats[d] = 0
				}
				for _, j := range f.Panel(endpointKey(i), nil) {
					seats[tc.checkers[j].Domain]++
				}
				most, fewest := 0, f.K()
				for _, n := range seats {
					most, fewest = max(most, n), min(fewest, n)
				}
				if most != tc.wantMost || fewest != tc.wantFewest {
					t.Fatalf("panel of %s: seats per domain %v, want between %d and %d", endpointKey(i), seats, tc.wantFewest, tc.wantMost)
				}
			}
		})
	}
}

// TestJoinAndLeaveMoveOnlyTheirShare: a checker joining takes at most one
// seat of a panel and displaces one checker there, and changes no other
// panel; leaving is the same change read backwards. How many panels it
// joins is its load: about K/N with many domains, its domain's seats over
// the domain's checkers with few, and every panel when it is alone in a
// domain and there are fewer domains than K (spread wins over load).
func TestJoinAndLeaveMoveOnlyTheirShare(t *testing.T) {
	const endpoints = 3000
	for _, tc := range []struct {
		name      string
		before    []Checker
		joiner    Checker
		wantShare float64 // the fraction of panels the joiner should join, ±0.05
	}{
		{"HRW alone: every checker its own region, K/N", fleetOf(60, 15, regions(60)...),
			Checker{Name: "new", Domain: "region-new", PerEndpoint: 15}, 15.0 / 61},
		{"joins a busy region: the region's 3 seats over its 13 checkers", fleetOf(60, 15, regions(5)...),
			Checker{Name: "new", Domain: "region-0", PerEndpoint: 15}, 3.0 / 13},
		{"alone in a new region, fewer regions than K: every panel", fleetOf(60, 15, regions(5)...),
			Checker{Name: "new", Domain: "region-new", PerEndpoint: 15}, 1},
		{"the fleet grows past K: its region's 5 seats over 6 checkers", fleetOf(15, 15, regions(3)...),
			Checker{Name: "new", Domain: "region-1", PerEndpoint: 15}, 5.0 / 6},
		{"joins a region smaller than its share", fleetOf(40, 15, regions(20)...),
			Checker{Name: "new", Domain: "region-3", PerEndpoint: 15}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after := append(slices.Clone(tc.before), tc.joiner)
			fb, fa := NewFleet(tc.before), NewFleet(after)
			moved := 0
			for i := range endpoints {
				key := endpointKey(i)
				was, is := panelNames(fb, tc.before, key), panelNames(fa, after, key)
				gained, lost := difference(is, was), difference(was, is)
				switch {
				case len(gained) == 0 && len(lost) == 0:
				case len(gained) == 1 && gained[0] == tc.joiner.Name && len(lost) == 1:
					moved++
				default:
					t.Fatalf("panel of %s: %v → %v: gained %v, lost %v; only %s may take one seat", key, was, is, gained, lost, tc.joiner.Name)
				}
			}
			got := float64(moved) / endpoints
			if tc.wantShare >= 0 && (got < tc.wantShare-0.05 || got > tc.wantShare+0.05) {
				t.Errorf("the joiner took a seat in %.3f of the panels, want about %.3f", got, tc.wantShare)
			}
		})
	}
}

// difference is what a has and b has not; both sorted.
func difference(a, b []string) []string {
	var out []string
	for _, s := range a {
		if _, found := slices.BinarySearch(b, s); !found {
			out = append(out, s)
		}
	}
	return out
}

func TestPanelDoesNotDependOnOrder(t *testing.T) {
	cs := fleetOf(200, 15, regions(7)...)
	shuffled := slices.Clone(cs)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	f, g := NewFleet(cs), NewFleet(shuffled)
	for i := range 500 {
		if a, b := panelNames(f, cs, endpointKey(i)), panelNames(g, shuffled, endpointKey(i)); !slices.Equal(a, b) {
			t.Fatalf("panel of %s: %v, shuffled %v", endpointKey(i), a, b)
		}
	}
}

// TestPanelsNestInK: a checker assigning with a larger K probes everything
// a smaller K gives it, which is why the controller may take the smallest.
func TestPanelsNestInK(t *testing.T) {
	for _, doms := range []int{1, 3, 30} {
		small, large := NewFleet(fleetOf(100, 5, regions(doms)...)), NewFleet(fleetOf(100, 15, regions(doms)...))
		for i := range 500 {
			key := endpointKey(i)
			if p, q := small.Panel(key, nil), large.Panel(key, nil); !slices.Equal(p, q[:len(p)]) {
				t.Fatalf("%d domains, %s: K=5 panel %v is not the start of K=15's %v", doms, key, p, q)
			}
		}
	}
}

// TestPanelIsStable pins the assignment: agents and controllers of
// different versions must agree on it, so a change here breaks mixed fleets.
func TestPanelIsStable(t *testing.T) {
	cs := fleetOf(20, 3, "us-east1", "europe-west1", "asia-east1", "us-east1")
	f := NewFleet(cs)
	got := map[string]string{}
	for _, key := range []string{"shop/web/cluster-1", "shop/web/cluster-2", "default/demo/cluster-3"} {
		got[key] = strings.Join(panelNames(f, cs, key), ",")
	}
	want := map[string]string{
		"shop/web/cluster-1":     "c003,c005,c018",
		"shop/web/cluster-2":     "c005,c010,c015",
		"default/demo/cluster-3": "c002,c003,c005",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("panel of %s: %s, want %s", k, got[k], w)
		}
	}
}

// TestFleetLoadIsEven: in a fleet of 300 checkers over 10 regions, each
// checker probes about K/N of the endpoints.
func TestFleetLoadIsEven(t *testing.T) {
	cs := fleetOf(300, 15, regions(10)...)
	f := NewFleet(cs)
	load := make([]int, len(cs))
	const endpoints = 30000
	for i := range endpoints {
		for _, j := range f.Panel(endpointKey(i), nil) {
			load[j]++
		}
	}
	mean := float64(endpoints*f.K()) / float64(len(cs))
	for i, n := range load {
		if float64(n) < 0.7*mean || float64(n) > 1.3*mean {
			t.Errorf("%s probes %d endpoints, mean %.0f", cs[i].Name, n, mean)
		}
	}
}

// fleet1000 are the fleets the benchmarks assign: 1,000 checkers (one per
// cluster) with the default K.
var fleet1000 = []struct {
	name     string
	checkers []Checker
}{
	{"30-regions", fleetOf(1000, DefaultCheckersPerEndpoint, regions(30)...)},
	{"every-cluster-its-own-domain", fleetOf(1000, DefaultCheckersPerEndpoint, regions(1000)...)},
	// 10 regions of 99 checkers and one of 10: the small region's
	// checkers sit on every panel's first tier.
	{"10-regions-and-a-small-one", append(fleetOf(990, DefaultCheckersPerEndpoint, regions(10)...),
		fleetOf(10, DefaultCheckersPerEndpoint, "small")...)},
}

// BenchmarkPanel is one endpoint's panel among 1,000 checkers: what an
// agent pays per target when its fleet changes, and the controller per
// endpoint judged.
func BenchmarkPanel(b *testing.B) {
	for _, fc := range fleet1000 {
		b.Run(fc.name, func(b *testing.B) {
			f := NewFleet(fc.checkers)
			var dst []int
			i := 0
			for b.Loop() {
				dst = f.Panel(endpointKey(i), dst[:0])
				i++
			}
		})
	}
}

// BenchmarkNewFleet is reading 1,000 checkers into an assignment: what the
// controller pays per endpoint judged while it builds the Fleet per ballot
// (services.checkers.ballots), on top of the panel.
func BenchmarkNewFleet(b *testing.B) {
	cs := fleet1000[0].checkers
	for b.Loop() {
		NewFleet(cs)
	}
}

// BenchmarkFleet1000 assigns 1,000,000 endpoints among 1,000 checkers (one
// op) and reports what each checker and each endpoint costs: endpoints
// probed per checker (mean and most), and probes per endpoint (K).
func BenchmarkFleet1000(b *testing.B) {
	const endpoints = 1_000_000
	keys := make([]string, endpoints)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns-%d/svc-%d/cluster-%d", i%97, i/1000, i%1000)
	}
	for _, fc := range fleet1000 {
		b.Run(fc.name, func(b *testing.B) {
			f := NewFleet(fc.checkers)
			load := make([]int, f.Len())
			var dst []int
			for b.Loop() {
				clear(load)
				for _, key := range keys {
					dst = f.Panel(key, dst[:0])
					for _, j := range dst {
						load[j]++
					}
				}
			}
			most, least := slices.Max(load), slices.Min(load)
			b.ReportMetric(float64(f.K()), "probes/endpoint")
			b.ReportMetric(float64(endpoints*f.K())/float64(f.Len()), "endpoints/checker-mean")
			b.ReportMetric(float64(most), "endpoints/checker-max")
			b.ReportMetric(float64(least), "endpoints/checker-min")
		})
	}
}
