// Package monitoring tests what operators monitor kfed with against the
// running binaries: the metrics catalogue (docs/metrics.md), the Grafana
// dashboard and the Prometheus alerting rules (deploy/chart/kfed/files/).
//
// One test starts a federation on loopback, runs kfed-controller,
// kfed-healthcheck and CoreDNS built with the kfed plugin as processes,
// drives them through what the alerts are about (a member Offline, a DNS
// conflict, failing DNS syncs, a Service failing open), scrapes them, and
// checks the catalogue, the dashboard's queries and the alerts' expressions
// against the scrape. The others check the dashboard against a typed Grafana
// dashboard model and the rules with Prometheus's promtool (check and unit
// tests). The tools come from hack/promtool.sh ($KFED_PROMTOOL).
package monitoring
