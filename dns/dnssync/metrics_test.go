package dnssync

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kfed-io/kfed/dns/dnsprovider"
)

func TestSyncMetricsCountFailuresAndTimeEveryPass(t *testing.T) {
	tests := []struct {
		name string
		pass func(m *Metrics)
		want string
	}{
		{"a pass that reaches the provider and succeeds", func(m *Metrics) {
			m.observe("rfc2136", dnsprovider.Stats{}, dnsprovider.Stats{Requests: 2, Changes: 3}, 0, 30*time.Millisecond, nil)
		}, `kfed_dns_syncs_total{provider="rfc2136",result="success"} 1`},
		{"a pass the provider fails", func(m *Metrics) {
			m.observe("route53", dnsprovider.Stats{}, dnsprovider.Stats{Requests: 1}, 0, 2*time.Second, errors.New("throttled"))
		}, `kfed_dns_syncs_total{provider="route53",result="error"} 1`},
		{"a pass that cannot list DNSEndpoints", func(m *Metrics) {
			m.failed("clouddns", time.Millisecond)
		}, `kfed_dns_syncs_total{provider="clouddns",result="error"} 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			tt.pass(m)
			if err := testutil.GatherAndCompare(reg, strings.NewReader(
				"# HELP kfed_dns_syncs_total Sync passes (list DNSEndpoints, plan, apply) by result: success or error.\n"+
					"# TYPE kfed_dns_syncs_total counter\n"+tt.want+"\n"), "kfed_dns_syncs_total"); err != nil {
				t.Error(err)
			}
			if n, err := testutil.GatherAndCount(reg, "kfed_dns_sync_duration_seconds"); err != nil || n != 1 {
				t.Errorf("sync_duration_seconds has %d series (%v), want 1", n, err)
			}
			ok := strings.HasSuffix(tt.want, `"success"} 1`)
			if n, _ := testutil.GatherAndCount(reg, "kfed_dns_last_success_timestamp_seconds"); (n == 1) != ok {
				t.Errorf("last_success_timestamp_seconds has %d series after a pass that succeeded=%v", n, ok)
			}
		})
	}
}
