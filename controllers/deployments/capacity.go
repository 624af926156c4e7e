package deployments

import (
	"cmp"
	"time"

	"github.com/kfed-io/kfed/config/deploymentconfig"
)

// DefaultUnschedulableThreshold is how long a pod may stay unschedulable
// before its cluster counts as full.
const DefaultUnschedulableThreshold = 60 * time.Second

// MaxWaiting is how many replicas a cluster without room keeps waiting
// beyond what it runs, so that kfed sees at once when room returns: they
// are scheduled, and the cluster's capacity is no longer limited.
const MaxWaiting = 2

// podView is what capacity needs to know of one pod of a copy.
type podView struct {
	terminating bool
	scheduled   bool
	// newest is true for pods of the copy's newest ReplicaSet.
	newest bool
	// unschedulableSince is when the scheduler last said the pod cannot be
	// placed (PodScheduled=False, reason Unschedulable); zero otherwise.
	unschedulableSince time.Time
}

// capacityOf tells from a copy's pods whether its cluster is full: it is
// when a pod of the newest ReplicaSet has been unschedulable for threshold
// or longer, and then it can run the pods it has scheduled. It also returns
// how long until the next unschedulable pod crosses the threshold, 0 when
// none will.
func capacityOf(pods []podView, threshold time.Duration, now time.Time) (capacity int64, limited bool, due time.Duration) {
	for _, p := range pods {
		if p.terminating {
			continue
		}
		if p.scheduled {
			capacity++
			continue
		}
		if !p.newest || p.unschedulableSince.IsZero() {
			continue
		}
		switch wait := p.unschedulableSince.Add(threshold).Sub(now); {
		case wait <= 0:
			limited = true
		case due == 0 || wait < due:
			due = wait
		}
	}
	if !limited {
		return 0, false, due
	}
	return capacity, true, due
}

// threshold is the Deployment's unschedulable threshold: its annotation's,
// else the controller's if positive, else the default.
func threshold(cfg deploymentconfig.Config, controller time.Duration) time.Duration {
	if controller <= 0 {
		controller = DefaultUnschedulableThreshold
	}
	return cmp.Or(cfg.UnschedulableThreshold, controller)
}
