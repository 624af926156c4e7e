// Package publish owns a federated object published as a DNSEndpoint: what
// every publisher (federated Services, Gateways and Ingresses, exported
// Services) shares between reading its members and writing its records.
//
// A publisher observes, per cluster, what its member gave (Member: an
// Outcome and a dnsendpoint.Cluster row) and hands that, with what was
// published last, the checkers' view and the routing, to Decide
// (pipeline.go), one pure function from rows to records and the next time
// to look. Its steps, one file each:
//   - keep.go: what a cluster publishes when its member could not say;
//   - weights.go: each cluster's DNS weight from the federated Deployments
//     an object's pods are selected from (WeightsOf);
//   - health.go: the health checkers' quorum verdict on each cluster's
//     endpoint (ReadHealth, Health.Judge), and healthwatch.go, which turns
//     checkers' reports and heartbeats into reconciles of the objects whose
//     verdicts they may change (HealthWatch);
//   - drain.go: which rows of a drained cluster (kfed drain) leave the
//     names, and the kfed.io/Drained condition (Drained);
//   - failover.go: the serving place of a failover order;
//   - places.go: the regions and zones an object's names are published for
//     and the rows it published last (Previous);
//   - records.go: the records of one name set (Endpoints) and the A/AAAA
//     split every address record uses (AddressEndpoints).
//
// Around it: resolve.go, a load balancer's hostname resolved to addresses,
// and ingress.go, the row a member's LoadBalancer Service gives
// (ServiceRow); write.go, the one DNSEndpoint write, with server-side apply
// (Publisher.Write), deletion and the serial marker; programmed.go, the
// per-provider conditions from a DNSEndpoint's status.publishers.
package publish
