package clusters

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"

	"github.com/kfed-io/kfed/promreg"
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
	for i := range list.Items {
		cl := &list.Items[i]
		for _, typ := range []string{kfedv1alpha1.ClusterReady, kfedv1alpha1.ClusterOffline} {
			now := "Unknown" // no probe has decided yet
			if cond := meta.FindStatusCondition(cl.Status.Conditions, typ); cond != nil {
				now = string(cond.Status)
			}
			for _, st := range []string{"True", "False", "Unknown"} {
				v := 0.0
				if st == now {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(conditionDesc, prometheus.GaugeValue, v, cl.Name, typ, st)
			}
		}
	}
}
