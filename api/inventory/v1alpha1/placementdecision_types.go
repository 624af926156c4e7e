package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels of a PlacementDecision (KEP-5313).
const (
	// LabelDecisionKey is shared by the slices of one decision that spans
	// several PlacementDecisions.
	LabelDecisionKey = "multicluster.x-k8s.io/decision-key"
	// LabelDecisionIndex orders the slices of one decision, from 0.
	LabelDecisionIndex = "multicluster.x-k8s.io/decision-index"
	// LabelPlacementKey links a decision to the workload it places.
	LabelPlacementKey = "multicluster.x-k8s.io/placement-key"
)

// ClusterProfileReference names a ClusterProfile.
type ClusterProfileReference struct {
	// Name of the ClusterProfile.
	// +required
	Name string `json:"name"`
	// Namespace of the ClusterProfile; the PlacementDecision's when empty.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ClusterDecision is one cluster a workload is placed in.
type ClusterDecision struct {
	// ClusterProfileRef names the cluster's ClusterProfile.
	// +required
	ClusterProfileRef ClusterProfileReference `json:"clusterProfileRef"`
	// Reason the cluster was chosen, for debugging and audit.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// PlacementDecision is the set of clusters a scheduler chose, at one point in
// time: data only, written by a scheduler and read by whoever carries the
// placement out. A decision of more than 100 clusters spans several objects
// that share the label multicluster.x-k8s.io/decision-key.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
type PlacementDecision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Decisions are the clusters chosen, at most 100 in one object.
	// +kubebuilder:validation:MinItems=0
	// +kubebuilder:validation:MaxItems=100
	// +required
	Decisions []ClusterDecision `json:"decisions"`

	// SchedulerName names the scheduler that made the decision.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`
}

// PlacementDecisionList is a list of PlacementDecisions.
//
// +kubebuilder:object:root=true
type PlacementDecisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PlacementDecision `json:"items"`
}
