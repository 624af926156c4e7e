// Package deployments reconciles federated Deployments: an apps/v1
// Deployment in the federation control plane that opts in with the
// annotation kfed.io/replica-preferences (or kfed.io/federated: "true" for
// an even spread) is planned over the Ready member clusters it is placed in
// with package planner, and copied into each of them with the planned
// spec.replicas. Its status is the sum of its copies'.
//
// A reconcile is observe → decide → write → status, a file each, as the
// services and Balancer controllers: observe.go reads the annotations
// (through deploymentconfig), the Ready members' copies, their pods and the
// unreachable members; decide.go plans (pure), with copy.go saying what a
// member copy should be (pure); write.go writes the copies, planning again
// around a member that refuses one; status.go computes the next status, the
// per-cluster table (api/clusterreplicas) and the Events it calls for
// (pure), and writes them. controller.go's Controller composes them: it
// hands observe.go's observer and write.go's copyWriter the clients and
// settings they use, and keeps its watches, Reconcile and finalizer. Bad
// input stops a reconcile before any member is written, so copies keep
// their last good replica counts.
//
// The control plane stores federated Deployments only: it must not run the
// Deployment controller, which would make ReplicaSets and pods there and
// fight kfed over the status. kfed warns with a condition when it sees a
// ReplicaSet owned by a federated Deployment in the control plane.
package deployments
