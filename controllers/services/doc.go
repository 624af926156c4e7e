// Package services owns federated Services: it mirrors each one into the
// member clusters it is placed in (shards), watches the shards' load-balancer
// ingress, computes the Service's DNS names and records (publish.Decide) and
// writes them as a DNSEndpoint, and reports progress and problems on the
// control-plane Service's status and as Events.
//
// controller.go holds the Controller's configuration and what it derives
// from it; reconcile.go composes a reconcile of its phases, one after the
// other, a file each: observe.go (reads only), shard.go (what each member's
// shard should be), write.go (the shards, and what each write did),
// decide.go (what each member gave, and the records), endpoint.go (the
// DNSEndpoint), events.go (what was done, told once done), status.go
// (conditions, patched once); metrics.go counts what the writes did.
package services
