// Package fleet tests a fleet of members end to end on `kfed dev up`'s bed
// (devenv.StartDev, light members above three): a Service answers in every
// member's CoreDNS, a failed endpoint leaves every member's answers and comes
// back, a checker cut off alone flips nothing; and, on demand, the figures of
// BENCHMARKS.md's fleet table.
//
// `make test` runs it with four members; KFED_FLEET_MEMBERS=10 (`make
// fleet`) or 30 sizes the bed, and KFED_FLEET_SERVICES=1000 adds the
// measured run (TestFleetFigures).
//
// Like every package under test/e2e, it runs against real kube-apiserver and
// etcd processes on loopback; test/fedtest holds what the packages share.
package fleet
