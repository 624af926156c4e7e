package planner

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Policy names a Balancer policy.
type Policy string

// The Balancer policies of the Kubernetes autoscaler's Balancer design.
const (
	// Priority fills targets in TargetOrder, each up to its maximum.
	Priority Policy = "priority"
	// Proportional shares replicas by Proportions.
	Proportional Policy = "proportional"
)

// BalancerInput is what PlanBalancer needs to place one Balancer's replicas.
type BalancerInput struct {
	// Key names the object; it breaks ties as in Input.
	Key   string
	Total int64
	// Targets are the places replicas can go (clusters, or Deployments).
	Targets []string
	// Preferences give each target, or every target through AnyCluster, its
	// MinReplicas and MaxReplicas. Weight has no meaning here and must be 0.
	// A target without preferences has no minimum and no maximum.
	Preferences map[string]ClusterPreferences
	Policy      Policy
	// TargetOrder is the priority policy's order. Targets not in it get
	// their minimum only.
	TargetOrder []string
	// Proportions are the proportional policy's shares. Targets not in it
	// get their minimum only.
	Proportions map[string]int64
	// Current is how many pods each target has, running and pending.
	Current map[string]int64
	// NotStarted is how many of a target's pods have been pending past the
	// startup timeout. Such a target is blocked.
	NotStarted map[string]int64
}

// Validate reports the first problem with in.
func (in BalancerInput) Validate() error {
	if err := checkCount("total", in.Total); err != nil {
		return err
	}
	if err := checkClusters(in.Targets); err != nil {
		return err
	}
	known := make(map[string]bool, len(in.Targets))
	for _, t := range in.Targets {
		known[t] = true
	}
	unknown := func(field string, keys []string) error {
		for _, k := range keys {
			if !known[k] {
				return fmt.Errorf("%s names %q, which is not in clusters", field, k)
			}
		}
		return nil
	}
	if err := validateEntries(in.Preferences); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(in.Preferences)) {
		if name != AnyCluster && !known[name] {
			return fmt.Errorf("preferences names %q, which is not in clusters", name)
		}
		if in.Preferences[name].Weight != 0 {
			return fmt.Errorf("preferences[%q]: weight is not used by the %s policy (%s)", name, in.Policy, in.Policy.how())
		}
	}
	if err := in.validatePolicy(known, unknown); err != nil {
		return err
	}
	if err := checkCounts("current", in.Current); err != nil {
		return err
	}
	if err := unknown("current", slices.Sorted(maps.Keys(in.Current))); err != nil {
		return err
	}
	if err := checkCounts("notStarted", in.NotStarted); err != nil {
		return err
	}
	if err := unknown("notStarted", slices.Sorted(maps.Keys(in.NotStarted))); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(in.NotStarted)) {
		if ns, pods := in.NotStarted[name], in.Current[name]; ns > pods {
			return fmt.Errorf("notStarted[%q] is %d but current[%q] is %d: not-started pods are counted in current", name, ns, name, pods)
		}
	}
	return nil
}

// validatePolicy checks the policy and what it needs: the target order of
// priority, the proportions of proportional, nothing of the other's.
func (in BalancerInput) validatePolicy(known map[string]bool, unknown func(string, []string) error) error {
	switch in.Policy {
	case Priority:
		if len(in.TargetOrder) == 0 {
			return errors.New(`policy "priority" needs targetOrder, the targets in the order to fill them`)
		}
		if in.Proportions != nil {
			return errors.New(`proportions only apply with policy "proportional"`)
		}
		seen := make(map[string]bool, len(in.TargetOrder))
		for i, name := range in.TargetOrder {
			if !known[name] {
				return fmt.Errorf("targetOrder[%d]: %q is not in clusters", i, name)
			}
			if seen[name] {
				return fmt.Errorf("targetOrder[%d]: %q is listed twice", i, name)
			}
			seen[name] = true
		}
	case Proportional:
		if in.Proportions == nil {
			return errors.New(`policy "proportional" needs proportions, each target's relative share`)
		}
		if in.TargetOrder != nil {
			return errors.New(`targetOrder only applies with policy "priority"`)
		}
		if err := unknown("proportions", slices.Sorted(maps.Keys(in.Proportions))); err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(in.Proportions)) {
			if err := checkWeight(fmt.Sprintf("proportions[%q]", name), in.Proportions[name]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf(`unknown policy %q (want "priority" or "proportional")`, in.Policy)
	}
	return nil
}

func (p Policy) how() string {
	if p == Priority {
		return "order targets with targetOrder"
	}
	return "share with proportions"
}

// PlanBalancer places in.Total replicas on in.Targets by in.Policy.
//
// Every target gets at least its minimum, even when the minimums add up to
// more than the total, and never more than its maximum. A blocked target
// keeps its replicas, and the planner places that many replicas elsewhere:
// its pods that have not started, plus any new ones it would get (they are
// not expected to start either), less any that a smaller plan removes. With
// priority the fallback goes to the targets after it in targetOrder; with
// proportional it is shared by proportion among the targets that are not
// blocked. Fallback no target can take is overflow on the blocked targets,
// the last in order first.
func PlanBalancer(in BalancerInput) (Result, error) {
	if err := in.Validate(); err != nil {
		return Result{}, err
	}
	prefs := Preferences{Clusters: in.Preferences}
	ms := newMembers(in.Key, in.Targets, func(m *member) {
		pref, _ := prefs.For(m.name)
		if pref.MaxReplicas != nil {
			m.limit, m.bounded = *pref.MaxReplicas, true
		}
		// The engine shares by weight; here that is the proportion, and
		// the minimum is a floor within the proportional share.
		m.weight = in.Proportions[m.name]
		m.lo, m.out = pref.MinReplicas, pref.MinReplicas
	})
	b := balancer{ms: ms, current: in.Current, notStarted: in.NotStarted}
	var unplaced int64
	if in.Policy == Priority {
		unplaced = b.priority(in.TargetOrder, in.Total)
	} else {
		unplaced = b.proportional(in.Total)
	}
	res := Result{Replicas: make(map[string]int64, len(ms)), Overflow: make(map[string]int64)}
	for _, m := range ms {
		res.Replicas[m.name] = m.out
	}
	// What is left over is first of all the fallback added last.
	for i := len(b.fellBack) - 1; i >= 0 && unplaced > 0; i-- {
		m := &ms[b.fellBack[i]]
		if o := min(unplaced, b.fallback[i]); o > 0 {
			res.Overflow[m.name] = o
			unplaced -= o
		}
	}
	return res, nil
}

// balancer is a Balancer plan in the making.
type balancer struct {
	ms         []member
	current    map[string]int64
	notStarted map[string]int64
	// fellBack lists the blocked targets (indices into ms) in the order
	// their fallback joined the pool, and fallback how much each added.
	fellBack []int
	fallback []int64
}

// blocked reports whether m has pods pending past the startup timeout.
func (b *balancer) blocked(m *member) bool { return b.notStarted[m.name] > 0 }

// fallBack records and returns how many replicas ms[i], planned at its out,
// needs placed elsewhere: none unless it is blocked.
func (b *balancer) fallBack(i int) int64 {
	m := &b.ms[i]
	if !b.blocked(m) {
		return 0
	}
	n := max(0, b.notStarted[m.name]+m.out-b.current[m.name])
	b.fellBack = append(b.fellBack, i)
	b.fallback = append(b.fallback, n)
	return n
}

// priority fills targets in targetOrder and returns the replicas left over.
// It leaves b.ms in that order, unlisted targets last.
func (b *balancer) priority(targetOrder []string, total int64) int64 {
	pos := make(map[string]int, len(targetOrder))
	for i, name := range targetOrder {
		pos[name] = i
	}
	// b.ms is in hash order; unlisted targets keep it among themselves.
	slices.SortStableFunc(b.ms, func(x, y member) int {
		px, okx := pos[x.name]
		py, oky := pos[y.name]
		switch {
		case okx && oky:
			return px - py
		case okx:
			return -1
		case oky:
			return 1
		}
		return 0
	})
	pool := total
	for i := range b.ms {
		pool -= b.ms[i].out
	}
	pool = max(0, pool)
	for i := len(targetOrder); i < len(b.ms); i++ {
		pool += b.fallBack(i) // unlisted: minimum only, so fall back at once
	}
	for i := range targetOrder {
		m := &b.ms[i]
		take := pool
		if m.bounded {
			take = min(take, max(0, m.limit-m.out))
		}
		m.out += take
		pool -= take
		pool += b.fallBack(i)
	}
	return pool
}

// proportional shares total by proportion with minimums as floors, then
// shares the fallback of blocked targets among the others. It returns the
// replicas left over.
func (b *balancer) proportional(total int64) int64 {
	var mins int64
	for i := range b.ms {
		mins += b.ms[i].lo
	}
	if total > mins {
		shareOut(b.ms, total-mins)
	}
	var pool int64
	for i := range b.ms {
		pool += b.fallBack(i)
	}
	if pool == 0 {
		return 0
	}
	// Fallback goes only to targets that are not blocked, on top of what
	// they already have.
	var open []member
	var at []int
	for i := range b.ms {
		if !b.blocked(&b.ms[i]) {
			m := b.ms[i]
			m.lo, m.min = m.out, 0
			open = append(open, m)
			at = append(at, i)
		}
	}
	placed := shareOut(open, pool)
	for k, i := range at {
		b.ms[i].out = open[k].out
	}
	return pool - placed
}
