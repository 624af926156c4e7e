// Package deployments tests federated Deployments and Balancers end to end: plans, capacity, member
// outages, DNS weights from ready replicas; their benchmarks.
//
// Like every package under test/e2e, it runs against real kube-apiserver,
// etcd, scheduler and KWOK processes started by test/framework on loopback;
// test/fedtest holds what the packages share. A new area is a new package
// here.
package deployments
