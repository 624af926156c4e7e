// Package services owns federated Services: it mirrors each one into the
// member clusters it is placed in (shards), watches the shards' load-balancer
// ingress, computes the Service's DNS names and records (package publish's pure
// functions) and writes them as a DNSEndpoint, and reports progress and
// problems on the control-plane Service's status and as Events.
package services
