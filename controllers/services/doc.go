// Package services owns federated Services: it mirrors each one into the
// member clusters it is placed in (shards), watches the shards' load-balancer
// ingress, computes the Service's DNS names and records (publish.Decide) and
// writes them as a DNSEndpoint, and reports progress and problems on the
// control-plane Service's status and as Events.
//
// A reconcile runs its phases one after the other, a file each: observe.go
// (reads only), shard.go (what each member's shard should be), write.go
// (the shards, then the DNSEndpoint), metrics.go (counts what the writes
// did), decide.go (what each member gave, and the records), events.go (what
// was done, told once done), status.go (conditions, patched once).
package services
