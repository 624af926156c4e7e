package monitoring

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/internal/memlimit"
	"github.com/kfed-io/kfed/test/framework"
	"github.com/kfed-io/kfed/test/route53fake"
)

const (
	federation = "fed"
	zone       = "example.com"
)

// scrape is what the binaries exposed, merged over every scrape of the test:
// metric families by name, and which binary exposed each.
type scrape struct {
	families map[string]*dto.MetricFamily
	source   map[string]string
}

func (s *scrape) add(source string, fams map[string]*dto.MetricFamily) {
	for name, mf := range fams {
		if old, ok := s.families[name]; ok {
			old.Metric = append(old.Metric, mf.Metric...)
			continue
		}
		s.families[name], s.source[name] = mf, source
	}
}

// exposes reports whether a query may select name: a family, or a
// histogram's or summary's _bucket, _sum or _count series.
func (s *scrape) exposes(name string) bool {
	if _, ok := s.families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if mf := s.families[base]; ok && mf != nil &&
			(mf.GetType() == dto.MetricType_HISTOGRAM || (mf.GetType() == dto.MetricType_SUMMARY && suffix != "_bucket")) {
			return true
		}
	}
	return false
}

// value is the value of the series of name whose labels include want, or
// false when there is none.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := fams[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.Metric {
		match := 0
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				match++
			}
		}
		if match != len(want) {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Histogram != nil: // how many it timed
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func get(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", url, err)
	}
	return fams, nil
}

// containerLimit is the memory limit kfed-controller is told its container
// has.
const containerLimit = 512 << 20

// startController runs the kfed-controller binary, publishing to Route53 at
// r53, and returns its metrics address.
func startController(t *testing.T, f *framework.Federation, r53 *route53fake.Server, zoneID string) string {
	t.Helper()
	bin := framework.BuildCommand(t, "kfed-controller")
	metrics, health := framework.FreeAddr(t), framework.FreeAddr(t)
	cmd := exec.Command(bin, "--kubeconfig", f.Kubeconfig, "--context", "federation",
		"--federation", federation, "--domain", zone,
		"--metrics-bind-address", metrics, "--health-probe-bind-address", health,
		"--cluster-probe-interval", "500ms", "--health-freshness", "8s",
		"--dns-provider", "route53", "--route53-endpoint", r53.URL, "--route53-zone-id", zoneID,
		"--owner-id", federation, "--dns-interval", "1s")
	// The chart's downward-API limit (512Mi by default) as the container
	// would see it.
	cmd.Env = append(os.Environ(), "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=AKIDEXAMPLE",
		"AWS_SECRET_ACCESS_KEY=fake", "AWS_EC2_METADATA_DISABLED=true",
		fmt.Sprintf("%s=%d", memlimit.EnvContainerLimit, containerLimit), "GOMEMLIMIT=")
	framework.StartProcess(t, cmd, "kfed-controller")
	return metrics
}

func loadBalanced(name string, annotations map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: annotations},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: new(kfedv1alpha1.LoadBalancerClassGlobal),
			Selector:          map[string]string{"app": name},
			Ports:             []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

func deployment(name string, annotations map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: name + ":1"}}},
			},
		},
	}
}

// TestCatalogueDashboardAndAlertsMatchTheRunningBinaries runs kfed-controller
// (publishing to Route53's local endpoint), a kfed-healthcheck agent and
// CoreDNS with the kfed plugin against a federation of two members, makes
// each thing an alert is about happen — a DNS conflict, a Service whose every
// endpoint fails its health check, failing DNS syncs, a member Offline — and
// checks, against what the three binaries expose:
//   - every kfed metric is in docs/metrics.md, with its type and labels, and
//     every metric listed there is exposed;
//   - every metric the dashboard and the alerts query is exposed;
//   - the metrics behind the alerts say what happened.
func TestCatalogueDashboardAndAlertsMatchTheRunningBinaries(t *testing.T) {
	r53 := route53fake.New()
	t.Cleanup(r53.Close)
	zoneID := r53.AddZone(zone, false)
	// A record kfed would write but does not own.
	r53.Put(zoneID, route53fake.RecordSet{Name: "taken.default." + federation + ".svc." + zone, Type: "A",
		TTL: new(int64(300)), ResourceRecords: []route53fake.ResourceRecord{{Value: "192.0.2.1"}}})

	f := framework.Start(t, framework.Members(2), framework.LoadBalancer(), framework.MemberCRDs())
	f.JoinAll()
	controllerMetrics := startController(t, f, r53, zoneID)

	ctx := context.Background()
	checker, err := f.StartChecker(ctx, devenv.CheckerOptions{
		Binary: framework.BuildCommand(t, "kfed-healthcheck"), Name: "checker-1", Cluster: "cluster-1", Federation: federation,
		Kubeconfig: f.Kubeconfig, Context: "federation",
		Args: []string{"--interval=1s", "--timeout=500ms", "--fall=2", "--rise=2", "--heartbeat=2s", "--rtt-interval=1s", "--load-interval=1s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(checker.Log()); err == nil {
				t.Logf("kfed-healthcheck:\n%s", b)
			}
		}
	})
	corednsMetrics := framework.FreeAddr(t)
	coredns, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: framework.BuildCommand(t, "coredns"), Name: "coredns-cluster-1", Cluster: "cluster-1", Zone: zone,
		Corefile: devenv.KfedCorefile(devenv.KfedZone{
			Zone: zone, Federation: federation, Cluster: "cluster-1", Kubeconfig: f.Kubeconfig, Context: "federation",
			Extra: []string{"prometheus " + corednsMetrics},
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coredns.Stop)

	fed := f.Client("federation")
	for _, o := range []client.Object{
		loadBalanced("web", nil),
		// Probed on a port nothing listens on: every endpoint fails.
		loadBalanced("broken", map[string]string{"kfed.io/health-port": "1"}),
		loadBalanced("taken", nil),
		// Its load balancers publish a load on the checker's http probes.
		loadBalanced("loaded", map[string]string{"kfed.io/health-check": "http", "kfed.io/health-path": "/healthz", "loopbacklb.kfed.io/utilization": "0.5"}),
		loadBalanced("primary", map[string]string{"kfed.io/routing": "failover", "kfed.io/failover-order": "cluster-2,cluster-1"}),
		deployment("app", map[string]string{"kfed.io/federated": "true"}),
		// Another namespace's name: refused by every reader.
		&extdnsv1alpha1.DNSEndpoint{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "intruder", Labels: dnsendpoint.Selector(federation)},
			Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{
				{DNSName: "web.other." + federation + ".svc." + zone, RecordType: "A", Targets: []string{"198.51.100.66"}},
			}},
		},
		deployment("bal-a", nil), deployment("bal-b", nil),
		&kfedv1alpha1.Balancer{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bal"},
			Spec: kfedv1alpha1.BalancerSpec{
				Replicas: 3, Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "bal"}},
				Policy: kfedv1alpha1.BalancerPolicy{PolicyName: kfedv1alpha1.PolicyPriority,
					Priorities: &kfedv1alpha1.PriorityPolicy{TargetOrder: []string{"a", "b"}}},
				Targets: []kfedv1alpha1.BalancerTarget{
					{Name: "a", ScaleTargetRef: kfedv1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "bal-a"}},
					{Name: "b", ScaleTargetRef: kfedv1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "bal-b"}},
				},
			},
		},
	} {
		if err := fed.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	seen := &scrape{families: map[string]*dto.MetricFamily{}, source: map[string]string{}}
	targets := map[string]string{
		"kfed-controller":  "http://" + controllerMetrics + "/metrics",
		"kfed-healthcheck": "http://" + checker.MetricsAddr + "/metrics",
		"coredns":          "http://" + corednsMetrics + "/metrics",
	}
	// scrapeAll queries CoreDNS (so that it has answers to count), scrapes
	// every binary into seen, and returns the controller's scrape.
	scrapeAll := func(ctx context.Context) (map[string]*dto.MetricFamily, error) {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		for _, q := range []struct {
			name  string
			qtype uint16
		}{{"web.default.fed.svc." + zone, dns.TypeA}, {"nothing.default.fed.svc." + zone, dns.TypeA}, {zone, dns.TypeSOA}} {
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn(q.name), q.qtype)
			if _, err := dns.ExchangeContext(qctx, m, coredns.Addr); err != nil {
				return nil, fmt.Errorf("querying CoreDNS: %w", err)
			}
		}
		var controller map[string]*dto.MetricFamily
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range targets {
				if !yield(k) {
					return
				}
			}
		}) {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			fams, err := get(sctx, targets[name])
			cancel()
			if err != nil {
				return nil, fmt.Errorf("scraping %s: %w", name, err)
			}
			seen.add(name, fams)
			if name == "kfed-controller" {
				controller = fams
			}
		}
		return controller, nil
	}
	wantMetric := func(within time.Duration, name string, labels map[string]string, ok func(float64) bool, what string) {
		t.Helper()
		var last error
		framework.Eventually(t, within, func(ctx context.Context) error {
			fams, err := scrapeAll(ctx)
			if err == nil {
				if v, found := value(fams, name, labels); !found || !ok(v) {
					err = fmt.Errorf("%s%v = %v (exposed: %v), want %s", name, labels, v, found, what)
				}
			}
			if err != nil && ctx.Err() == nil {
				last = err
			} else if err != nil {
				err = fmt.Errorf("%w (before: %v)", err, last)
			}
			return err
		})
	}
	positive := func(v float64) bool { return v > 0 }
	one := func(v float64) bool { return v == 1 }

	t.Run("a name held by a record kfed does not own is a conflict", func(t *testing.T) {
		wantMetric(90*time.Second, "kfed_dns_conflicts", map[string]string{"provider": "route53"}, positive, "> 0")
		wantMetric(30*time.Second, "kfed_federated_services",
			map[string]string{"condition": kfedv1alpha1.ConditionDNSPublished, "status": "False"}, one, "1 (taken)")
	})
	t.Run("a Service whose every endpoint fails fails open", func(t *testing.T) {
		wantMetric(90*time.Second, "kfed_federated_services_failing_open", nil, one, "1 (broken)")
		wantMetric(10*time.Second, "kfed_endpoint_verdicts", map[string]string{"verdict": "unhealthy"}, func(v float64) bool { return v == 2 },
			"2 (broken's two endpoints)")
		wantMetric(10*time.Second, "kfed_health_checkers", map[string]string{"state": "fresh"}, one, "1")
	})
	t.Run("the Go memory limit is 90% of the container's", func(t *testing.T) {
		limit := int64(containerLimit)
		want := float64(int64(float64(limit) * memlimit.Share))
		wantMetric(10*time.Second, "go_gc_gomemlimit_bytes", nil, func(v float64) bool { return v == want }, fmt.Sprint(want))
	})
	t.Run("a Service routed by failover names the place that serves it", func(t *testing.T) {
		wantMetric(60*time.Second, "kfed_failover_active_place", map[string]string{"namespace": "default", "service": "primary", "place": "cluster-2"}, one, "1")
	})
	t.Run("a name the namespace may not publish is refused", func(t *testing.T) {
		wantMetric(30*time.Second, "kfed_dnsendpoint_refused_endpoints", map[string]string{"namespace": "default"}, one, "1")
	})
	t.Run("the rest of the federation works", func(t *testing.T) {
		wantMetric(60*time.Second, "kfed_dns_syncs_total", map[string]string{"provider": "route53", "result": "success"}, positive, "> 0")
		for _, phase := range []string{"open", "observe", "copies", "endpoint", "status"} {
			wantMetric(10*time.Second, "kfed_service_reconcile_phase_seconds", map[string]string{"phase": phase}, positive, "> 0 reconciles timed")
		}
		wantMetric(30*time.Second, "kfed_balancer_scale_writes_total", map[string]string{"cluster": "federation"}, positive, "> 0")
		wantMetric(30*time.Second, "kfed_deployment_copy_operations_total", map[string]string{"cluster": "cluster-1", "operation": "create"}, one, "1")
		wantMetric(10*time.Second, "kfed_cluster_condition",
			map[string]string{"cluster": "cluster-2", "condition": kfedv1alpha1.ClusterOffline, "status": "False"}, one, "1")
		wantMetric(10*time.Second, "leader_election_master_status", map[string]string{"name": "kfed-controller"}, one, "1")
	})
	t.Run("syncs to a provider that cannot be reached fail", func(t *testing.T) {
		r53.Close()
		// A sync with nothing to change sends nothing; a new Service has
		// records to write.
		if err := fed.Create(ctx, loadBalanced("late", nil)); err != nil {
			t.Fatal(err)
		}
		wantMetric(90*time.Second, "kfed_dns_syncs_total", map[string]string{"provider": "route53", "result": "error"}, positive, "> 0")
	})
	t.Run("a member whose API server stops goes Offline", func(t *testing.T) {
		if err := f.StopAPIServer("cluster-2"); err != nil {
			t.Fatal(err)
		}
		wantMetric(30*time.Second, "kfed_cluster_condition",
			map[string]string{"cluster": "cluster-2", "condition": kfedv1alpha1.ClusterOffline, "status": "True"}, one, "1")
		wantMetric(10*time.Second, "kfed_cluster_condition",
			map[string]string{"cluster": "cluster-1", "condition": kfedv1alpha1.ClusterReady, "status": "True"}, one, "1")
	})
	if t.Failed() {
		return
	}

	t.Run("every kfed metric exposed is in the catalogue, with its type and labels", func(t *testing.T) {
		cat := catalogue(t)
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range seen.families {
				if !yield(k) {
					return
				}
			}
		}) {
			mf := seen.families[name]
			e, listed := cat[name]
			if !listed {
				if strings.HasPrefix(name, "kfed_") || strings.HasPrefix(name, "coredns_kfed_") {
					t.Errorf("%s (%s, from %s) is not in %s", name, strings.ToLower(mf.GetType().String()), seen.source[name], cataloguePath)
				}
				continue
			}
			if typ := strings.ToLower(mf.GetType().String()); typ != e.typ {
				t.Errorf("%s: %s says %s, %s exposes a %s", name, cataloguePath, e.typ, seen.source[name], typ)
			}
			if got := labelNames(mf); !slices.Equal(got, e.labels) {
				t.Errorf("%s: %s lists labels %v, %s exposes %v", name, cataloguePath, e.labels, seen.source[name], got)
			}
		}
	})
	t.Run("every metric in the catalogue is exposed", func(t *testing.T) {
		for name := range catalogue(t) {
			if !seen.exposes(name) {
				t.Errorf("%s lists %s, which no binary exposed", cataloguePath, name)
			}
		}
	})
	for what, exprs := range map[string]map[string]string{"dashboard": dashboardExprs(t), "alerts": alertExprs(t)} {
		t.Run("every metric the "+what+" query is exposed", func(t *testing.T) {
			for key, names := range selectedMetrics(t, exprs) {
				for _, name := range names {
					if !seen.exposes(name) {
						t.Errorf("%s queries %s, which no binary exposed", key, name)
					}
				}
			}
		})
	}
}

// labelNames are the label names of a family's series, but le and quantile.
func labelNames(mf *dto.MetricFamily) []string {
	var out []string
	for _, m := range mf.Metric {
		for _, l := range m.Label {
			if n := l.GetName(); !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}
