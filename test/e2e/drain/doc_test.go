// Package drain tests kfed drain and kfed undrain end to end: a member
// taken out of every answer in every member's CoreDNS and at every DNS
// provider (BIND over RFC 2136, and the Route53 and Cloud DNS local
// endpoints), a name that lives only there kept, and everything back after
// undrain.
//
// Like every package under test/e2e, it runs against real kube-apiserver,
// etcd, scheduler and KWOK processes started by test/framework on loopback;
// test/fedtest holds what the packages share.
package drain
