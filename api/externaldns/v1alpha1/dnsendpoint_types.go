package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Endpoint is one DNS record set: a name, a type and its targets.
type Endpoint struct {
	// DNSName is the fully qualified name, without a trailing dot.
	DNSName string `json:"dnsName,omitempty"`
	// Targets are the record values: addresses for A/AAAA, a name for CNAME,
	// "priority weight port target" for SRV.
	Targets []string `json:"targets,omitempty"`
	// RecordType is A, AAAA, CNAME, SRV or TXT.
	RecordType string `json:"recordType,omitempty"`
	// SetIdentifier tells apart record sets that share a name and type, as
	// weighted routing needs. kfed leaves it empty (ADR 0003).
	SetIdentifier string `json:"setIdentifier,omitempty"`
	// RecordTTL in seconds.
	RecordTTL int64 `json:"recordTTL,omitempty"`
	// Labels carry ownership and provenance.
	Labels map[string]string `json:"labels,omitempty"`
	// ProviderSpecific holds properties a provider may use (weights,
	// alias). kfed sets none (ADR 0003).
	ProviderSpecific []ProviderSpecificProperty `json:"providerSpecific,omitempty"`
}

// ProviderSpecificProperty is one name/value property of an Endpoint.
type ProviderSpecificProperty struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

// DNSEndpointSpec lists the desired record sets.
type DNSEndpointSpec struct {
	Endpoints []Endpoint `json:"endpoints,omitempty"`
}

// DNSEndpointStatus is what publishers observed.
type DNSEndpointStatus struct {
	// ObservedGeneration is the generation last published (ExternalDNS's
	// field).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Publishers says, per DNS provider kfed publishes to, which generation
	// it has published and which names it left alone. kfed's addition to the
	// schema; ExternalDNS ignores it.
	// +listType=map
	// +listMapKey=provider
	// +optional
	Publishers []PublisherStatus `json:"publishers,omitempty"`
	// Conditions are kfed's too: kfed.io/NamesAdmitted says whether every
	// name of the object is its namespace's to publish (docs/design.md,
	// "Tenancy").
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PublisherStatus is one provider's view of a DNSEndpoint.
type PublisherStatus struct {
	// Provider is route53, clouddns or rfc2136.
	Provider string `json:"provider"`
	// ObservedGeneration is the generation whose records are published.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conflicts are the names of this object that the provider's zone holds
	// with records kfed does not own, left alone.
	// +listType=set
	// +optional
	Conflicts []string `json:"conflicts,omitempty"`
	// Error is the provider's error from the last sync, kept while the
	// object's current generation is not published there: why it is not.
	// +optional
	Error string `json:"error,omitempty"`
}

// DNSEndpoint is the desired DNS state of one federated Service.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=dnsendpoints
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=https://github.com/kubernetes-sigs/external-dns/pull/2007"
type DNSEndpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DNSEndpointSpec   `json:"spec,omitempty"`
	Status DNSEndpointStatus `json:"status,omitempty"`
}

// DNSEndpointList is a list of DNSEndpoints.
//
// +kubebuilder:object:root=true
type DNSEndpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNSEndpoint `json:"items"`
}
