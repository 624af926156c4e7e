// Package controller tests the kfed-controller binary (leader election, metrics, an older chart's
// RBAC), secrets kept out of logs, Events, metrics and objects, and the
// `kfed dev up` contract.
//
// Like every package under test/e2e, it runs against real kube-apiserver,
// etcd, scheduler and KWOK processes started by test/framework on loopback;
// test/fedtest holds what the packages share. A new area is a new package
// here.
package controller
