// Package health tests health checks end to end: the quorum taking a dead endpoint out of DNS,
// verdicts across a controller kill, detection latency, failover and
// proximity routing, and the agent benchmark.
//
// Like every package under test/e2e, it runs against real kube-apiserver,
// etcd, scheduler and KWOK processes started by test/framework on loopback;
// test/fedtest holds what the packages share. A new area is a new package
// here.
package health
