package v1alpha1

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/internal/geo"
	"github.com/kfed-io/kfed/internal/geo/regions"
)

// Condition types and reasons of a Cluster.
const (
	// ClusterReady is True while the member's API server answers /readyz.
	ClusterReady = "Ready"
	// ClusterOffline is True once the member failed enough probes in a row to be
	// taken out of the federation; it is the inverse of Ready with hysteresis.
	ClusterOffline = "Offline"

	ReasonProbeSucceeded    = "ProbeSucceeded"
	ReasonProbeFailed       = "ProbeFailed"
	ReasonKubeconfigInvalid = "KubeconfigInvalid"
	ReasonSecretMissing     = "KubeconfigSecretMissing"
	ReasonPending           = "Pending"

	// ClusterDrained is True while the cluster is drained (spec.drained):
	// out of every answer, but for names it alone serves.
	ClusterDrained = "Drained"
	// ReasonDrained and ReasonUndrained are its reasons.
	ReasonDrained   = "Drained"
	ReasonUndrained = "Undrained"

	// ClusterTooManyCheckers is True while the cluster's agents keep more
	// HealthReports than spec.healthCheck.maxCheckers allows: the oldest
	// maxCheckers are counted, the rest are not (ADR 0013).
	ClusterTooManyCheckers = "TooManyCheckers"
	// ReasonOverCheckerLimit and ReasonWithinCheckerLimit are its reasons.
	ReasonOverCheckerLimit   = "OverCheckerLimit"
	ReasonWithinCheckerLimit = "WithinCheckerLimit"
)

// Well-known labels kfed puts on objects it creates.
const (
	// LabelManagedBy marks objects kfed created (value ManagedBy).
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is LabelManagedBy's value on kfed's objects.
	ManagedBy = "kfed"
	// LabelFederation names the federation an object belongs to: shards in
	// members, DNSEndpoints in the control plane (readers select on it).
	LabelFederation = "kfed.io/federation"
	// LabelCluster names the member Cluster an object belongs to.
	LabelCluster = "kfed.io/cluster"
	// LabelInventory marks a Cluster kfed keeps for an inventory entry
	// (value InventoryClusterProfile): it is created, changed and deleted
	// with its ClusterProfile, never by hand.
	LabelInventory = "kfed.io/inventory"
	// InventoryClusterProfile is LabelInventory's value for a Cluster taken
	// from a ClusterProfile.
	InventoryClusterProfile = "clusterprofile"
	// AnnotationControlPlaneHealthy shows, on a Cluster taken from a
	// ClusterProfile, the status of the profile's ControlPlaneHealthy
	// condition, for kubectl; the Cluster controller reads the profile itself
	// (False: not Ready, reason ControlPlaneUnhealthy, Withdrawn).
	AnnotationControlPlaneHealthy = "kfed.io/control-plane-healthy"
	// ReasonControlPlaneUnhealthy is the Ready condition's reason while the
	// cluster's inventory says its control plane is not healthy.
	ReasonControlPlaneUnhealthy = "ControlPlaneUnhealthy"
	// DefaultNamespace is where kfed keeps its Secrets and namespaced objects.
	DefaultNamespace = "kfed-system"
	// DefaultKubeconfigKey is the Secret key that holds a member's kubeconfig.
	DefaultKubeconfigKey = "kubeconfig"
)

// ClusterSpec says where a member cluster is and how to reach it.
//
// +kubebuilder:validation:XValidation:rule="has(self.kubeconfigSecretRef) != has(self.clusterProfileRef)",message="exactly one of kubeconfigSecretRef and clusterProfileRef is set"
type ClusterSpec struct {
	// Region the cluster runs in, such as "us-east1". It names the region-level
	// DNS name of every Service the cluster serves. When empty, the region is
	// read from the nodes' topology.kubernetes.io/region label (status.region).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Region string `json:"region,omitempty"`

	// Zones the cluster's nodes run in, such as ["us-east1-b"]. Each names a
	// zone-level DNS name under the region. When empty, the zones are read
	// from the nodes' topology.kubernetes.io/zone labels (status.zones) and
	// follow the nodes.
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +optional
	Zones []string `json:"zones,omitempty"`

	// Location is where the cluster is, for ordering clusters by distance
	// (proximity routing). When empty, it is where the public cloud region
	// the cluster names is (kfed ships a table of AWS, Google Cloud and Azure
	// regions); a cluster in a region the table does not know has no
	// location, and is ordered after those that have one.
	// +optional
	Location *GeoLocation `json:"location,omitempty"`

	// KubeconfigSecretRef points at the Secret holding a kubeconfig for the
	// member whose current context reaches it (a cluster joined with kfed
	// join). Exactly one of it and clusterProfileRef is set.
	// +optional
	KubeconfigSecretRef SecretKeyRef `json:"kubeconfigSecretRef,omitzero"`

	// ClusterProfileRef names the Cluster Inventory API ClusterProfile
	// (multicluster.x-k8s.io) the cluster was taken from: kfed reaches it
	// through the profile's access provider and the exec plugin configured
	// for it, and keeps this Cluster in line with the profile.
	// +optional
	ClusterProfileRef *ObjectRef `json:"clusterProfileRef,omitempty"`

	// HealthCheck says whether kfed-healthcheck agents in this cluster probe
	// federated endpoints.
	// +optional
	HealthCheck HealthCheckSpec `json:"healthCheck,omitempty"`

	// Drained takes the cluster out of every answer (kfed drain): the names
	// of every Service, Gateway and Ingress it serves stop answering with
	// its addresses, everywhere — its own per-cluster names too — while its
	// copies and workloads stay, still probed by the checkers. A name served
	// by no cluster but drained ones keeps them, and says so. False (kfed
	// undrain) brings it back.
	// +optional
	Drained bool `json:"drained,omitempty"`
}

// GeoLocation is a place on the Earth in decimal degrees. The numbers are
// strings because a CRD's schema cannot hold a float portably (controller-gen
// refuses them); Cluster.Coordinates reads them.
type GeoLocation struct {
	// Latitude, -90 (south) to 90 (north), such as "40.71".
	// +kubebuilder:validation:Pattern=`^[-+]?(90(\.0+)?|[1-8]?[0-9](\.[0-9]+)?)$`
	Latitude string `json:"latitude"`
	// Longitude, -180 (west) to 180 (east), such as "-74.01".
	// +kubebuilder:validation:Pattern=`^[-+]?(180(\.0+)?|(1[0-7][0-9]|[1-9]?[0-9])(\.[0-9]+)?)$`
	Longitude string `json:"longitude"`
}

// ObjectRef names a namespaced object.
type ObjectRef struct {
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// SecretKeyRef names one key of a namespaced Secret.
type SecretKeyRef struct {
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key within the Secret's data; "kubeconfig" when empty.
	// +optional
	Key string `json:"key,omitempty"`
}

// HealthCheckSpec switches a cluster's health-check agents on or off and
// bounds how many of them count.
type HealthCheckSpec struct {
	// Enabled is true unless set to false.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// MaxCheckers is how many of this cluster's checkers count in any
	// quorum (kfed join --max-checkers): the oldest of its HealthReports,
	// up to this many. It is the operator's to set, never the member's,
	// so that no member can outvote the others by starting more agents
	// (ADR 0013). 1 when absent: the chart's one agent.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxCheckers *int32 `json:"maxCheckers,omitempty"`
}

// DefaultMaxCheckers is how many of a cluster's checkers count when its
// spec.healthCheck.maxCheckers is absent.
const DefaultMaxCheckers = 1

// ClusterStatus is what kfed observed of the member.
type ClusterStatus struct {
	// Conditions Ready, Offline and Drained, with reasons and transition
	// times.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the spec generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// KubernetesVersion the member's API server reports.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// Region is the region the member's nodes carry in their
	// topology.kubernetes.io/region label (the most common one), kept while
	// spec.region is empty.
	// +optional
	Region string `json:"region,omitempty"`

	// Zones are the zones the member's nodes carry in their
	// topology.kubernetes.io/zone label, sorted, kept while spec.zones is
	// empty.
	// +optional
	Zones []string `json:"zones,omitempty"`

	// Location is where kfed places the cluster: spec.location, else its
	// region's place in kfed's table of cloud regions; empty when neither
	// says.
	// +optional
	Location *GeoLocation `json:"location,omitempty"`
}

// Cluster registers a member cluster with the federation.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=kc
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=`.spec.region`
// +kubebuilder:printcolumn:name="Zones",type=string,JSONPath=`.spec.zones`
// +kubebuilder:printcolumn:name="Node Zones",type=string,JSONPath=`.status.zones`
// +kubebuilder:printcolumn:name="Latitude",type=string,JSONPath=`.status.location.latitude`,priority=1
// +kubebuilder:printcolumn:name="Longitude",type=string,JSONPath=`.status.location.longitude`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Drained",type=boolean,JSONPath=`.spec.drained`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterSpec   `json:"spec"`
	Status ClusterStatus `json:"status,omitempty"`
}

// HealthCheckEnabled reports whether agents should probe from this cluster.
func (c *Cluster) HealthCheckEnabled() bool {
	return c.Spec.HealthCheck.Enabled == nil || *c.Spec.HealthCheck.Enabled
}

// MaxCheckers is how many of the cluster's checkers count
// (spec.healthCheck.maxCheckers, DefaultMaxCheckers when absent).
func (c *Cluster) MaxCheckers() int {
	if m := c.Spec.HealthCheck.MaxCheckers; m != nil && *m > 0 {
		return int(*m)
	}
	return DefaultMaxCheckers
}

// KubeconfigKey is the Secret key holding the kubeconfig, defaulted.
func (r SecretKeyRef) KubeconfigKey() string {
	if r.Key == "" {
		return DefaultKubeconfigKey
	}
	return r.Key
}

// ClusterList is a list of Clusters.
//
// +kubebuilder:object:root=true
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}

// Location returns the cluster's region and zones: those of its spec, else
// those read from its nodes.
func (c *Cluster) Location() (region string, zones []string) {
	region, zones = c.Spec.Region, c.Spec.Zones
	if region == "" {
		region = c.Status.Region
	}
	if len(zones) == 0 {
		zones = c.Status.Zones
	}
	return region, zones
}

// Coordinates returns where the cluster is: spec.location, else the place of
// its region (Location) in kfed's table of cloud regions; false when neither
// says. An unreadable spec.location (the CRD's schema keeps it out) is an
// error, and the region's place is returned beside it.
func (c *Cluster) Coordinates() (geo.Point, bool, error) {
	var err error
	if l := c.Spec.Location; l != nil {
		p, perr := geo.ParseLatLon(l.Latitude, l.Longitude)
		if perr == nil {
			return p, true, nil
		}
		err = fmt.Errorf("cluster %s: spec.location: %w", c.Name, perr)
	}
	region, _ := c.Location()
	p, ok := regions.Lookup(region)
	return p, ok, err
}

// NewGeoLocation is p as a Cluster's location.
func NewGeoLocation(p geo.Point) *GeoLocation {
	lat, lon, _ := strings.Cut(p.String(), ",")
	return &GeoLocation{Latitude: lat, Longitude: lon}
}

// Withdrawn reports whether the cluster's inventory took it out of the
// federation (its ClusterProfile's ControlPlaneHealthy is False): unlike a
// cluster that merely cannot be reached, it leaves every answer. A nil
// Cluster is not withdrawn.
func (c *Cluster) Withdrawn() bool {
	if c == nil {
		return false
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type == ClusterReady {
			return cond.Status == metav1.ConditionFalse && cond.Reason == ReasonControlPlaneUnhealthy
		}
	}
	return false
}
