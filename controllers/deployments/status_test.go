package deployments

import (
	"errors"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/clusterreplicas"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
)

func memberCopy(hash string, gen, observed int64, replicas, ready int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Generation: gen, Annotations: map[string]string{kfedv1alpha1.AnnotationSpecHash: hash}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: replicas,
			ReadyReplicas: ready, AvailableReplicas: ready, UnavailableReplicas: replicas - ready},
	}
}

func TestNextStatus(t *testing.T) {
	now := time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC)
	planned := decision{replicas: map[string]int32{"a": 2, "b": 3}}
	tests := []struct {
		name          string
		previous      appsv1.DeploymentStatus
		annotations   map[string]string
		o             outcome
		wantStatus    appsv1.DeploymentStatus
		wantCondition string // reason of kfed.io/Synced
		wantTable     map[string]clusterreplicas.Cluster
		wantEvents    []string
	}{
		{
			name: "counts are the sums of the copies and the generation is seen once every copy has seen it",
			o: outcome{plan: planned, hash: "h", copies: map[string]*appsv1.Deployment{
				"a": memberCopy("h", 1, 1, 2, 2), "b": memberCopy("h", 4, 4, 3, 1)}},
			wantStatus:    appsv1.DeploymentStatus{ObservedGeneration: 7, Replicas: 5, UpdatedReplicas: 5, ReadyReplicas: 3, AvailableReplicas: 3, UnavailableReplicas: 2},
			wantCondition: ReasonSynced,
			wantTable:     map[string]clusterreplicas.Cluster{"a": {Planned: 2, Ready: 2, Reported: true}, "b": {Planned: 3, Ready: 1, Reported: true}},
			wantEvents:    []string{ReasonPlanned},
		},
		{
			name:     "a copy on an old template keeps the previous observed generation",
			previous: appsv1.DeploymentStatus{ObservedGeneration: 6},
			o: outcome{plan: planned, hash: "new", copies: map[string]*appsv1.Deployment{
				"a": memberCopy("new", 2, 2, 2, 2), "b": memberCopy("old", 4, 4, 3, 3)}},
			wantStatus:    appsv1.DeploymentStatus{ObservedGeneration: 6, Replicas: 5, UpdatedReplicas: 5, ReadyReplicas: 5, AvailableReplicas: 5},
			wantCondition: ReasonSynced,
			wantTable:     map[string]clusterreplicas.Cluster{"a": {Planned: 2, Ready: 2, Reported: true}, "b": {Planned: 3, Ready: 3}},
			wantEvents:    []string{ReasonPlanned},
		},
		{
			name:          "bad preferences keep the counts and the table, with a Warning",
			previous:      appsv1.DeploymentStatus{ObservedGeneration: 6, Replicas: 5, ReadyReplicas: 5},
			annotations:   map[string]string{clusterreplicas.Annotation: `{"a":{"planned":5,"ready":5,"reported":true}}`},
			o:             outcome{invalid: errors.New("annotation kfed.io/replica-preferences: bad")},
			wantStatus:    appsv1.DeploymentStatus{ObservedGeneration: 6, Replicas: 5, ReadyReplicas: 5},
			wantCondition: ReasonInvalidPreferences,
			wantTable:     map[string]clusterreplicas.Cluster{"a": {Planned: 5, Ready: 5, Reported: true}},
			wantEvents:    []string{ReasonInvalidPreferences},
		},
		{
			name:          "a member Deployment kfed did not make is a conflict",
			o:             outcome{plan: decision{replicas: map[string]int32{"a": 5}, conflicts: []string{"b"}}, hash: "h"},
			wantStatus:    appsv1.DeploymentStatus{},
			wantCondition: ReasonMemberConflict,
			wantTable:     map[string]clusterreplicas.Cluster{"a": {Planned: 5}},
			wantEvents:    []string{ReasonPlanned, ReasonMemberConflict},
		},
		{
			name:          "a rejected write names the cluster",
			o:             outcome{plan: decision{replicas: map[string]int32{"a": 5}}, hash: "h", failed: map[string]string{"a": "cluster a rejected the copy"}},
			wantStatus:    appsv1.DeploymentStatus{},
			wantCondition: ReasonMemberWriteFailed,
			wantTable:     map[string]clusterreplicas.Cluster{"a": {Planned: 5}},
			wantEvents:    []string{ReasonPlanned, ReasonMemberWriteFailed},
		},
		{
			name:          "no placed cluster is said",
			o:             outcome{plan: decision{replicas: map[string]int32{}}},
			wantStatus:    appsv1.DeploymentStatus{ObservedGeneration: 7},
			wantCondition: ReasonNoClusters,
			wantTable:     map[string]clusterreplicas.Cluster{},
			wantEvents:    []string{ReasonNoClusters},
		},
		{
			name: "a full cluster is told of with its capacity and the replicas kept waiting",
			o: outcome{plan: decision{replicas: map[string]int32{"a": 20, "b": 12}, waiting: map[string]int32{"b": 2}}, hash: "h",
				capacity: map[string]int64{"b": 10}},
			wantCondition: ReasonSynced,
			wantTable:     map[string]clusterreplicas.Cluster{"a": {Planned: 20}, "b": {Planned: 12, Capacity: new(int32(10)), Waiting: 2}},
			wantEvents:    []string{ReasonPlanned, ReasonCapacityLimited},
		},
		{
			name:          "a cluster with room again is told of",
			annotations:   map[string]string{clusterreplicas.Annotation: `{"a":{"planned":20,"ready":20},"b":{"planned":12,"ready":10,"capacity":10,"waiting":2}}`},
			o:             outcome{plan: decision{replicas: map[string]int32{"a": 16, "b": 17}}, hash: "h"},
			wantCondition: ReasonSynced,
			wantTable:     map[string]clusterreplicas.Cluster{"a": {Planned: 16}, "b": {Planned: 17}},
			wantEvents:    []string{ReasonPlanned, ReasonCapacityRestored},
		},
		{
			name:          "a ReplicaSet in the control plane is warned about",
			o:             outcome{plan: decision{replicas: map[string]int32{"a": 5}}, hash: "h", controlPlaneWorkloads: "web-5d4f"},
			wantCondition: ReasonSynced,
			wantTable:     map[string]clusterreplicas.Cluster{"a": {Planned: 5}},
			wantEvents:    []string{ReasonPlanned, ReasonDeploymentCtrl},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := fedDeployment(tt.annotations)
			d.Generation = 7
			d.Status = tt.previous
			st, table, notices := nextStatus(d, tt.o, now)
			cond := findCondition(st.Conditions, kfedv1alpha1.DeploymentSynced)
			if cond == nil || cond.Reason != tt.wantCondition {
				t.Errorf("condition %+v, want reason %s", cond, tt.wantCondition)
			}
			if (cond.Status == corev1.ConditionTrue) != (tt.wantCondition == ReasonSynced) {
				t.Errorf("condition status %s with reason %s", cond.Status, cond.Reason)
			}
			st.Conditions = nil
			if !equality.Semantic.DeepEqual(st, tt.wantStatus) {
				t.Errorf("status\n%+v, want\n%+v", st, tt.wantStatus)
			}
			if clusterreplicas.Encode(table) != clusterreplicas.Encode(tt.wantTable) {
				t.Errorf("table %s, want %s", clusterreplicas.Encode(table), clusterreplicas.Encode(tt.wantTable))
			}
			var reasons []string
			for _, n := range notices {
				reasons = append(reasons, n.Reason)
			}
			if !slices.Equal(reasons, tt.wantEvents) {
				t.Errorf("events %v, want %v", reasons, tt.wantEvents)
			}
		})
	}
}

func TestNextStatusSendsNoEventWhenNothingChanged(t *testing.T) {
	now := time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC)
	o := outcome{plan: decision{replicas: map[string]int32{"a": 5}}, hash: "h",
		copies: map[string]*appsv1.Deployment{"a": memberCopy("h", 1, 1, 5, 5)}}
	d := fedDeployment(nil)
	st, table, _ := nextStatus(d, o, now)
	d.Status = st
	d.Annotations = map[string]string{clusterreplicas.Annotation: clusterreplicas.Encode(table)}
	st2, _, notices := nextStatus(d, o, now.Add(time.Minute))
	if len(notices) != 0 {
		t.Errorf("second reconcile sends %v", notices)
	}
	if st2.Conditions[0].LastUpdateTime != st.Conditions[0].LastUpdateTime {
		t.Errorf("condition update time moved without a change")
	}
}

func TestCopies(t *testing.T) {
	d := fedDeployment(map[string]string{kfedv1alpha1.AnnotationFederated: "true", "team": "x", "kubectl.kubernetes.io/last-applied-configuration": "{}"})
	d.Labels = map[string]string{"app": "web"}
	c := desiredCopy(d, "fed", 4)
	if c.Labels["app.kubernetes.io/managed-by"] != "kfed" || c.Labels["kfed.io/federation"] != "fed" || c.Annotations[kfedv1alpha1.AnnotationOrigin] != "ns/web" {
		t.Errorf("copy lacks kfed's marks: %v %v", c.Labels, c.Annotations)
	}
	if _, ok := c.Annotations[kfedv1alpha1.AnnotationFederated]; ok || c.Annotations["team"] != "x" {
		t.Errorf("copy annotations %v: want the user's, not kfed's or kubectl's", c.Annotations)
	}
	if *c.Spec.Replicas != 4 {
		t.Errorf("copy replicas %d, want 4", *c.Spec.Replicas)
	}
	if desiredCopy(d, "fed", 9).Annotations[kfedv1alpha1.AnnotationSpecHash] != c.Annotations[kfedv1alpha1.AnnotationSpecHash] {
		t.Error("the spec hash depends on replicas")
	}
	for _, tt := range []struct {
		name string
		obj  *appsv1.Deployment
		want copies.Standing
	}{
		{"none", nil, copies.Absent},
		{"kfed's", c, copies.Ours},
		{"a user's", fedDeployment(nil), copies.Foreign},
		{"another federation's", desiredCopy(d, "other", 1), copies.Conflict},
	} {
		if got := copies.Classify(tt.obj, "ns/web", "fed"); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
	existing := c.DeepCopy()
	copies.Release(existing)
	if copies.Classify(existing, "ns/web", "fed") != copies.Foreign {
		t.Error("a released copy still reads as kfed's")
	}
}
