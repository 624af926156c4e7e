// Package deployments reconciles federated Deployments: an apps/v1
// Deployment in the federation control plane that opts in with the
// annotation kfed.io/replica-preferences (or kfed.io/federated: "true" for
// an even spread) is planned over the Ready member clusters it is placed in
// with replicas/planner, and copied into each of them with the planned
// spec.replicas. Its status is the sum of its copies'.
//
// A reconcile is split observe → decide → write, like the Balancer
// controller: deploymentconfig reads the annotations (pure), copy.go says what a
// member copy should be and how kfed stands to one that exists (pure),
// decide.go plans (pure), status.go computes the next status, the
// per-cluster table (api/clusterreplicas) and the Events it calls for
// (pure), and sync.go writes the copies, the status and the Events. Bad
// input stops a reconcile before any member is written, so copies keep
// their last good replica counts.
//
// The control plane stores federated Deployments only: it must not run the
// Deployment controller, which would make ReplicaSets and pods there and
// fight kfed over the status. kfed warns with a condition when it sees a
// ReplicaSet owned by a federated Deployment in the control plane.
package deployments
