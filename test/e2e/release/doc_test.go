// Package release tests what is shipped: the Helm chart (lint, render, install on real
// clusters) and the container images run under runc through upgrade and
// uninstall.
//
// Like every package under test/e2e, it runs against real kube-apiserver,
// etcd, scheduler and KWOK processes started by test/framework on loopback;
// test/fedtest holds what the packages share. A new area is a new package
// here.
package release
