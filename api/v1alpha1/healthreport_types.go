package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LabelChecker names the health-check agent a HealthReport or heartbeat Lease
// belongs to.
const LabelChecker = "kfed.io/checker"

// HealthReport is one health-check agent's view of the federation's
// endpoints: which it finds unhealthy, and whether it trusts its own view. One
// per checker, in the member namespace of the checker's cluster
// (MemberNamespace), named like the checker; its heartbeat is the Lease of
// the same name there. The namespace, which only that cluster's identities
// may write in, says which cluster the report speaks for (ADR 0013). The agent writes it
// only when a verdict changes (and on a slow resync), so the report's size
// and write rate follow failures, not endpoints (ADR 0006).
//
// A checker is configured while its HealthReport exists and holds one of its
// cluster's seats (Seats): the quorum of an endpoint's verdict counts the
// federation's counted HealthReports. Deleting a checker's report retires it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=healthreports,shortName=hr
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.cluster`
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=`.region`,priority=1
// +kubebuilder:printcolumn:name="Degraded",type=boolean,JSONPath=`.degraded`
// +kubebuilder:printcolumn:name="Endpoints",type=integer,JSONPath=`.endpoints`
// +kubebuilder:printcolumn:name="Unhealthy",type=integer,JSONPath=`.unhealthyCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HealthReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Federation the checker probes for.
	Federation string `json:"federation"`
	// Cluster is the member the checker runs in, as the agent was told; the
	// report speaks for the cluster whose member namespace holds it.
	Cluster string `json:"cluster"`
	// Region is the region of the checker's cluster as the agent last read
	// it, for kubectl; the assignment reads the Cluster itself
	// (CountedReport.FailureDomain).
	// +optional
	Region string `json:"region,omitempty"`
	// CheckersPerEndpoint is how many checkers the agent assigns each
	// endpoint when the fleet has more (its --checkers-per-endpoint); the
	// controller counts the smallest any report asks for (ADR 0012).
	// Absent or 0: the checker probes every endpoint.
	// +kubebuilder:validation:Minimum=0
	// +optional
	CheckersPerEndpoint int32 `json:"checkersPerEndpoint,omitempty"`
	// Degraded is true while the checker sees most endpoints of two or more
	// clusters fail at once: it then doubts its own network and abstains.
	// +optional
	Degraded bool `json:"degraded,omitempty"`
	// Endpoints is how many endpoints the checker probes.
	// +optional
	Endpoints int32 `json:"endpoints,omitempty"`
	// UnhealthyCount is len(Unhealthy), for kubectl get.
	// +optional
	UnhealthyCount int32 `json:"unhealthyCount,omitempty"`
	// Unhealthy lists the endpoints the checker finds unhealthy; every other
	// endpoint it probes is healthy in its view.
	// +listType=map
	// +listMapKey=endpoint
	// +optional
	Unhealthy []UnhealthyEndpoint `json:"unhealthy,omitempty"`
	// RTTs are how long the checker's probes of each cluster take to pass,
	// in coarse buckets that change only when the measure moves materially
	// (package proximity): the CoreDNS plugin of the checker's cluster orders
	// clusters that labels do not tell apart by them. A cluster not yet
	// measured is absent.
	// +listType=map
	// +listMapKey=cluster
	// +optional
	RTTs []ClusterRTT `json:"rtts,omitempty"`
	// Loads are the endpoints whose answers to the checker's probes carry
	// a load (ORCA's endpoint-load-metrics header): the figure, smoothed,
	// in coarse buckets that change only when it moves materially (package
	// policy/load), so that the report is written when a share would
	// change, not at every probe. An endpoint without a figure, or whose
	// figure expired, is absent.
	// +listType=map
	// +listMapKey=endpoint
	// +optional
	Loads []EndpointLoad `json:"loads,omitempty"`
}

// ClusterRTT is the round-trip time from a checker's cluster to another.
type ClusterRTT struct {
	// Cluster is the cluster probed.
	Cluster string `json:"cluster"`
	// RTT is the middle of the bucket the measure falls in, such as "81.6ms".
	RTT metav1.Duration `json:"rtt"`
}

// EndpointKey names one cluster's endpoint of a federated Service as reports
// carry it: "namespace/service/cluster".
func EndpointKey(namespace, service, cluster string) string {
	return namespace + "/" + service + "/" + cluster
}

// ParseEndpointKey reads an EndpointKey back; ok is false for a string with
// fewer than three parts or an empty one. Namespaces and Service names have
// no "/", so the cluster is the rest.
func ParseEndpointKey(key string) (namespace, service, cluster string, ok bool) {
	namespace, rest, ok1 := strings.Cut(key, "/")
	service, cluster, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 || namespace == "" || service == "" || cluster == "" {
		return "", "", "", false
	}
	return namespace, service, cluster, true
}

// UnhealthyEndpoint is one endpoint a checker finds unhealthy.
type UnhealthyEndpoint struct {
	// Endpoint is "namespace/service/cluster" (EndpointKey).
	Endpoint string `json:"endpoint"`
	// Since is when the checker's verdict turned unhealthy.
	Since metav1.Time `json:"since"`
	// Reason is the last probe's failure, such as "connection refused".
	// +optional
	Reason string `json:"reason,omitempty"`
}

// EndpointLoad is one endpoint's load as a checker reads it.
type EndpointLoad struct {
	// Endpoint is "namespace/service/cluster" (EndpointKey).
	Endpoint string `json:"endpoint"`
	// Utilization is the middle of the bucket the figure falls in, 1 being
	// the endpoint's target, such as "975m".
	Utilization resource.Quantity `json:"utilization"`
	// Since is when the checker first published this bucket.
	Since metav1.Time `json:"since"`
}

// HealthReportList is a list of HealthReports.
//
// +kubebuilder:object:root=true
type HealthReportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HealthReport `json:"items"`
}
