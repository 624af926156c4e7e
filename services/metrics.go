package services

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Metrics are the service controller's Prometheus collectors.
type Metrics struct {
	shardOps       *prometheus.CounterVec
	endpointWrites *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them with reg. A collector
// already registered (a second manager in one process) is reused.
func NewMetrics(reg prometheus.Registerer, fed client.Reader, members func() int) (*Metrics, error) {
	m := &Metrics{
		shardOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kfed", Name: "shard_operations_total",
			Help: "Shards created, updated, adopted, released and deleted in member clusters.",
		}, []string{"cluster", "operation"}),
		endpointWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kfed", Name: "dnsendpoint_writes_total",
			Help: "DNSEndpoint objects created and updated in the control plane.",
		}, []string{"operation"}),
	}
	var err error
	if m.shardOps, err = register(reg, m.shardOps); err != nil {
		return nil, err
	}
	if m.endpointWrites, err = register(reg, m.endpointWrites); err != nil {
		return nil, err
	}
	if _, err := register(reg, prometheus.Collector(stateCollector{fed, members})); err != nil {
		return nil, err
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

func (m *Metrics) shard(cluster, op string) {
	if m != nil {
		m.shardOps.WithLabelValues(cluster, op).Inc()
	}
}

func (m *Metrics) endpoint(op string) {
	if m != nil {
		m.endpointWrites.WithLabelValues(op).Inc()
	}
}

var (
	membersDesc = prometheus.NewDesc("kfed_member_clusters_ready",
		"Member clusters that are Ready and whose caches are synced.", nil, nil)
	servicesDesc = prometheus.NewDesc("kfed_federated_services",
		"Federated Services by the status of their kfed.io conditions.", []string{"condition", "status"}, nil)
)

// stateCollector reports state read at scrape time from the informer cache,
// so no reconcile has to keep gauges in step.
type stateCollector struct {
	fed     client.Reader
	members func() int
}

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- membersDesc
	ch <- servicesDesc
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(membersDesc, prometheus.GaugeValue, float64(c.members()))
	var list corev1.ServiceList
	if err := c.fed.List(context.Background(), &list); err != nil {
		return
	}
	counts := map[[2]string]int{}
	for i := range list.Items {
		svc := &list.Items[i]
		if !IsFederated(svc) {
			continue
		}
		for _, typ := range []string{CondValid, CondPlaced, CondPublished} {
			st := "Unknown"
			if cond := meta.FindStatusCondition(svc.Status.Conditions, typ); cond != nil {
				st = string(cond.Status)
			}
			counts[[2]string{typ, st}]++
		}
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(servicesDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}
