package clusters

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func TestClusterConditionMetricSaysWhichMemberIsOffline(t *testing.T) {
	cluster := func(name string, ready, offline metav1.ConditionStatus) kfedv1alpha1.Cluster {
		c := kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if ready != "" {
			c.Status.Conditions = []metav1.Condition{
				{Type: kfedv1alpha1.ClusterReady, Status: ready}, {Type: kfedv1alpha1.ClusterOffline, Status: offline},
			}
		}
		return c
	}
	tests := []struct {
		name     string
		clusters []kfedv1alpha1.Cluster
		want     []string // cluster/condition/status of the series at 1
	}{
		{"no member, no series", nil, nil},
		{"a Ready member and an Offline one", []kfedv1alpha1.Cluster{
			cluster("a", metav1.ConditionTrue, metav1.ConditionFalse), cluster("b", metav1.ConditionFalse, metav1.ConditionTrue),
		}, []string{"a/Ready/True", "a/Offline/False", "b/Ready/False", "b/Offline/True"}},
		{"a member no probe has decided is Unknown", []kfedv1alpha1.Cluster{cluster("new", "", "")},
			[]string{"new/Ready/Unknown", "new/Offline/Unknown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := conditionSamples(tt.clusters)
			if len(samples) != 6*len(tt.clusters) {
				t.Errorf("%d series for %d clusters, want 6 each (2 conditions × 3 statuses)", len(samples), len(tt.clusters))
			}
			var got []string
			for _, s := range samples {
				if s.value == 1 {
					got = append(got, fmt.Sprintf("%s/%s/%s", s.cluster, s.condition, s.status))
				} else if s.value != 0 {
					t.Errorf("%+v: a value other than 0 or 1", s)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("series at 1: %v, want %v", got, tt.want)
			}
		})
	}
}
