package deploymentconfig

import (
	"reflect"
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/policy/placement"
	"github.com/kfed-io/kfed/policy/planner"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        Config
	}{
		{"federated alone is an even spread", map[string]string{kfedv1alpha1.AnnotationFederated: "true"},
			Config{Preferences: EvenSpread()}},
		{"preferences are read", map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"clusters": {"a": {"minReplicas": 2, "weight": 3}}}`},
			Config{Preferences: planner.Preferences{Clusters: map[string]planner.ClusterPreferences{"a": {MinReplicas: 2, Weight: 3}}}}},
		{"placement, adoption and threshold", map[string]string{kfedv1alpha1.AnnotationFederated: "true", kfedv1alpha1.AnnotationClusters: "a,b",
			kfedv1alpha1.AnnotationAdoptExisting: "true", kfedv1alpha1.AnnotationUnschedulableThreshold: "30s"},
			Config{Preferences: EvenSpread(), Placement: placement.Placement{Names: []string{"a", "b"}}, Adopt: true,
				UnschedulableThreshold: 30 * time.Second}},
		{"adoption can be turned off in so many words", map[string]string{kfedv1alpha1.AnnotationFederated: "true", kfedv1alpha1.AnnotationAdoptExisting: "false"},
			Config{Preferences: EvenSpread()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.annotations)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseRejectsBadInput(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        []string
	}{
		{"malformed JSON", map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"clusters": `}, []string{kfedv1alpha1.AnnotationReplicaPreferences}},
		{"misspelt field", map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"clusters": {"*": {"maxReplica": 3}}}`}, []string{"maxReplica"}},
		{"max below min", map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"clusters": {"a": {"minReplicas": 4, "maxReplicas": 2}}}`}, []string{"less than minReplicas"}},
		{"negative weight", map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"clusters": {"*": {"weight": -1}}}`}, []string{"negative"}},
		{"bad cluster name", map[string]string{kfedv1alpha1.AnnotationFederated: "true", kfedv1alpha1.AnnotationClusters: "A_1"}, []string{"not a cluster name"}},
		{"bad selector", map[string]string{kfedv1alpha1.AnnotationFederated: "true", kfedv1alpha1.AnnotationClusterSelector: "a in (("}, []string{kfedv1alpha1.AnnotationClusterSelector}},
		{"bad adopt value", map[string]string{kfedv1alpha1.AnnotationFederated: "true", kfedv1alpha1.AnnotationAdoptExisting: "yes"}, []string{kfedv1alpha1.AnnotationAdoptExisting}},
		{"threshold that is no duration", map[string]string{kfedv1alpha1.AnnotationFederated: "true", kfedv1alpha1.AnnotationUnschedulableThreshold: "soon"},
			[]string{`kfed.io/unschedulable-threshold="soon"`}},
		{"threshold of zero", map[string]string{kfedv1alpha1.AnnotationFederated: "true", kfedv1alpha1.AnnotationUnschedulableThreshold: "0s"},
			[]string{`kfed.io/unschedulable-threshold="0s"`}},
		{"every problem at once", map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{`, kfedv1alpha1.AnnotationAdoptExisting: "no", kfedv1alpha1.AnnotationUnschedulableThreshold: "-1m"},
			[]string{kfedv1alpha1.AnnotationReplicaPreferences, kfedv1alpha1.AnnotationAdoptExisting, kfedv1alpha1.AnnotationUnschedulableThreshold}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.annotations)
			for _, want := range tt.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want one mentioning %q", err, want)
				}
			}
		})
	}
}
