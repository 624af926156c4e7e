package deployments

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/clusterreplicas"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/config/deploymentconfig"
	"github.com/kfed-io/kfed/policy/placement"
)

func TestHeldMembers(t *testing.T) {
	now := time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC)
	cluster := func(name string, ready metav1.ConditionStatus, since time.Duration) kfedv1alpha1.Cluster {
		c := kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		c.Spec.Region = "us-east1"
		if ready != "" {
			c.Status.Conditions = []metav1.Condition{{Type: kfedv1alpha1.ClusterReady, Status: ready,
				LastTransitionTime: metav1.NewTime(now.Add(-since))}}
		}
		return c
	}
	table := map[string]clusterreplicas.Cluster{"a": {Planned: 16}, "b": {Planned: 17}, "c": {Planned: 17}}
	tests := []struct {
		name   string
		joined []kfedv1alpha1.Cluster
		ready  map[string]bool
		cfg    deploymentconfig.Config
		want   string
		due    time.Duration
	}{
		{
			name:   "a member offline for less than the grace period keeps its replicas until it ends",
			joined: []kfedv1alpha1.Cluster{cluster("a", "True", time.Hour), cluster("b", "False", 20*time.Second)},
			ready:  map[string]bool{"a": true},
			want:   "map[b:17]", due: 40 * time.Second,
		},
		{
			name:   "past the grace period it keeps none",
			joined: []kfedv1alpha1.Cluster{cluster("b", "False", 61*time.Second)},
			want:   "map[]",
		},
		{
			name:   "a Ready member whose cache is starting keeps its replicas, with nothing due",
			joined: []kfedv1alpha1.Cluster{cluster("c", "True", time.Hour)},
			want:   "map[c:17]",
		},
		{
			name:   "a member that never had replicas, or has no verdict yet, keeps none",
			joined: []kfedv1alpha1.Cluster{cluster("d", "False", time.Second), cluster("a", "", 0)},
			want:   "map[]",
		},
		{
			name:   "a member the Deployment is no longer placed in keeps none",
			joined: []kfedv1alpha1.Cluster{cluster("b", "False", time.Second)},
			cfg:    deploymentconfig.Config{Placement: placement.Placement{Names: []string{"a"}}},
			want:   "map[]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			held, due := heldMembers(table, tt.joined, tt.ready, tt.cfg, time.Minute, now)
			if got := fmt.Sprint(held); got != tt.want || due != tt.due {
				t.Errorf("held %s, due %v; want %s, %v", got, due, tt.want, tt.due)
			}
		})
	}
}
