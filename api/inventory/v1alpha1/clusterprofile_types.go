package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
)

// Well-known labels, conditions and properties of a ClusterProfile.
const (
	// LabelClusterManager names the cluster manager that owns a
	// ClusterProfile; its value equals spec.clusterManager.name.
	LabelClusterManager = "x-k8s.io/cluster-manager"
	// LabelClusterSet, on a ClusterProfile's namespace (and, as kfed reads
	// it, optionally on the profile), names the ClusterSet it belongs to.
	LabelClusterSet = "multicluster.x-k8s.io/clusterset"

	// ConditionControlPlaneHealthy is False when the cluster's control plane
	// is not healthy.
	ConditionControlPlaneHealthy = "ControlPlaneHealthy"
	// ConditionJoined is True while the cluster is a member of the cluster
	// manager's fleet (KEP-4322 names it among the conditions a manager may
	// set; the published types define no constant for it).
	ConditionJoined = "Joined"

	// ExecExtension is the clientcmd extension whose data a plugin gets as
	// ExecCredential.spec.cluster.config (client.authentication.k8s.io).
	ExecExtension = "client.authentication.k8s.io/exec"
	// ExecArgsExtension and ExecEnvsExtension carry profile-sourced
	// arguments (a YAML list) and environment variables (a YAML map) for
	// the exec plugin (KEP-5339).
	ExecArgsExtension = "clusterprofiles.multicluster.x-k8s.io/exec/additional-args"
	ExecEnvsExtension = "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs"
)

// ClusterProfileSpec is what the cluster manager says of the cluster.
type ClusterProfileSpec struct {
	// DisplayName is a human-readable name of the cluster.
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// ClusterManager names the cluster manager that owns this profile.
	// +required
	ClusterManager ClusterManager `json:"clusterManager"`
}

// ClusterManager names the system that manages the cluster, such as Open
// Cluster Management or GKE Fleet. It is immutable; the manager also sets the
// label x-k8s.io/cluster-manager to the same name.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="ClusterManager is immutable"
type ClusterManager struct {
	// Name of the cluster manager.
	// +required
	Name string `json:"name"`
}

// ClusterProfileStatus is what the cluster manager observed of the cluster.
type ClusterProfileStatus struct {
	// Conditions of the cluster, such as ControlPlaneHealthy.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions"`

	// Version of the cluster.
	// +optional
	Version ClusterVersion `json:"version,omitempty"`

	// Properties of the cluster: ClusterProperty names (KEP-2149) or names
	// of the cluster manager's own.
	// +optional
	// +listType=map
	// +listMapKey=name
	Properties []Property `json:"properties,omitempty"`

	// CredentialProviders is the former name of AccessProviders.
	// Deprecated: use AccessProviders; of two providers with the same name,
	// the one in AccessProviders is used.
	// +optional
	// +listType=map
	// +listMapKey=name
	CredentialProviders []AccessProvider `json:"credentialProviders,omitempty"`

	// AccessProviders say how to reach the cluster, one per kind of access
	// (KEP-5339): a consumer picks the first one it has a plugin for.
	// +optional
	// +listType=map
	// +listMapKey=name
	AccessProviders []AccessProvider `json:"accessProviders,omitempty"`
}

// AccessProvider is one way to reach the cluster: a provider name, which a
// consumer maps to an exec plugin, and the cluster's connection details
// (server, certificate-authority-data, extensions) without credentials.
type AccessProvider struct {
	Name    string              `json:"name"`
	Cluster clientcmdv1.Cluster `json:"cluster,omitempty"`
}

// ClusterVersion is the version of the cluster's software.
type ClusterVersion struct {
	// Kubernetes is the version of the cluster's Kubernetes.
	// +optional
	Kubernetes string `json:"kubernetes,omitempty"`
}

// Property is one named characteristic of the cluster.
type Property struct {
	// Name of the property, well-known or the manager's own.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`

	// Value of the property.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:MinLength=1
	// +required
	Value string `json:"value"`

	// LastObservedTime is when the property was last observed on the
	// cluster.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +optional
	LastObservedTime metav1.Time `json:"lastObservedTime,omitempty"`
}

// ClusterProfile is one cluster of a fleet's inventory.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
type ClusterProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ClusterProfileSpec `json:"spec"`
	// +optional
	Status ClusterProfileStatus `json:"status,omitempty"`
}

// ClusterProfileList is a list of ClusterProfiles.
//
// +kubebuilder:object:root=true
type ClusterProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterProfile `json:"items"`
}

// Property returns the value of the property name, "" when absent.
func (p *ClusterProfile) Property(name string) string {
	for _, pr := range p.Status.Properties {
		if pr.Name == name {
			return pr.Value
		}
	}
	return ""
}
