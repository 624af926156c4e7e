package proximity

import (
	"fmt"
	"math"
	"testing"

	"github.com/kfed-io/kfed/internal/stablehash"
)

// stickyRanks are equally near clusters of the given weights, and their
// hashes, of their names.
func stickyRanks(weights ...int32) ([]Rank, []uint64) {
	ranks := make([]Rank, len(weights))
	hashes := make([]uint64, len(weights))
	for i, w := range weights {
		ranks[i] = Rank{Weight: w, ID: int16(i)}
		hashes[i] = Hash(fmt.Sprintf("cluster-%d", i+1))
	}
	return ranks, hashes
}

func firstFor(seed uint64, weights ...int32) int16 {
	ranks, hashes := stickyRanks(weights...)
	OrderFor(ranks, hashes, SameRTT, seed)
	return ranks[0].ID
}

// Over many clients, OrderFor puts each cluster first in proportion to its
// weight, and second likewise among the rest, as Order's random draw does.
func TestOrderForSharesInProportionOverClients(t *testing.T) {
	for _, tc := range []struct {
		weights []int32
	}{
		{[]int32{1, 1, 1}},
		{[]int32{24, 39, 56}},
		{[]int32{3, 70, 70}},
		{[]int32{1, 100}},
	} {
		t.Run(fmt.Sprint(tc.weights), func(t *testing.T) {
			const clients = 60000
			first := make([]int, len(tc.weights))
			second := make([]int, len(tc.weights))
			for c := range clients {
				ranks, hashes := stickyRanks(tc.weights...)
				OrderFor(ranks, hashes, SameRTT, stablehash.Mix(uint64(c)))
				first[ranks[0].ID]++
				second[ranks[1].ID]++
			}
			total := 0.0
			for _, w := range tc.weights {
				total += float64(w)
			}
			for i, w := range tc.weights {
				want := float64(w) / total
				got := float64(first[i]) / clients
				// Five standard deviations of a binomial share.
				if tol := 5 * math.Sqrt(want*(1-want)/clients); math.Abs(got-want) > tol {
					t.Errorf("cluster %d (weight %d) first for %.4f of clients, want %.4f ± %.4f", i, w, got, want, tol)
				}
			}
			if len(tc.weights) == 3 {
				// Second after another, in proportion among the rest.
				want := 0.0
				for j, wj := range tc.weights {
					if j != 0 {
						want += float64(wj) / total * float64(tc.weights[0]) / (total - float64(wj))
					}
				}
				if got := float64(second[0]) / clients; math.Abs(got-want) > 0.01 {
					t.Errorf("cluster 0 second for %.4f of clients, want %.4f", got, want)
				}
			}
		})
	}
}

// One client keeps its order while the weights hold; when one cluster's
// weight falls, only clients it had first move, and none between the
// others; when it rises again, they come back.
func TestOrderForMovesOnlyTheClientsAWeightMoves(t *testing.T) {
	const clients = 20000
	before := make([]int16, clients)
	for c := range clients {
		before[c] = firstFor(stablehash.Mix(uint64(c)), 24, 39, 56)
		if again := firstFor(stablehash.Mix(uint64(c)), 24, 39, 56); again != before[c] {
			t.Fatalf("client %d first got cluster %d, then %d, with the same weights", c, before[c], again)
		}
	}
	moved, left := 0, 0
	for c := range clients {
		after := firstFor(stablehash.Mix(uint64(c)), 12, 39, 56) // cluster 0's weight halved
		switch {
		case after == before[c]:
		case before[c] == 0:
			left++
		default:
			moved++
		}
		if back := firstFor(stablehash.Mix(uint64(c)), 24, 39, 56); back != before[c] {
			t.Fatalf("client %d did not come back to cluster %d (got %d) with the first weights", c, before[c], back)
		}
	}
	if moved != 0 {
		t.Errorf("%d clients moved between the clusters whose weights held", moved)
	}
	// Cluster 0 had 24/119 of the clients and keeps 12/107.
	want := clients * (24.0/119 - 12.0/107)
	if math.Abs(float64(left)-want) > 0.1*want {
		t.Errorf("%d clients left cluster 0, want about %.0f", left, want)
	}
}

// Groups and classes keep Order's meaning: a nearer group first, weight 0
// and the unhealthy last whatever the seed.
func TestOrderForKeepsGroups(t *testing.T) {
	for seed := range uint64(200) {
		ranks := []Rank{
			{Key: 2, Weight: 5, ID: 0},
			{Key: 1, Weight: 0, ID: 1},
			{Key: 0, Weight: 1, ID: 2, Unhealthy: true},
			{Key: 1, Weight: 1, ID: 3},
			{Key: 1, Weight: 9, ID: 4},
		}
		OrderFor(ranks, []uint64{1, 2, 3, 4, 5}, 0.5, stablehash.Mix(seed))
		var ids []int16
		for _, r := range ranks {
			ids = append(ids, r.ID)
		}
		if g := ids[:2]; !(g[0] == 3 && g[1] == 4 || g[0] == 4 && g[1] == 3) || ids[2] != 0 || ids[3] != 1 || ids[4] != 2 {
			t.Fatalf("seed %d: order %v, want 3 and 4 (drawn), then 0, then 1 (weight 0), then 2 (unhealthy)", seed, ids)
		}
	}
}

func TestOrderForDoesNotAllocate(t *testing.T) {
	ranks, hashes := stickyRanks(24, 39, 56)
	if n := testing.AllocsPerRun(100, func() { OrderFor(ranks, hashes, SameRTT, 12345) }); n != 0 {
		t.Errorf("OrderFor allocates %v times", n)
	}
}
