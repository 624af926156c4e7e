package registry

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestEachMemberCallsEveryOneSideBySideWithinFanOut(t *testing.T) {
	for _, n := range []int{0, 1, 3, FanOut, 3 * FanOut} {
		var (
			mu            sync.Mutex
			called        = map[int]int{}
			running, most atomic.Int32
			together      = make(chan struct{}) // closed when min(n, FanOut) run at once
			once          sync.Once
			apart         atomic.Bool // they did not, within a second
		)
		want := int32(min(n, FanOut))
		EachMember(n, func(i int) {
			now := running.Add(1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			if now == want {
				once.Do(func() { close(together) })
			}
			if !apart.Load() {
				select {
				case <-together:
				case <-time.After(time.Second):
					apart.Store(true)
				}
			}
			running.Add(-1)
			mu.Lock()
			called[i]++
			mu.Unlock()
		})
		for i := range n {
			if called[i] != 1 {
				t.Errorf("n=%d: f(%d) called %d times, want once", n, i, called[i])
			}
		}
		if len(called) != n {
			t.Errorf("n=%d: called for %d indexes", n, len(called))
		}
		if apart.Load() {
			t.Errorf("n=%d: at most %d ran at once, want %d", n, most.Load(), want)
		}
		if most.Load() > FanOut {
			t.Errorf("n=%d: %d ran at once, want at most %d", n, most.Load(), FanOut)
		}
	}
}
