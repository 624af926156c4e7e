// Package fedtest holds what kfed's end-to-end suites (test/e2e/...) share
// beyond test/framework: federated objects to create (Services, Deployments,
// Balancers, Gateways) and waits for what kfed makes of them (conditions,
// Events, replicas, weights, published addresses); DNS queries and checks on
// their answers; kfed's binaries and CoreDNS built and given least-privilege
// kubeconfigs; the Helm chart rendered; HTTP checks.
package fedtest
