// Package gateways tests federated Gateways and Ingresses end to end: member copies, published
// hostnames, health, HTTPS, weights from backends, BIND.
//
// Like every package under test/e2e, it runs against real kube-apiserver,
// etcd, scheduler and KWOK processes started by test/framework on loopback;
// test/fedtest holds what the packages share. A new area is a new package
// here.
package gateways
