package services

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/policy/failover"

	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/internal/promreg"
)

// Metrics are the service controller's Prometheus collectors.
type Metrics struct {
	copyOps          *prometheus.CounterVec
	endpointWrites   *prometheus.CounterVec
	failoverSwitches prometheus.Counter
	phases           *prometheus.HistogramVec
}

// The phases of a reconcile that kfed_service_reconcile_phase_seconds
// times: where the time from a Service created to its name answering
// goes, besides the wait in the queue.
const (
	phaseOpen     = "open"     // read the Service, add the finalizer
	phaseObserve  = "observe"  // read shards, health and the DNSEndpoint
	phaseCopies   = "copies"   // write the shards to the members
	phaseEndpoint = "endpoint" // write the DNSEndpoint
	phaseStatus   = "status"   // write the Service's status
)

// NewMetrics creates the collectors and registers them with reg. A collector
// already registered (a second manager in one process) is reused.
// freshness is how long a checker's heartbeat counts (DefaultFreshness when
// zero), for the checkers gauge.
func NewMetrics(reg prometheus.Registerer, fed client.Reader, members func() int, freshness time.Duration) (*Metrics, error) {
	m := &Metrics{
		copyOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kfed", Name: "shard_operations_total",
			Help: "Shards created, updated, adopted, released and deleted in member clusters.",
		}, []string{"cluster", "operation"}),
		endpointWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kfed", Name: "dnsendpoint_writes_total",
			Help: "DNSEndpoint objects created and updated in the control plane.",
		}, []string{"operation"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "kfed", Name: "service_reconcile_phase_seconds",
			Help:    "Time a federated Service's reconcile spends in each phase: open, observe, copies, endpoint, status.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"phase"}),
	}
	m.failoverSwitches = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "kfed", Name: "failover_switches_total",
		Help: "Times a Service routed by failover changed the place that serves it (failover, failback, pin, or every cluster when no place is up).",
	})
	var err error
	if m.failoverSwitches, err = promreg.Register(reg, m.failoverSwitches); err != nil {
		return nil, err
	}
	if m.copyOps, err = promreg.Register(reg, m.copyOps); err != nil {
		return nil, err
	}
	if m.endpointWrites, err = promreg.Register(reg, m.endpointWrites); err != nil {
		return nil, err
	}
	if m.phases, err = promreg.Register(reg, m.phases); err != nil {
		return nil, err
	}
	if _, err := promreg.Register(reg, prometheus.Collector(stateCollector{fed: fed, members: members, freshness: freshness})); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) copyOp(cluster, op string) {
	if m != nil {
		m.copyOps.WithLabelValues(cluster, op).Inc()
	}
}

// endpointWrite counts a write of the DNSEndpoint that changed it (op),
// and, once the records are published (wrote), a switch of the serving
// place of a failover order.
func (m *Metrics) endpointWrite(op publish.Op, st *status, wrote bool) {
	if m == nil {
		return
	}
	if op != publish.Unchanged {
		m.endpointWrites.WithLabelValues(string(op)).Inc()
	}
	if d := st.failoverDecision; wrote && d != nil && d.Switched(st.failoverPrev) {
		m.failoverSwitches.Inc()
	}
}

// since records the time since start in phase, and returns now: the start
// of the next phase.
func (m *Metrics) since(phase string, start time.Time) time.Time {
	now := time.Now()
	if m != nil {
		m.phases.WithLabelValues(phase).Observe(now.Sub(start).Seconds())
	}
	return now
}

var (
	membersDesc = prometheus.NewDesc("kfed_member_clusters_ready",
		"Member clusters that are Ready and whose caches are synced.", nil, nil)
	servicesDesc = prometheus.NewDesc("kfed_federated_services",
		"Federated Services by the status of their kfed.io conditions.", []string{"condition", "status"}, nil)
	failOpenDesc = prometheus.NewDesc("kfed_federated_services_failing_open",
		"Federated Services with no healthy endpoint anywhere, whose global name keeps them all (fail open).", nil, nil)
	verdictsDesc = prometheus.NewDesc("kfed_endpoint_verdicts",
		"Endpoints of federated Services by the health checkers' published verdict.", []string{"verdict"}, nil)
	activeDesc = prometheus.NewDesc("kfed_failover_active_place",
		"1 for the place that serves each Service routed by failover; none while no place of its order is up.",
		[]string{"namespace", "service", "place"}, nil)
	checkersDesc = prometheus.NewDesc("kfed_health_checkers",
		"Configured health checkers (those holding a seat of their cluster) by state: fresh (heartbeat within the freshness window), stale, degraded (fresh but abstaining).",
		[]string{"state"}, nil)
)

// stateCollector reports state read at scrape time from the informer cache,
// so no reconcile has to keep gauges in step.
type stateCollector struct {
	fed       client.Reader
	members   func() int
	freshness time.Duration
}

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- membersDesc
	ch <- servicesDesc
	ch <- failOpenDesc
	ch <- verdictsDesc
	ch <- activeDesc
	ch <- checkersDesc
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(membersDesc, prometheus.GaugeValue, float64(c.members()))
	// Every scrape reads every Service and DNSEndpoint: the cache's own
	// objects, read only, not a copy of each (tens of MiB at 10,000).
	var list corev1.ServiceList
	if err := c.fed.List(context.Background(), &list, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	counts, failingOpen := countServices(list.Items)
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(servicesDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	ch <- prometheus.MustNewConstMetric(failOpenDesc, prometheus.GaugeValue, float64(failingOpen))
	c.collectHealth(ch)
}

// countServices counts federated Services by condition type and status, and
// those failing open (no endpoint healthy anywhere).
func countServices(list []corev1.Service) (counts map[[2]string]int, failingOpen int) {
	counts = map[[2]string]int{}
	for i := range list {
		svc := &list[i]
		if !kfedv1alpha1.IsFederated(svc) {
			continue
		}
		for _, typ := range []string{kfedv1alpha1.ConditionValid, kfedv1alpha1.ConditionPlaced, kfedv1alpha1.ConditionPublished, kfedv1alpha1.ConditionHealthy} {
			st := "Unknown"
			if cond := meta.FindStatusCondition(svc.Status.Conditions, typ); cond != nil {
				st = string(cond.Status)
			}
			counts[[2]string{typ, st}]++
		}
		// DNSPublished exists only where a DNS provider publishes, so it
		// is counted only where it is set.
		if cond := meta.FindStatusCondition(svc.Status.Conditions, kfedv1alpha1.ConditionDNSPublished); cond != nil {
			counts[[2]string{kfedv1alpha1.ConditionDNSPublished, string(cond.Status)}]++
		}
		if cond := meta.FindStatusCondition(svc.Status.Conditions, kfedv1alpha1.ConditionHealthy); cond != nil && cond.Reason == reasonNoneHealthy {
			failingOpen++
		}
	}
	return counts, failingOpen
}

// collectHealth reports the published verdicts and the checkers' states.
func (c stateCollector) collectHealth(ch chan<- prometheus.Metric) {
	ctx := context.Background()
	var eps extdnsv1alpha1.DNSEndpointList
	if err := c.fed.List(ctx, &eps, client.MatchingLabels(dnsendpoint.Selector("")), client.UnsafeDisableDeepCopy); err == nil {
		healthy, unhealthy := 0, 0
		for i := range eps.Items {
			ep := &eps.Items[i]
			if st, err := failover.ParseState(ep.Annotations[dnsendpoint.AnnotationFailover]); err == nil && st.Active != "" {
				ch <- prometheus.MustNewConstMetric(activeDesc, prometheus.GaugeValue, 1, ep.Namespace, ep.Name, st.Active)
			}
			table, _ := dnsendpoint.ReadClusters(ep)
			for _, cl := range table {
				if cl.Unhealthy {
					unhealthy++
				} else {
					healthy++
				}
			}
		}
		ch <- prometheus.MustNewConstMetric(verdictsDesc, prometheus.GaugeValue, float64(healthy), "healthy")
		ch <- prometheus.MustNewConstMetric(verdictsDesc, prometheus.GaugeValue, float64(unhealthy), "unhealthy")
	}
	var reports kfedv1alpha1.HealthReportList
	var clusters kfedv1alpha1.ClusterList
	var leases coordinationv1.LeaseList
	if c.fed.List(ctx, &reports) != nil || c.fed.List(ctx, &clusters) != nil ||
		c.fed.List(ctx, &leases, client.HasLabels{kfedv1alpha1.LabelChecker}) != nil {
		return
	}
	// Configured are the checkers holding a seat of their cluster (ADR
	// 0013): a member's reports beyond its seats show on its Cluster.
	counted, _ := kfedv1alpha1.Seats(reports.Items, clusters.Items)
	renewed := map[string]time.Time{}
	for i := range leases.Items {
		renewed[kfedv1alpha1.CheckerName(leases.Items[i].Namespace, leases.Items[i].Name)] = publish.Heartbeat(&leases.Items[i])
	}
	freshness := c.freshness
	if freshness <= 0 {
		freshness = publish.DefaultFreshness
	}
	states := map[string]int{"fresh": 0, "stale": 0, "degraded": 0}
	for _, r := range counted {
		t, ok := renewed[r.Checker]
		switch {
		case !ok || time.Since(t) >= freshness:
			states["stale"]++
		case r.Degraded:
			states["degraded"]++
		default:
			states["fresh"]++
		}
	}
	for st, n := range states {
		ch <- prometheus.MustNewConstMetric(checkersDesc, prometheus.GaugeValue, float64(n), st)
	}
}
