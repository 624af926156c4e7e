// Package dns tests kfed's DNS end to end: the CoreDNS plugin (answers, chains, zone
// transfers to BIND and Knot secondaries, forwarding as the READMEs say), the
// DNS sync to BIND, ExternalDNS publishing kfed's DNSEndpoints, and tenancy.
//
// Like every package under test/e2e, it runs against real kube-apiserver,
// etcd, scheduler and KWOK processes started by test/framework on loopback;
// test/fedtest holds what the packages share. A new area is a new package
// here.
package dns
