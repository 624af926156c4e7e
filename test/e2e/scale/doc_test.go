// Package scale tests kfed at scale: many federated Services published quickly, then quiet
// (`make scale` runs the full size).
//
// Like every package under test/e2e, it runs against real kube-apiserver,
// etcd, scheduler and KWOK processes started by test/framework on loopback;
// test/fedtest holds what the packages share. A new area is a new package
// here.
package scale
