package agent

import (
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
)

func TestSameReport(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	base := func() *kfedv1alpha1.HealthReport {
		return &kfedv1alpha1.HealthReport{
			ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{kfedv1alpha1.LabelChecker: "c1"}, ResourceVersion: "7"},
			Federation: "dev", Cluster: "cluster-1", Endpoints: 3, UnhealthyCount: 1,
			Unhealthy: []kfedv1alpha1.UnhealthyEndpoint{{Endpoint: "shop/web/cluster-2", Since: since, Reason: "connection refused"}},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*kfedv1alpha1.HealthReport)
		same   bool
	}{
		{"identical reports need no write", func(*kfedv1alpha1.HealthReport) {}, true},
		{"object metadata other than labels is not content", func(r *kfedv1alpha1.HealthReport) { r.ResourceVersion = "9" }, true},
		{"a label differs", func(r *kfedv1alpha1.HealthReport) { r.Labels[kfedv1alpha1.LabelChecker] = "c2" }, false},
		{"the cluster differs", func(r *kfedv1alpha1.HealthReport) { r.Cluster = "cluster-2" }, false},
		{"degraded differs", func(r *kfedv1alpha1.HealthReport) { r.Degraded = true }, false},
		{"the endpoint count differs", func(r *kfedv1alpha1.HealthReport) { r.Endpoints = 4 }, false},
		{"another endpoint is down", func(r *kfedv1alpha1.HealthReport) { r.Unhealthy[0].Endpoint = "shop/web/cluster-3" }, false},
		{"the reason changed", func(r *kfedv1alpha1.HealthReport) { r.Unhealthy[0].Reason = "timeout" }, false},
		{"down since another time", func(r *kfedv1alpha1.HealthReport) { r.Unhealthy[0].Since = metav1.NewTime(since.Add(time.Second)) }, false},
		{"one endpoint fewer is down", func(r *kfedv1alpha1.HealthReport) { r.Unhealthy = nil }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := base(), base()
			tc.change(b)
			if got := sameReport(a, b); got != tc.same {
				t.Errorf("sameReport = %v, want %v", got, tc.same)
			}
		})
	}
}

// A new checker's report names it, its cluster and federation, and counts
// what it probes; targets start healthy, so none is listed unhealthy.
func TestReportOfNewTargets(t *testing.T) {
	e, err := healthcheck.NewEngine(healthcheck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec := healthcheck.Defaults()
	addr := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1")}
	if err := e.Set([]healthcheck.Target{
		{Key: "shop/web/cluster-1", Cluster: "cluster-1", Addrs: addr, Spec: spec},
		{Key: "shop/web/cluster-2", Cluster: "cluster-2", Addrs: addr, Spec: spec},
	}); err != nil {
		t.Fatal(err)
	}
	a := &agent{o: Options{Checker: "c1", Cluster: "cluster-1", Federation: "dev", Namespace: "kfed-system"}, ns: kfedv1alpha1.MemberNamespace("cluster-1"),
		engine: e, since: map[string]time.Time{}}
	r := a.report()
	if r.Name != "c1" || r.Namespace != "kfed-member-cluster-1" || r.Cluster != "cluster-1" || r.Federation != "dev" {
		t.Errorf("report is %s/%s for %s in %s, want kfed-member-cluster-1/c1 for cluster-1 in dev", r.Namespace, r.Name, r.Cluster, r.Federation)
	}
	if r.Labels[kfedv1alpha1.LabelChecker] != "c1" || r.Labels[kfedv1alpha1.LabelFederation] != "dev" || r.Labels[kfedv1alpha1.LabelManagedBy] != kfedv1alpha1.ManagedBy {
		t.Errorf("labels = %v", r.Labels)
	}
	if r.Endpoints != 2 || r.Degraded || len(r.Unhealthy) != 0 || r.UnhealthyCount != 0 {
		t.Errorf("report = endpoints %d degraded %v unhealthy %v, want 2 endpoints all healthy", r.Endpoints, r.Degraded, r.Unhealthy)
	}
}

func TestCmpDuration(t *testing.T) {
	for _, tc := range []struct{ d, def, want time.Duration }{
		{0, time.Second, time.Second},
		{-time.Second, time.Second, time.Second},
		{time.Minute, time.Second, time.Minute},
	} {
		if got := cmpDuration(tc.d, tc.def); got != tc.want {
			t.Errorf("cmpDuration(%v, %v) = %v, want %v", tc.d, tc.def, got, tc.want)
		}
	}
}

func TestSameReportComparesRTTs(t *testing.T) {
	rtt := func(c string, d time.Duration) kfedv1alpha1.ClusterRTT {
		return kfedv1alpha1.ClusterRTT{Cluster: c, RTT: metav1.Duration{Duration: d}}
	}
	a := &kfedv1alpha1.HealthReport{RTTs: []kfedv1alpha1.ClusterRTT{rtt("b", time.Millisecond)}}
	for _, tc := range []struct {
		name string
		rtts []kfedv1alpha1.ClusterRTT
		same bool
	}{
		{"the same buckets", []kfedv1alpha1.ClusterRTT{rtt("b", time.Millisecond)}, true},
		{"another bucket", []kfedv1alpha1.ClusterRTT{rtt("b", 80*time.Millisecond)}, false},
		{"a cluster more", []kfedv1alpha1.ClusterRTT{rtt("b", time.Millisecond), rtt("c", time.Millisecond)}, false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameReport(a, &kfedv1alpha1.HealthReport{RTTs: tc.rtts}); got != tc.same {
				t.Errorf("sameReport = %v, want %v", got, tc.same)
			}
		})
	}
}
