package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The well-known properties of KEP-2149.
const (
	// ClusterIDProperty names the ClusterProperty whose value is the
	// cluster's ID, unique within its clusterset for as long as it is a
	// member.
	ClusterIDProperty = "cluster.clusterset.k8s.io"
	// ClusterSetProperty names the ClusterProperty whose value identifies
	// the clusterset the cluster belongs to.
	ClusterSetProperty = "clusterset.k8s.io"
)

// ClusterPropertySpec is the value of a property.
type ClusterPropertySpec struct {
	// Value of the property: for cluster.clusterset.k8s.io a valid DNS
	// label (KEP-2149), for others any string.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128000
	Value string `json:"value"`
}

// ClusterProperty is one property of the cluster it is in, named by its
// object name (KEP-2149).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=clusterproperties,scope=Cluster
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=https://github.com/kubernetes/enhancements/tree/master/keps/sig-multicluster/2149-clusterid"
// +kubebuilder:printcolumn:name="value",type=string,JSONPath=`.spec.value`
// +kubebuilder:printcolumn:name="age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterProperty struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ClusterPropertySpec `json:"spec"`
}

// ClusterPropertyList is a list of ClusterProperty.
//
// +kubebuilder:object:root=true
type ClusterPropertyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterProperty `json:"items"`
}
