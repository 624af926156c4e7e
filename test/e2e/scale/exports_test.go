package scale

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// exportsNamespace is where the exports run's Services are, in every member.
const exportsNamespace = "mcs-scale"

// TestScaleExportsAnswerQuicklyAndStayQuiet measures the Multi-Cluster
// Services path at size (BENCHMARKS.md, "Multi-Cluster Services"): three
// members with the MCS CRDs, the kfed-controller binary, and in each member
// a CoreDNS with the clusterset plugin reading that member's imports. N
// Services with a ServiceExport each (KFED_SCALE_EXPORTS; 20 in `make
// test`) are made in cluster-1 from four clients; for each, the time from
// its ServiceExport's create to its name S.N.svc.clusterset.local answering
// A in all three CoreDNS; the controller's CPU and memory; over a quiet
// window (KFED_SCALE_STEADY) no write but leases on any API server; then
// every export is deleted, and each name's time to NXDOMAIN in all three.
//
// It is one function over 80 lines: its steps share a bed that takes a
// minute to start, and read in order as the story they check.
func TestScaleExportsAnswerQuicklyAndStayQuiet(t *testing.T) {
	n := 20
	if v := os.Getenv("KFED_SCALE_EXPORTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("KFED_SCALE_EXPORTS=%q: want a positive number", v)
		}
	}
	steady := scaleFromEnv(t).steady
	ctx := context.Background()
	report := func(format string, args ...any) {
		t.Logf("exports: "+format+" (load %s)", append(args, loadAvg())...)
	}

	f := framework.Start(t, framework.Members(3), framework.MemberCRDs())
	f.JoinAll()
	controllerBin, corednsBin := framework.BuildCommand(t, "kfed-controller"), fedtest.BuildCoreDNS(t)
	metricsAddr, healthAddr := framework.FreeAddr(t), framework.FreeAddr(t)
	ctrl := superviseController(t, exec.Command(controllerBin, "--kubeconfig", f.Kubeconfig, "--context", "federation",
		"--federation", "fed", "--domain", scaleZone, "--metrics-bind-address", metricsAddr, "--health-probe-bind-address", healthAddr))
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		return fedtest.GetOK(ctx, "http://"+healthAddr+"/healthz")
	})
	var servers []string
	for _, m := range f.Members {
		fedtest.WantCondition(t, f.Client("federation"), m.Name, "Ready", "True", 30*time.Second)
		if err := f.Client(m.Name).Create(ctx, framework.Namespace(exportsNamespace)); err != nil {
			t.Fatal(err)
		}
		c, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
			Binary: corednsBin, Name: "coredns-" + m.Name, Cluster: m.Name, Zone: scaleZone,
			Corefile: devenv.KfedCorefile(devenv.KfedZone{
				Zone: scaleZone, Federation: "fed", Cluster: m.Name, Kubeconfig: f.Kubeconfig, Context: "federation",
				Clusterset: &devenv.ClustersetZone{Kubeconfig: f.Kubeconfig, Context: m.Name},
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Stop)
		servers = append(servers, c.Addr)
	}

	cc := rest.CopyConfig(f.Members[0].Config)
	cc.QPS, cc.Burst = -1, 0
	member, err := client.New(cc, client.Options{Scheme: f.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("exp-%05d", i)
	}
	qname := func(name string) string { return name + "." + exportsNamespace + ".svc.clusterset.local." }
	clusterNames := []string{"federation", "cluster-1", "cluster-2", "cluster-3"}
	cpuBefore := ctrl.cpu(t)
	exported := inParallel(t, names, func(name string) error {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: exportsNamespace, Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
		if err := member.Create(ctx, svc); err != nil {
			return err
		}
		return member.Create(ctx, &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: exportsNamespace, Name: name}})
	})
	timeout := max(2*time.Minute, time.Duration(n)*200*time.Millisecond)
	answered := func(r *dns.Msg) bool { return r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 }
	took, err := untilEvery(ctx, servers, names, qname, exported, answered, timeout)
	if err != nil {
		t.Fatal(err)
	}
	report("%d exports: created → answered A in all 3 members' CoreDNS: %s; controller CPU %.2f s (%.1f ms an export)",
		n, quantiles(took), ctrl.cpu(t)-cpuBefore, (ctrl.cpu(t)-cpuBefore)*1000/float64(n))
	rss, hwm := ctrl.mem(t)
	report("controller with %d exports imported: VmRSS %d MiB, VmHWM %d MiB", n, rss>>10, hwm>>10)

	settle(t, f, clusterNames, metricsAddr)
	before, cpuQuiet := scrapeAll(t, f, clusterNames), ctrl.cpu(t)
	time.Sleep(steady)
	after := scrapeAll(t, f, clusterNames)
	report("quiet window of %v: controller %.2f CPU seconds", steady, ctrl.cpu(t)-cpuQuiet)
	for _, c := range clusterNames {
		writes := writesButLeases(diff(before[c], after[c]))
		if len(writes) > 0 {
			t.Errorf("%s: writes while nothing changed: %s", c, strings.Join(writes, ", "))
		}
		report("quiet window, %s: writes but leases %d", c, len(writes))
	}

	deleted := inParallel(t, names, func(name string) error {
		return member.Delete(ctx, &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: exportsNamespace, Name: name}})
	})
	gone := func(r *dns.Msg) bool { return r.Rcode == dns.RcodeNameError }
	took, err = untilEvery(ctx, servers, names, qname, deleted, gone, timeout)
	if err != nil {
		t.Fatal(err)
	}
	report("%d exports: deleted → NXDOMAIN in all 3 members' CoreDNS: %s", n, quantiles(took))
	if r := ctrl.restarts(); r > 0 {
		t.Errorf("the controller exited %d times", r)
	}
}

// inParallel runs do for every name from four clients, and returns when
// each began.
func inParallel(t *testing.T, names []string, do func(name string) error) map[string]time.Time {
	t.Helper()
	var mu sync.Mutex
	began := map[string]time.Time{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(names); i += 4 {
				at := time.Now()
				if err := do(names[i]); err != nil {
					t.Error(err)
				}
				mu.Lock()
				began[names[i]] = at
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return began
}

// untilEvery asks every server for each name's A records, 16 at a time and
// round after round, until ok holds of every server's answer, and returns
// how long after since[name] that was, for each name. A round over many
// names takes a while: a time is late by up to one round.
func untilEvery(ctx context.Context, servers, names []string, qname func(string) string, since map[string]time.Time,
	ok func(*dns.Msg) bool, timeout time.Duration) ([]time.Duration, error) {
	deadline := time.Now().Add(timeout)
	var mu sync.Mutex
	var took []time.Duration
	left := slices.Clone(names)
	for len(left) > 0 {
		if time.Now().After(deadline) {
			return took, fmt.Errorf("%d of %d names not as wanted after %v, such as %s", len(left), len(names), timeout, qname(left[0]))
		}
		var missing []string
		work := make(chan string)
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
				for name := range work {
					all := true
					for _, s := range servers {
						m := new(dns.Msg)
						m.SetQuestion(qname(name), dns.TypeA)
						r, _, err := c.ExchangeContext(ctx, m, s)
						if err != nil || !ok(r) {
							all = false
							break
						}
					}
					mu.Lock()
					if all {
						took = append(took, time.Since(since[name]))
					} else {
						missing = append(missing, name)
					}
					mu.Unlock()
				}
			})
		}
		for _, name := range left {
			work <- name
		}
		close(work)
		wg.Wait()
		left = missing
		if len(left) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return took, nil
}

// quantiles says the p50, p95 and largest of d.
func quantiles(d []time.Duration) string {
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))].Round(time.Millisecond) }
	return fmt.Sprintf("p50 %v, p95 %v, max %v", at(0.50), at(0.95), s[len(s)-1].Round(time.Millisecond))
}
