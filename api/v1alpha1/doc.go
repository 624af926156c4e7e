// Package v1alpha1 holds kfed's own API types in group kfed.io: the member
// Cluster registration and the Balancer; later, the HealthReport.
//
// +kubebuilder:object:generate=true
// +groupName=kfed.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of kfed's own objects.
var GroupVersion = schema.GroupVersion{Group: "kfed.io", Version: "v1alpha1"}

// AddToScheme registers this package's types with s. It is a plain function,
// not an init-time registration, so importing the package changes nothing.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Cluster{}, &ClusterList{}, &HealthReport{}, &HealthReportList{}, &Balancer{}, &BalancerList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
