// Package mcs owns kfed's side of the Kubernetes Multi-Cluster Services API
// (KEP-1645, multicluster.x-k8s.io/v1beta1): it turns the ServiceExports of
// every member cluster into a ServiceImport, a derived Service and
// EndpointSlices in every member, and sets the exports' Valid, Ready and
// Conflict conditions.
//
// What other components (the CoreDNS plugin's clusterset.local zone, kfed
// status) can rely on, in each member:
//
//   - ServiceImport N/S exists while some member exports N/S validly. Its
//     spec.ips are that member's ClusterSetIPs (one per IP family the
//     member serves, the cluster IPs of the derived Service kfed-mcs-S; see
//     DerivedName), empty for a Headless import; status.clusters lists the
//     exporting clusters' IDs.
//   - Its EndpointSlices are labelled multicluster.kubernetes.io/service-name
//     = S, multicluster.kubernetes.io/source-cluster = the exporting
//     cluster's ID and endpointslice.kubernetes.io/managed-by = ManagedBy;
//     one per source cluster and address type, owned by the import. For a
//     Headless import they hold every source's pod addresses and hostnames;
//     for a ClusterSetIP import, what the member routes to (ADR 0011).
//   - A cluster's ID is its ClusterProperty cluster.clusterset.k8s.io
//     (ClusterID), which kfed join writes; its member name otherwise.
//
// The controller follows the house's shape: observe (caches only), Decide
// (pure, table-tested), write (server-side apply as copies.Apply), report
// (conditions).
package mcs
