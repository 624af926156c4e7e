// Package v1alpha1 is kfed's copy of the schema of ExternalDNS's
// externaldns.k8s.io/v1alpha1 DNSEndpoint: the desired DNS state kfed writes
// to the federation control plane. Keeping ExternalDNS's group and schema means
// ExternalDNS's CRD source can publish the same objects kfed's own providers
// and CoreDNS plugin read.
//
// How kfed lays out its records on this schema, and where it keeps what each
// cluster contributes, is package dnsendpoint's (ADR 0003); nothing else
// reads or writes the layout.
//
// +kubebuilder:object:generate=true
// +groupName=externaldns.k8s.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is ExternalDNS's API group and version.
var GroupVersion = schema.GroupVersion{Group: "externaldns.k8s.io", Version: "v1alpha1"}

// AddToScheme registers DNSEndpoint with s.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &DNSEndpoint{}, &DNSEndpointList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
