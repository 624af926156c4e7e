package healthcheck

import (
	"container/heap"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// scheduler keeps the targets' schedule: a heap of them by next round, and
// the clock and randomness that place the rounds. The engine's lock guards
// it.
type scheduler struct {
	clock   clock.Clock
	rand    *rand.Rand
	skipped prometheus.Counter // rounds skipped because the previous one still ran
	queue   schedule
}

// add schedules a new target's first round at a random offset within its
// interval.
func (s *scheduler) add(now time.Time, t *target) {
	t.next = now.Add(s.offset(t.Spec.Interval))
	heap.Push(&s.queue, t)
}

// restart schedules t's next round at a random offset within interval, its
// new one.
func (s *scheduler) restart(now time.Time, t *target, interval time.Duration) {
	t.next = now.Add(s.offset(interval))
	heap.Fix(&s.queue, t.index)
}

// remove takes t off the schedule.
func (s *scheduler) remove(t *target) { heap.Remove(&s.queue, t.index) }

// takeDue appends to due the rounds that are due, or will be within
// coalesce, each target's next round scheduled, and returns them with a
// channel that receives when the earliest round still to come is due (nil
// without targets). A target whose previous round is still running skips
// this one.
func (s *scheduler) takeDue(due []round) ([]round, <-chan time.Time) {
	now := s.clock.Now()
	for len(s.queue) > 0 {
		t := s.queue[0]
		if t.next.After(now.Add(t.window())) {
			return due, s.clock.After(t.next.Sub(now))
		}
		// Keep the schedule's phase: the next round is an interval after
		// this one was due, unless the engine fell behind by more.
		dueAt := t.next
		t.next = t.next.Add(s.jittered(t.Spec.Interval))
		if !t.next.After(now) {
			t.next = now.Add(s.jittered(t.Spec.Interval))
		}
		heap.Fix(&s.queue, 0)
		if t.inFlight {
			s.skipped.Inc()
			continue
		}
		t.inFlight = true
		due = append(due, round{t: t, gen: t.gen, addrs: t.Addrs, spec: t.Spec, due: dueAt})
	}
	return due, nil
}

// coalesce is how early a round may start to go with others due then (at
// most a hundredth of its interval): a checker probing a thousand targets a
// second woke for each, a millisecond apart, and spent about half its CPU
// waking (BenchmarkEngine, 1,000 targets: ~90-110 against ~170-290 µs a
// round). Rounds still come ten milliseconds' worth at a time, not in a
// burst.
const coalesce = 10 * time.Millisecond

// window is how early t's round may start: coalesce, or a hundredth of
// its interval if that is less.
func (t *target) window() time.Duration { return min(coalesce, t.Spec.Interval/100) }

// offset is a first round's delay: anywhere within the interval.
func (s *scheduler) offset(interval time.Duration) time.Duration {
	return time.Duration(s.rand.Int64N(int64(interval)))
}

// MaxJitter is how far a round may come after its interval, as a share of
// it: rounds are spread ±10 % so that checkers do not probe in step.
const MaxJitter = 0.1

// jittered is an interval ±MaxJitter.
func (s *scheduler) jittered(interval time.Duration) time.Duration {
	return interval*9/10 + time.Duration(s.rand.Int64N(int64(interval)/5+1))
}

// schedule is a min-heap of targets by next round.
type schedule []*target

func (s schedule) Len() int           { return len(s) }
func (s schedule) Less(i, j int) bool { return s[i].next.Before(s[j].next) }
func (s schedule) Swap(i, j int) {
	s[i], s[j] = s[j], s[i]
	s[i].index, s[j].index = i, j
}
func (s *schedule) Push(x any) {
	t := x.(*target)
	t.index = len(*s)
	*s = append(*s, t)
}
func (s *schedule) Pop() any {
	old := *s
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*s = old[:len(old)-1]
	t.index = -1
	return t
}
