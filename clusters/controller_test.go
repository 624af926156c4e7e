package clusters

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func TestProbeSequencesSetReadyAndOfflineWithHysteresis(t *testing.T) {
	ok, fail := error(nil), errors.New("connection refused")
	tests := []struct {
		name        string
		reason      string // reason LoadRESTConfig gave, or ProbeFailed
		probes      []error
		wantReady   metav1.ConditionStatus
		wantOffline metav1.ConditionStatus
	}{
		{"first success makes a new cluster Ready", kfedv1alpha1.ReasonProbeFailed, []error{ok}, metav1.ConditionTrue, metav1.ConditionFalse},
		{"one failure leaves a new cluster Unknown", kfedv1alpha1.ReasonProbeFailed, []error{fail}, metav1.ConditionUnknown, metav1.ConditionUnknown},
		{"one slow probe does not flap a Ready cluster", kfedv1alpha1.ReasonProbeFailed, []error{ok, fail, fail}, metav1.ConditionTrue, metav1.ConditionFalse},
		{"three failures in a row make it Offline", kfedv1alpha1.ReasonProbeFailed, []error{ok, fail, fail, fail}, metav1.ConditionFalse, metav1.ConditionTrue},
		{"a success in between resets the count", kfedv1alpha1.ReasonProbeFailed, []error{ok, fail, fail, ok, fail, fail}, metav1.ConditionTrue, metav1.ConditionFalse},
		{"one success brings an Offline cluster back", kfedv1alpha1.ReasonProbeFailed, []error{fail, fail, fail, ok}, metav1.ConditionTrue, metav1.ConditionFalse},
		{"a missing secret counts at once", kfedv1alpha1.ReasonSecretMissing, []error{fail}, metav1.ConditionFalse, metav1.ConditionTrue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Controller{}
			cluster := &kfedv1alpha1.Cluster{}
			cluster.Name = "cluster-1"
			for _, err := range tt.probes {
				reason := tt.reason
				if err == nil {
					reason = kfedv1alpha1.ReasonProbeFailed
				}
				c.apply(cluster, c.verdict(cluster.Name, reason, err))
			}
			ready := meta.FindStatusCondition(cluster.Status.Conditions, kfedv1alpha1.ClusterReady)
			offline := meta.FindStatusCondition(cluster.Status.Conditions, kfedv1alpha1.ClusterOffline)
			if ready == nil || offline == nil {
				t.Fatalf("conditions %v", cluster.Status.Conditions)
			}
			if ready.Status != tt.wantReady || offline.Status != tt.wantOffline {
				t.Errorf("Ready=%s Offline=%s (%s), want Ready=%s Offline=%s",
					ready.Status, offline.Status, ready.Message, tt.wantReady, tt.wantOffline)
			}
		})
	}
}

func TestStatusLocationIsWhereTheClusterIs(t *testing.T) {
	tests := []struct {
		name string
		spec kfedv1alpha1.ClusterSpec
		want *kfedv1alpha1.GeoLocation
	}{
		{"its own location", kfedv1alpha1.ClusterSpec{Region: "us-east1", Location: &kfedv1alpha1.GeoLocation{Latitude: "40.71", Longitude: "-74.01"}},
			&kfedv1alpha1.GeoLocation{Latitude: "40.71", Longitude: "-74.01"}},
		{"its region's place", kfedv1alpha1.ClusterSpec{Region: "europe-west1"}, &kfedv1alpha1.GeoLocation{Latitude: "50.45", Longitude: "3.82"}},
		{"no place for a region the table does not know", kfedv1alpha1.ClusterSpec{Region: "basement"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &kfedv1alpha1.Cluster{Spec: tt.spec, Status: kfedv1alpha1.ClusterStatus{Location: &kfedv1alpha1.GeoLocation{Latitude: "1", Longitude: "1"}}}
			(&Controller{}).place(c)
			if !sameLocation(c.Status.Location, tt.want) {
				t.Errorf("status.location %+v, want %+v", c.Status.Location, tt.want)
			}
		})
	}
}

func TestDrainCondition(t *testing.T) {
	cluster := &kfedv1alpha1.Cluster{}
	drainCondition(cluster)
	if len(cluster.Status.Conditions) != 0 {
		t.Fatalf("a cluster never drained has %v", cluster.Status.Conditions)
	}
	for _, step := range []struct {
		drained bool
		want    string
	}{{true, "True/Drained"}, {false, "False/Undrained"}, {true, "True/Drained"}} {
		cluster.Spec.Drained = step.drained
		drainCondition(cluster)
		c := meta.FindStatusCondition(cluster.Status.Conditions, kfedv1alpha1.ClusterDrained)
		if c == nil || string(c.Status)+"/"+c.Reason != step.want {
			t.Errorf("drained %v: condition %+v, want %s", step.drained, c, step.want)
		}
	}
}
