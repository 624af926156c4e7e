package registry

import "sync"

// FanOut is how many members one reconcile writes to at once. 32 (a fleet
// of thirty in one round) lengthened the tail on 2 cores: p95 from created
// to answered in thirty members 5.6 → 8.4 s.
const FanOut = 16

// EachMember calls f(i) for every i in [0, n), up to FanOut at once, and
// returns when all have returned. A reconcile that writes a copy to each
// of thirty members one after another waits thirty round trips; side by
// side it waits about one, and a slow member holds up only its own write.
func EachMember(n int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	sem := make(chan struct{}, FanOut)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}
