package zone

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The API objects the zone is read from, decoded from the API server's JSON
// into the fields the zone reads and no more. They are kfed's, not
// sigs.k8s.io/mcs-api's and k8s.io/api/discovery/v1's, on purpose: those
// packages bring k8s.io/api/core/v1 with them, which made kfed's CoreDNS
// binary 4 MB (12%) larger for types nothing here reads. The field names are
// the APIs' (the tests decode the upstream types' JSON).

// The MCS labels of an imported EndpointSlice (KEP-1645).
const (
	LabelServiceName   = "multicluster.kubernetes.io/service-name"
	LabelSourceCluster = "multicluster.kubernetes.io/source-cluster"
)

// The group versions read.
var (
	ServiceImportVersion = schema.GroupVersion{Group: "multicluster.x-k8s.io", Version: "v1beta1"}
	EndpointSliceVersion = schema.GroupVersion{Group: "discovery.k8s.io", Version: "v1"}
)

// ServiceImport is what the zone reads of a multicluster.x-k8s.io/v1beta1
// ServiceImport.
type ServiceImport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ServiceImportSpec `json:"spec"`
}

// ServiceImportSpec is the ServiceImport's spec, in part.
type ServiceImportSpec struct {
	Type  string       `json:"type"` // ClusterSetIP or Headless
	IPs   []string     `json:"ips,omitempty"`
	Ports []ImportPort `json:"ports,omitempty"`
}

// ImportPort is a port of a ServiceImport.
type ImportPort struct {
	Name     string `json:"name,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	Port     int32  `json:"port"`
}

// ServiceImportList is a list of ServiceImports.
type ServiceImportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceImport `json:"items"`
}

// EndpointSlice is what the zone reads of a discovery.k8s.io/v1
// EndpointSlice.
type EndpointSlice struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	AddressType       string          `json:"addressType"` // IPv4, IPv6 or FQDN
	Endpoints         []SliceEndpoint `json:"endpoints"`
	Ports             []SlicePort     `json:"ports,omitempty"`
}

// SliceEndpoint is an endpoint of an EndpointSlice.
type SliceEndpoint struct {
	Addresses  []string `json:"addresses"`
	Conditions struct {
		Ready *bool `json:"ready,omitempty"`
	} `json:"conditions,omitempty"`
	Hostname *string `json:"hostname,omitempty"`
}

// SlicePort is a port of an EndpointSlice; a nil Port means every port.
type SlicePort struct {
	Name     *string `json:"name,omitempty"`
	Protocol *string `json:"protocol,omitempty"`
	Port     *int32  `json:"port,omitempty"`
}

// EndpointSliceList is a list of EndpointSlices.
type EndpointSliceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EndpointSlice `json:"items"`
}

// AddServiceImports registers ServiceImport and its list with s.
func AddServiceImports(s *runtime.Scheme) error {
	s.AddKnownTypes(ServiceImportVersion, &ServiceImport{}, &ServiceImportList{})
	metav1.AddToGroupVersion(s, ServiceImportVersion)
	return nil
}

// AddEndpointSlices registers EndpointSlice and its list with s.
func AddEndpointSlices(s *runtime.Scheme) error {
	s.AddKnownTypes(EndpointSliceVersion, &EndpointSlice{}, &EndpointSliceList{})
	metav1.AddToGroupVersion(s, EndpointSliceVersion)
	return nil
}

// DeepCopyObject implements runtime.Object.
func (in *ServiceImport) DeepCopyObject() runtime.Object {
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.IPs = slices.Clone(in.Spec.IPs)
	out.Spec.Ports = slices.Clone(in.Spec.Ports)
	return &out
}

// DeepCopyObject implements runtime.Object.
func (in *ServiceImportList) DeepCopyObject() runtime.Object {
	out := *in
	out.Items = make([]ServiceImport, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopyObject().(*ServiceImport)
	}
	return &out
}

// DeepCopyObject implements runtime.Object.
func (in *EndpointSlice) DeepCopyObject() runtime.Object {
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Endpoints = make([]SliceEndpoint, len(in.Endpoints))
	for i, e := range in.Endpoints {
		e.Addresses = slices.Clone(e.Addresses)
		e.Hostname = clonePtr(e.Hostname)
		e.Conditions.Ready = clonePtr(e.Conditions.Ready)
		out.Endpoints[i] = e
	}
	out.Ports = make([]SlicePort, len(in.Ports))
	for i, p := range in.Ports {
		out.Ports[i] = SlicePort{Name: clonePtr(p.Name), Protocol: clonePtr(p.Protocol), Port: clonePtr(p.Port)}
	}
	return &out
}

// DeepCopyObject implements runtime.Object.
func (in *EndpointSliceList) DeepCopyObject() runtime.Object {
	out := *in
	out.Items = make([]EndpointSlice, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopyObject().(*EndpointSlice)
	}
	return &out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
