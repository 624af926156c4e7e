package index

import (
	"maps"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func TestCombineRTTs(t *testing.T) {
	const ms = time.Millisecond
	report := func(degraded bool, rtts map[string]time.Duration) *kfedv1alpha1.HealthReport {
		r := &kfedv1alpha1.HealthReport{Degraded: degraded}
		for c, d := range rtts {
			r.RTTs = append(r.RTTs, kfedv1alpha1.ClusterRTT{Cluster: c, RTT: metav1.Duration{Duration: d}})
		}
		return r
	}
	tests := []struct {
		name    string
		reports []*kfedv1alpha1.HealthReport
		want    map[string]time.Duration
	}{
		{"no checker: no RTTs", nil, map[string]time.Duration{}},
		{"one checker's RTTs as they are", []*kfedv1alpha1.HealthReport{report(false, map[string]time.Duration{"b": 10 * ms, "c": 80 * ms})},
			map[string]time.Duration{"b": 10 * ms, "c": 80 * ms}},
		{"three checkers: the median, one odd checker does not move it", []*kfedv1alpha1.HealthReport{
			report(false, map[string]time.Duration{"b": 10 * ms}),
			report(false, map[string]time.Duration{"b": 900 * ms}),
			report(false, map[string]time.Duration{"b": 12 * ms}),
		}, map[string]time.Duration{"b": 12 * ms}},
		{"two checkers: the lower", []*kfedv1alpha1.HealthReport{
			report(false, map[string]time.Duration{"b": 10 * ms}),
			report(false, map[string]time.Duration{"b": 30 * ms, "c": 5 * ms}),
		}, map[string]time.Duration{"b": 10 * ms, "c": 5 * ms}},
		{"a degraded checker is not counted", []*kfedv1alpha1.HealthReport{
			report(true, map[string]time.Duration{"b": 900 * ms}),
			report(false, map[string]time.Duration{"b": 10 * ms}),
		}, map[string]time.Duration{"b": 10 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CombineRTTs(tt.reports); !maps.Equal(got, tt.want) {
				t.Errorf("CombineRTTs = %v, want %v", got, tt.want)
			}
		})
	}
}
