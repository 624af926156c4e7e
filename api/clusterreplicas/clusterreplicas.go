// Package clusterreplicas is kfed's contract on the per-cluster replica
// table of a federated Deployment: the annotation kfed.io/cluster-replicas
// that the federated Deployment controller writes on the control-plane
// Deployment, and that readers (the services controller's DNS weights,
// kfed status, kubectl describe) read back. It holds, for each member the
// Deployment is placed in, the replicas kfed planned there and how many of
// them are ready.
//
// The controller writes through Encode; readers read through Read and
// never parse the annotation themselves.
package clusterreplicas

import (
	"encoding/json"
	"fmt"
)

// Annotation holds the table: a JSON object from cluster name to Cluster.
const Annotation = "kfed.io/cluster-replicas"

// Cluster is one member's line of the table.
type Cluster struct {
	// Planned is the spec.replicas kfed gave the member's copy.
	Planned int32 `json:"planned"`
	// Ready is the copy's status.readyReplicas, as last seen.
	Ready int32 `json:"ready"`
	// Reported is true once the copy runs the current template and has
	// made every planned pod (its status.replicas reached Planned): from
	// then on Ready counts. Until then readers take Planned, so a cluster
	// whose pods are still being made is not weighed as if it had none.
	Reported bool `json:"reported"`
	// Capacity is set when the member is full: its pods stayed
	// unschedulable past the threshold, and it can run this many.
	Capacity *int32 `json:"capacity,omitempty"`
	// Waiting are the replicas of Planned kept beyond Capacity, pending,
	// so that room coming back is seen at once.
	Waiting int32 `json:"waiting,omitempty"`
}

// Encode returns the annotation value for table. encoding/json sorts map
// keys, so the same table always encodes the same way.
func Encode(table map[string]Cluster) string {
	if table == nil {
		table = map[string]Cluster{}
	}
	b, _ := json.Marshal(table) // a map of plain structs always marshals
	return string(b)
}

// Read returns the table in annotations; ok is false when there is none.
func Read(annotations map[string]string) (table map[string]Cluster, ok bool, err error) {
	v, ok := annotations[Annotation]
	if !ok {
		return nil, false, nil
	}
	if err := json.Unmarshal([]byte(v), &table); err != nil {
		return nil, true, fmt.Errorf("annotation %s: %w", Annotation, err)
	}
	return table, true, nil
}
