package deployments

import (
	"fmt"
	"slices"

	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/config/deploymentconfig"
	"github.com/kfed-io/kfed/policy/planner"
)

// observedCopy is what observe found of a Deployment's copy in one Ready
// member.
type observedCopy struct {
	state copies.Standing
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

// clusterInfo is what placement needs to know of a Ready member.
type clusterInfo struct {
	Name   string
	Region string
	Labels map[string]string
}

// planInput is what decide plans from.
type planInput struct {
	key   string
	total int32
	cfg   deploymentconfig.Config
	// ready are the Ready members, copies what each holds.
	ready  []clusterInfo
	copies map[string]observedCopy
	// capacity holds the clusters found full (see capacityOf) and what
	// they can run.
	capacity map[string]int64
	// held are the members that cannot be reached but keep their replicas
	// for a grace period; their replicas are not planned elsewhere.
	held map[string]int32
	// rejected are the Ready members that refused to create the copy;
	// planned elsewhere until a retry succeeds.
	rejected map[string]bool
}

// decide plans in.total replicas over the Ready clusters in.cfg places the
// Deployment in. A placed cluster holding a Deployment kfed may not take
// over is left out of the plan, so its share goes to the others; so is one
// that refused the copy. Without rebalance the copies' replicas are what
// each cluster runs now. Held clusters keep what they had, outside the plan.
//
// A full cluster gets no more than its capacity, and what it would
// otherwise run goes to the others; it keeps up to MaxWaiting replicas
// waiting beyond its capacity (above the total), so that kfed sees the room
// come back when they are scheduled.
func decide(in planInput) (decision, error) {
	key, cfg, capacity := in.key, in.cfg, in.capacity
	total := int64(in.total)
	d := decision{replicas: map[string]int32{}}
	for name, n := range in.held {
		d.replicas[name] = n
		total -= int64(n)
	}
	total = max(total, 0)
	var names []string
	currentReplicas := map[string]int64{}
	for _, c := range in.ready {
		if !cfg.Placement.Places(c.Name, c.Region, c.Labels) || in.rejected[c.Name] {
			continue
		}
		oc := in.copies[c.Name]
		switch oc.state {
		case copies.Conflict:
			d.conflicts = append(d.conflicts, c.Name)
			continue
		case copies.Foreign:
			if !cfg.Adopt {
				d.conflicts = append(d.conflicts, c.Name)
				continue
			}
		}
		names = append(names, c.Name)
		if oc.state != copies.Absent {
			currentReplicas[c.Name] = int64(oc.replicas)
		}
	}
	slices.Sort(d.conflicts)
	pin := planner.Input{
		Key:         key,
		Total:       total,
		Clusters:    names,
		Preferences: cfg.Preferences,
		Current:     currentReplicas,
	}
	unbounded, err := planner.Plan(pin)
	if err != nil {
		return decision{}, fmt.Errorf("planning: %w", err)
	}
	res := unbounded
	if len(capacity) > 0 {
		pin.Capacity = capacity
		if res, err = planner.Plan(pin); err != nil {
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
