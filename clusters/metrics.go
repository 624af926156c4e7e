package clusters

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"

	"github.com/kfed-io/kfed/internal/promreg"
)

var conditionDesc = prometheus.NewDesc("kfed_cluster_condition",
	"Member clusters' Ready and Offline conditions: 1 for the status each has now, 0 for the others.",
	[]string{"cluster", "condition", "status"}, nil)

// RegisterMetrics registers a collector that reports every Cluster's Ready
// and Offline conditions from fed (the manager's cache) at scrape time, so
// that an operator can alert on a member Offline by name. A collector
// already registered (a second manager in one process) is kept.
func RegisterMetrics(reg prometheus.Registerer, fed client.Reader) error {
	_, err := promreg.Register(reg, prometheus.Collector(conditionCollector{fed: fed}))
	return err
}

type conditionCollector struct{ fed client.Reader }

func (c conditionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- conditionDesc }

func (c conditionCollector) Collect(ch chan<- prometheus.Metric) {
	var list kfedv1alpha1.ClusterList
	if err := c.fed.List(context.Background(), &list); err != nil {
		return
	}
	for _, s := range conditionSamples(list.Items) {
		ch <- prometheus.MustNewConstMetric(conditionDesc, prometheus.GaugeValue, s.value, s.cluster, s.condition, s.status)
	}
}

// conditionSample is one series of kfed_cluster_condition.
type conditionSample struct {
	cluster, condition, status string
	value                      float64
}

// conditionSamples are the series for clusters: for each cluster and each of
// Ready and Offline, 1 for the status it has (Unknown before any probe
// decided) and 0 for the other two.
func conditionSamples(clusters []kfedv1alpha1.Cluster) []conditionSample {
	var out []conditionSample
	for i := range clusters {
		cl := &clusters[i]
		for _, typ := range []string{kfedv1alpha1.ClusterReady, kfedv1alpha1.ClusterOffline} {
			now := "Unknown"
			if cond := meta.FindStatusCondition(cl.Status.Conditions, typ); cond != nil {
				now = string(cond.Status)
			}
			for _, st := range []string{"True", "False", "Unknown"} {
				v := 0.0
				if st == now {
					v = 1
				}
				out = append(out, conditionSample{cl.Name, typ, st, v})
			}
		}
	}
	return out
}
