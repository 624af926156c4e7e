// Package balancer reconciles Balancers: one replica count kept across
// several scalable targets by a priority or proportional policy, as in the
// Kubernetes autoscaler's Balancer design. It runs Balancers in the
// federation control plane and, through registry.Registry, in every Ready
// member cluster.
//
// A reconcile is split the way cluster-api splits its machinedeployment
// controller: observe.go reads each target's /scale and counts its pods,
// decide.go turns that and the spec into replica counts with the pure
// package planner (no Kubernetes in it, table-tested), status.go computes
// the next status and the Events it calls for (pure, table-tested), and
// write.go's writer writes, in the Balancer's cluster, the scales that
// differ (an Event for each), then that status and its Events. The
// Reconciler (controller.go) runs the phases in that order. Bad input
// stops a reconcile before anything is written, so targets keep their
// counts.
//
// Where there are no pods to count (a federation control plane runs no
// Deployment controller), a target's running replicas are its scale's
// status.replicas, nothing is pending, and fallback never triggers.
package balancer
