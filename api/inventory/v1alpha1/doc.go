// Package v1alpha1 holds SIG-Multicluster's Cluster Inventory API as kfed
// reads and writes it: ClusterProfile (KEP-4322, with KEP-5339's access
// providers) and PlacementDecision (KEP-5313), group multicluster.x-k8s.io.
//
// The module sigs.k8s.io/cluster-inventory-api is not served by the module
// proxy kfed builds from, so the types are written here from the published
// API (cluster-inventory-api v0.1.2 and its main branch at 8375ac2, May
// 2026): the same JSON names, validation and CRD schema, so objects written
// by OCM, GKE Fleet or that project's own client are read unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=multicluster.x-k8s.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the Cluster Inventory API's group and version.
var GroupVersion = schema.GroupVersion{Group: "multicluster.x-k8s.io", Version: "v1alpha1"}

// AddToScheme registers this package's types with s. It is a plain function,
// not an init-time registration, so importing the package changes nothing.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ClusterProfile{}, &ClusterProfileList{},
		&PlacementDecision{}, &PlacementDecisionList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
