package health

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/framework"
)

// BenchmarkHealthAgent runs one kfed-healthcheck process against a control
// plane holding N endpoints (N/2 DNSEndpoints of two clusters each, spread
// over 16 loopback listeners in this process), probing each every second, and
// reports over a 60 s window in steady state: probes per second, the agent's
// CPU per probe and RSS, and its writes per second to the control plane
// (watch events on its Lease and HealthReport). Run with
//
//	KFED_TEST_BIN=$(hack/test-binaries.sh --print) go test ./test/e2e/health -run '^$' -bench BenchmarkHealthAgent -benchtime 1x
func BenchmarkHealthAgent(b *testing.B) {
	sizes := []int{1000, 10000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("endpoints=%d", n), func(b *testing.B) {
			for range b.N {
				benchAgent(b, n)
			}
		})
	}
}

func benchAgent(b *testing.B, endpoints int) {
	f := framework.Start(b, framework.Members(1))
	fed := f.Client("federation")
	ctx := context.Background()

	// Sixteen listeners that accept and close, as load balancers would.
	var accepted atomic.Int64
	var ports []netip.AddrPort
	for range 16 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		ports = append(ports, netip.MustParseAddrPort(l.Addr().String()))
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
	}
	// The checker reports in its member's namespace (ADR 0013).
	reports := kfedv1alpha1.MemberNamespace(f.Members[0].Name)
	for _, ns := range []string{"bench", "kfed-system", reports} {
		if err := fed.Create(ctx, framework.Namespace(ns)); client.IgnoreAlreadyExists(err) != nil {
			b.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range endpoints / 2 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ep := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{
				Namespace: "bench", Name: "svc-" + strconv.Itoa(i),
				Labels: map[string]string{kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy, kfedv1alpha1.LabelFederation: "bench"},
			}}
			var rows []dnsendpoint.Cluster
			for c, name := range []string{"a", "b"} {
				p := ports[(2*i+c)%len(ports)]
				rows = append(rows, dnsendpoint.Cluster{Name: name, Weight: 1, Addresses: []netip.Addr{p.Addr()},
					Ports: []dnsendpoint.Port{{Name: "http", Protocol: "TCP", Port: int32(p.Port())}}})
			}
			dnsendpoint.SetClusters(ep, rows)
			if err := fed.Create(ctx, ep); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()

	bin := fedtest.BuildHealthcheck(b)
	c, err := f.Env.StartChecker(ctx, devenv.CheckerOptions{
		Binary: bin, Name: "bench-checker", Cluster: f.Members[0].Name, Federation: "bench",
		Kubeconfig: f.Kubeconfig, Context: "federation", Args: []string{"--interval=1s", "--timeout=800ms"},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if b.Failed() {
			log, _ := os.ReadFile(c.Log())
			b.Logf("kfed-healthcheck log:\n%s", log)
		}
	})
	framework.Eventually(b, 2*time.Minute, func(ctx context.Context) error {
		var r kfedv1alpha1.HealthReport
		if err := fed.Get(ctx, client.ObjectKey{Namespace: reports, Name: "bench-checker"}, &r); err != nil {
			return err
		}
		if int(r.Endpoints) != endpoints {
			return fmt.Errorf("the checker probes %d endpoints, want %d", r.Endpoints, endpoints)
		}
		return nil
	})
	time.Sleep(15 * time.Second) // every target past its first round

	// Writes: every change to the checker's Lease and report is a watch event.
	var writes atomic.Int64
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	wc, err := client.NewWithWatch(f.ControlPlane.Config, client.Options{Scheme: f.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	for _, list := range []client.ObjectList{&coordinationv1.LeaseList{}, &kfedv1alpha1.HealthReportList{}} {
		w, err := wc.Watch(watchCtx, list, client.InNamespace(reports), client.MatchingLabels{kfedv1alpha1.LabelChecker: "bench-checker"})
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for e := range w.ResultChan() {
				if e.Type == watch.Modified || e.Type == watch.Added {
					writes.Add(1)
				}
			}
		}()
		defer w.Stop()
	}
	time.Sleep(time.Second) // the watches' initial events
	writes.Store(0)

	const window = 60 * time.Second
	cpu0, a0, start := procCPU(b, c.Pid()), accepted.Load(), time.Now()
	time.Sleep(window)
	cpu1, a1, took := procCPU(b, c.Pid()), accepted.Load(), time.Since(start)
	probes := float64(a1-a0) / took.Seconds()
	b.ReportMetric(probes, "probes/s")
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(a1-a0), "agent-cpu-µs/probe")
	b.ReportMetric(float64(procRSS(b, c.Pid()))/(1<<20), "agent-RSS-MiB")
	b.ReportMetric(float64(writes.Load())/took.Seconds(), "writes/s")
}

// procCPU is a process's user + system CPU time, from /proc.
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name (which may hold spaces): utime is the
	// 14th field of the line, stime the 15th, in clock ticks (100 a second).
	rest := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	ut, _ := strconv.ParseInt(rest[11], 10, 64)
	st, _ := strconv.ParseInt(rest[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// procRSS is a process's resident memory in bytes, from /proc.
func procRSS(b *testing.B, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}
