package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Balancer policies (spec.policy.policyName).
const (
	// PolicyPriority fills targets in spec.policy.priorities.targetOrder.
	PolicyPriority = "priority"
	// PolicyProportional shares replicas by spec.policy.proportions.
	PolicyProportional = "proportional"
)

// Condition types and reasons of a Balancer.
const (
	// BalancerBalanced is True when every target's scale matches the plan
	// for the current generation. When False, its reason names the phase
	// that failed and the targets keep the replica counts they had.
	BalancerBalanced = "kfed.io/Balanced"
	// BalancerFallback is True while some target has pods pending past the
	// startup timeout and its replicas are started elsewhere.
	BalancerFallback = "kfed.io/Fallback"

	// Reasons of Balanced.
	ReasonTargetsScaled      = "TargetsScaled"
	ReasonInvalidSpec        = "InvalidSpec"        // duplicate names, min > max, a bad selector
	ReasonInvalidPolicy      = "InvalidPolicy"      // the planner refused the policy
	ReasonTargetKindUnknown  = "TargetKindUnknown"  // reading scales: no such kind is served
	ReasonTargetNotFound     = "TargetNotFound"     // reading scales: no such object
	ReasonNoScaleSubresource = "NoScaleSubresource" // reading scales: the kind has no /scale
	ReasonScaleReadFailed    = "ScaleReadFailed"    // reading scales: any other error
	ReasonPodListFailed      = "PodListFailed"      // listing pods
	ReasonSelectorMismatch   = "SelectorMismatch"   // listing pods: a target's pod is not in spec.selector
	ReasonScaleUpdateFailed  = "ScaleUpdateFailed"  // setting counts

	// Reasons of Fallback.
	ReasonStartupTimeout = "StartupTimeout"
	ReasonAllStarted     = "PodsStarting"
	ReasonNoFallback     = "NoFallback"
)

// BalancerSpec is the Kubernetes autoscaler Balancer design's spec: one
// replica count kept across several scalable targets by a policy.
type BalancerSpec struct {
	// Targets are the objects (each with a Scale subresource, in the
	// Balancer's namespace) whose replicas the Balancer sets.
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	Targets []BalancerTarget `json:"targets"`

	// Replicas is the total the targets should run together. It is what
	// `kubectl scale` and a HorizontalPodAutoscaler set.
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`

	// Selector selects every pod of every target; the HPA reads it through
	// the Scale subresource (status.selector) to find the pods it measures.
	Selector metav1.LabelSelector `json:"selector"`

	// Policy says how replicas are shared among the targets.
	Policy BalancerPolicy `json:"policy"`
}

// BalancerTarget is one place replicas can go.
type BalancerTarget struct {
	// Name identifies the target in the policy.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// ScaleTargetRef is the object whose /scale the Balancer sets.
	ScaleTargetRef CrossVersionObjectReference `json:"scaleTargetRef"`

	// MinReplicas the target always has, whatever the policy says.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas the target never exceeds.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
}

// CrossVersionObjectReference names an object in the Balancer's namespace,
// as autoscaling/v2's HPA does.
type CrossVersionObjectReference struct {
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// BalancerPolicy is one of the design's two policies, with its settings.
type BalancerPolicy struct {
	// PolicyName is priority or proportional.
	// +kubebuilder:validation:Enum=priority;proportional
	PolicyName string `json:"policyName"`

	// Priorities configure the priority policy.
	// +optional
	Priorities *PriorityPolicy `json:"priorities,omitempty"`

	// Proportions configure the proportional policy.
	// +optional
	Proportions *ProportionalPolicy `json:"proportions,omitempty"`

	// Fallback moves replicas away from targets whose pods do not start.
	// +optional
	Fallback *Fallback `json:"fallback,omitempty"`
}

// PriorityPolicy fills targets in order, each up to its maximum.
type PriorityPolicy struct {
	// TargetOrder lists target names, the first filled first.
	// +listType=atomic
	TargetOrder []string `json:"targetOrder"`
}

// ProportionalPolicy shares replicas by relative weights.
type ProportionalPolicy struct {
	// TargetProportions maps target names to their relative shares.
	TargetProportions map[string]int32 `json:"targetProportions"`
}

// Fallback says when a target counts as not starting its pods.
type Fallback struct {
	// StartupTimeout is how long a pod may stay Pending before its target
	// is treated as unable to start it, such as "30s".
	StartupTimeout metav1.Duration `json:"startupTimeout"`
}

// BalancerStatus is what the controller last observed and did.
type BalancerStatus struct {
	// Replicas is the sum of the targets' observed replicas (their scales'
	// status.replicas): what the HPA reads as current.
	// +optional
	Replicas int32 `json:"replicas"`

	// Selector is spec.selector in string form, for the Scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Targets are each target's planned and observed counts.
	// +listType=map
	// +listMapKey=name
	// +optional
	Targets []BalancerTargetStatus `json:"targets,omitempty"`

	// Conditions kfed.io/Balanced and kfed.io/Fallback.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// BalancerTargetStatus is one target as the controller last saw it.
type BalancerTargetStatus struct {
	Name string `json:"name"`
	// Replicas is the count the Balancer set on the target's scale.
	Replicas int32 `json:"replicas"`
	// Running, Pending and NotStarted count the target's pods; NotStarted
	// are the pending ones past the startup timeout. In a cluster without
	// pods (a federation control plane) Running is the scale's
	// status.replicas and the others are 0.
	Running    int32 `json:"running"`
	Pending    int32 `json:"pending"`
	NotStarted int32 `json:"notStarted"`
}

// Balancer keeps one replica count across several scalable targets by a
// policy, as in the Kubernetes autoscaler's Balancer design. It has the
// Scale subresource, so `kubectl scale` and a HorizontalPodAutoscaler drive
// it as they drive a Deployment.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=bal
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.policy.policyName`
// +kubebuilder:printcolumn:name="Balanced",type=string,JSONPath=`.status.conditions[?(@.type=="kfed.io/Balanced")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="kfed.io/Balanced")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Balancer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BalancerSpec   `json:"spec"`
	Status BalancerStatus `json:"status,omitempty"`
}

// BalancerList is a list of Balancers.
//
// +kubebuilder:object:root=true
type BalancerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Balancer `json:"items"`
}
