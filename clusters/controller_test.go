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
