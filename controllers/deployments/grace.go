package deployments

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/clusterreplicas"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/config/deploymentconfig"
)

// DefaultGracePeriod is how long a member that cannot be reached keeps its
// replicas before they are planned elsewhere.
const DefaultGracePeriod = 60 * time.Second

// heldMembers returns the members that keep their replicas although kfed
// cannot write to them now, with the replicas each was last planned
// (table): joined Clusters the Deployment is placed in and had replicas in,
// that are not among ready, and either stopped being Ready less than grace
// ago, or are Ready but their cache has not synced yet (kfed is starting;
// the registry's change brings a reconcile). It also returns how long until
// the first grace period ends, 0 if none will.
func heldMembers(table map[string]clusterreplicas.Cluster, joined []kfedv1alpha1.Cluster, ready map[string]bool,
	cfg deploymentconfig.Config, grace time.Duration, now time.Time) (map[string]int32, time.Duration) {
	held := map[string]int32{}
	var due time.Duration
	placed, _ := cfg.Placement.Select(joined)
	for _, cl := range placed {
		row, had := table[cl.Name]
		if !had || ready[cl.Name] {
			continue
		}
		cond := meta.FindStatusCondition(cl.Status.Conditions, kfedv1alpha1.ClusterReady)
		switch {
		case cond == nil:
			continue
		case cond.Status == metav1.ConditionTrue:
			held[cl.Name] = row.Planned
			continue
		}
		left := cond.LastTransitionTime.Add(grace).Sub(now)
		if left <= 0 {
			continue
		}
		held[cl.Name] = row.Planned
		if due == 0 || left < due {
			due = left
		}
	}
	return held, due
}
