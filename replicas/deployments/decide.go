package deployments

import (
	"fmt"
	"slices"

	"github.com/kfed-io/kfed/replicas/planner"
)

// observedCopy is what observe found of a Deployment's copy in one Ready
// member.
type observedCopy struct {
	state copyState
	// replicas is the copy's spec.replicas (ours or adopted).
	replicas int32
}

// decision is the plan of one reconcile.
type decision struct {
	// replicas holds the clusters that get a copy, with its spec.replicas.
	replicas map[string]int32
	// conflicts are placed clusters whose Deployment of that name kfed may
	// not take over, sorted; they get no replicas.
	conflicts []string
	// overflow is what no cluster could run (see planner.Result.Overflow).
	overflow map[string]int64
	// waiting are the replicas, included in replicas, that clusters without
	// room keep beyond their capacity (at most MaxWaiting each).
	waiting map[string]int32
}

// decide plans total replicas of the Deployment key over the Ready clusters
// cfg places it in. A placed cluster holding a Deployment kfed may not take
// over is left out of the plan, so its share goes to the others. Without
// rebalance the copies' replicas are what each cluster runs now.
//
// capacity holds the clusters found full (see capacityOf) and what they can
// run. The plan gives such a cluster no more than that, and what it would
// otherwise run goes to the others; it keeps up to MaxWaiting replicas
// waiting beyond its capacity (above the total), so that kfed sees the room
// come back when they are scheduled.
func decide(key string, total int32, cfg config, ready []clusterInfo, copies map[string]observedCopy, capacity map[string]int64) (decision, error) {
	d := decision{replicas: map[string]int32{}}
	var names []string
	currentReplicas := map[string]int64{}
	for _, c := range ready {
		if !cfg.places(c) {
			continue
		}
		oc := copies[c.Name]
		switch oc.state {
		case copyConflict:
			d.conflicts = append(d.conflicts, c.Name)
			continue
		case copyForeign:
			if !cfg.adopt {
				d.conflicts = append(d.conflicts, c.Name)
				continue
			}
		}
		names = append(names, c.Name)
		if oc.state != copyAbsent {
			currentReplicas[c.Name] = int64(oc.replicas)
		}
	}
	slices.Sort(d.conflicts)
	in := planner.Input{
		Key:         key,
		Total:       int64(total),
		Clusters:    names,
		Preferences: cfg.prefs,
		Current:     currentReplicas,
	}
	unbounded, err := planner.Plan(in)
	if err != nil {
		return decision{}, fmt.Errorf("planning: %w", err)
	}
	res := unbounded
	if len(capacity) > 0 {
		in.Capacity = capacity
		if res, err = planner.Plan(in); err != nil {
			return decision{}, fmt.Errorf("planning: %w", err)
		}
	}
	for name, n := range res.Replicas {
		d.replicas[name] = int32(n) // the planner never exceeds the total, an int32
	}
	d.overflow = res.Overflow
	for name := range capacity {
		got, ok := res.Replicas[name]
		if !ok {
			continue
		}
		if w := min(unbounded.Replicas[name]-got, MaxWaiting); w > 0 {
			if d.waiting == nil {
				d.waiting = map[string]int32{}
			}
			d.waiting[name] = int32(w)
			d.replicas[name] += int32(w)
		}
	}
	return d, nil
}
