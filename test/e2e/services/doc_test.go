// Package services tests federated Services end to end: shards, records, conditions and Events,
// member outages, controller restarts, server-side apply of member objects,
// zones from nodes, and the test bed itself (loopback load balancer, KWOK
// capacity); BenchmarkReconcile1000Services.
//
// Like every package under test/e2e, it runs against real kube-apiserver,
// etcd, scheduler and KWOK processes started by test/framework on loopback;
// test/fedtest holds what the packages share. A new area is a new package
// here.
package services
