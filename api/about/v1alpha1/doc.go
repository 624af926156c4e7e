// Package v1alpha1 holds the About API of KEP-2149 (ClusterId for ClusterSet
// identification), about.k8s.io/v1alpha1 ClusterProperty, written from the
// KEP: its Go module is not served here. kfed reads and writes two
// properties in each member: the cluster's ID (ClusterIDProperty), which
// names it in the Multi-Cluster Services API's source-cluster labels and
// headless DNS names, and the clusterset it belongs to (ClusterSetProperty).
//
// +kubebuilder:object:generate=true
// +groupName=about.k8s.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the About API's group and version.
var GroupVersion = schema.GroupVersion{Group: "about.k8s.io", Version: "v1alpha1"}

// AddToScheme registers ClusterProperty with s.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ClusterProperty{}, &ClusterPropertyList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
