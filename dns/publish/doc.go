// Package publish owns a federated object published as a DNSEndpoint: what
// every publisher (federated Services, Gateways and Ingresses, exported
// Services) shares between reading its members and writing its records.
//
//   - health.go: the health checkers' quorum verdict on each cluster's
//     endpoint (ReadHealth, Health.Verdict), and healthwatch.go, which turns
//     checkers' reports and heartbeats into reconciles of the objects whose
//     verdicts they may change (HealthWatch);
//   - weights.go: each cluster's DNS weight from the federated Deployments
//     an object's pods are selected from (WeightsOf);
//   - resolve.go: a load balancer's hostname resolved to addresses, and
//     ingress.go, the cluster row a member's LoadBalancer Service gives
//     (ServiceRow);
//   - places.go: the regions and zones an object's names are published for
//     (Places) and the rows it published last (Previous);
//   - keep.go: what a cluster publishes when its member could not say
//     (Keep);
//   - drain.go: which rows of a drained cluster (kfed drain) leave the
//     names, and the kfed.io/Drained condition (Drained);
//   - programmed.go: the per-provider conditions from a DNSEndpoint's
//     status.publishers (ProgrammedConditions, FoldProgrammed);
//   - records.go: the records of one name set (Endpoints) and the A/AAAA
//     split every address record uses (AddressEndpoints);
//   - write.go: the one DNSEndpoint write, with server-side apply
//     (Publisher.Write), deletion and the serial marker.
//
// A caller reads its members into cluster rows (dnsendpoint.Cluster) and
// the row published last (dnsendpoint.ReadClusters), passes each through
// Keep, weighs them (Weights.Weigh), judges them (Health.Verdict), builds
// the records, and writes a Record.
package publish
