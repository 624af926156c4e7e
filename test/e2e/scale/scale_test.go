package scale

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/devenv/process"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/framework"
)

// The scale run's federation, domain and namespace.
const (
	scaleZone      = "kfed.test"
	scaleNamespace = "scale"
)

// scaleConfig is the size of a scale run: `make test` runs the short form,
// `make scale` sets KFED_SCALE_SERVICES=10000 and a longer quiet window.
type scaleConfig struct {
	services int
	// steady is the window with nothing changing in which no write may
	// reach an API server or the DNS provider.
	steady time.Duration
}

func scaleFromEnv(t *testing.T) scaleConfig {
	c := scaleConfig{services: 200, steady: 10 * time.Second}
	if v := os.Getenv("KFED_SCALE_SERVICES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("KFED_SCALE_SERVICES=%q: want a positive number", v)
		}
		c.services = n
	}
	if v := os.Getenv("KFED_SCALE_STEADY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("KFED_SCALE_STEADY=%q: %v", v, err)
		}
		c.steady = d
	}
	return c
}

// TestScaleServicesPublishQuicklyAndStayQuiet creates N federated Services
// (200 in `make test`, 10,000 in `make scale`) in a federation of three
// members with their loopback load balancers, with the kfed-controller binary
// publishing to a real BIND and a real CoreDNS with the plugin serving the
// names, and reports: the time until every Service's DNSEndpoint holds all
// three members and every global name is answered by the plugin; the
// controller's CPU time and peak RSS; the API requests per Service, per
// cluster and verb/resource (kube-apiserver's apiserver_request_total); a
// second CoreDNS's catch-up time and RSS when started after all exist; a
// change's propagation at that size; and then, over a window where nothing
// changes, that no mutating request reaches any API server (leases excepted:
// leader election and API server identity heartbeats) and no request reaches
// BIND.
func TestScaleServicesPublishQuicklyAndStayQuiet(t *testing.T) {
	cfg := scaleFromEnv(t)
	n := cfg.services
	ctx := context.Background()
	report := func(format string, args ...any) {
		t.Logf("scale: "+format+" (load %s)", append(args, loadAvg())...)
	}
	// go test prints a failed test's errors among its reports, and the logs
	// of processes the cleanups stop after them; CI shows only the end. So
	// the quiet window's failures are said again, after everything else.
	var quietFailures []string
	t.Cleanup(func() {
		if len(quietFailures) > 0 {
			t.Logf("scale: failed in the quiet window:\n  %s", strings.Join(quietFailures, "\n  "))
		}
	})
	quietError := func(format string, args ...any) {
		t.Helper()
		quietFailures = append(quietFailures, fmt.Sprintf(format, args...))
		t.Errorf(format, args...)
	}

	bind := bindtest.Start(t, scaleZone)
	f := framework.Start(t, framework.Members(3))
	f.JoinAll()
	// The members' load balancers run in child processes: one listener per
	// shard, 30,000 at full size, is more than one process may open here
	// (the hard limit is 20,000 and cannot be raised without privileges).
	for i, m := range f.Members {
		startLoadBalancerProcess(t, f, i, m.Name)
	}
	fed := f.Client("federation")
	if err := fed.Create(ctx, framework.Namespace(scaleNamespace)); err != nil {
		t.Fatal(err)
	}
	controllerBin, corednsBin := framework.BuildCommand(t, "kfed-controller"), fedtest.BuildCoreDNS(t)

	// The controller publishes to BIND; a DNS sync interval of a fifth of the
	// quiet window means the window spans several of its periodic syncs.
	host, port, _ := net.SplitHostPort(bind.Addr)
	interval := max(cfg.steady/5, time.Second)
	metricsAddr, healthAddr, pprofAddr := framework.FreeAddr(t), framework.FreeAddr(t), framework.FreeAddr(t)
	controllerCmd := exec.Command(controllerBin, "--kubeconfig", f.Kubeconfig, "--context", "federation",
		"--federation", "fed", "--domain", scaleZone,
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", healthAddr, "--pprof-bind-address", pprofAddr,
		"--dns-provider", "rfc2136", "--rfc2136-host", host, "--rfc2136-port", port, "--rfc2136-zone", scaleZone,
		"--rfc2136-tsig-keyname", bindtest.KeyName, "--rfc2136-tsig-secret-file", bind.SecretFile,
		"--dns-interval", interval.String(), "--owner-id", "fed")
	// KFED_SCALE_CONTROLLER_GOMEMLIMIT gives the controller alone a Go soft
	// memory limit, as a pod's env would (BENCHMARKS.md, "Controller memory").
	if limit := os.Getenv("KFED_SCALE_CONTROLLER_GOMEMLIMIT"); limit != "" {
		controllerCmd.Env = append(os.Environ(), "GOMEMLIMIT="+limit)
		report("kfed-controller runs with GOMEMLIMIT=%s", limit)
	}
	ctrl := superviseController(t, controllerCmd)
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		return fedtest.GetOK(ctx, "http://"+healthAddr+"/healthz")
	})
	for _, m := range f.Members {
		fedtest.WantCondition(t, fed, m.Name, "Ready", "True", 30*time.Second)
	}

	// CoreDNS serving from the start.
	live, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: corednsBin, Name: "coredns-live", Zone: scaleZone,
		Corefile: devenv.KfedCorefile(devenv.KfedZone{Zone: scaleZone, Federation: "fed", Kubeconfig: f.Kubeconfig, Context: "federation"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(live.Stop)

	// The test's own watch on the DNSEndpoints says when all are complete.
	ready := watchComplete(t, f, n)

	clusterNames := []string{"federation", "cluster-1", "cluster-2", "cluster-3"}
	apiBefore := scrapeAll(t, f, clusterNames)
	cpuBefore := ctrl.cpu(t)

	cc := rest.CopyConfig(f.ControlPlane.Config)
	cc.QPS, cc.Burst = -1, 0
	creator, err := client.New(cc, client.Options{Scheme: f.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				// No node ports: the default range holds 2,768, fewer than
				// the Services here, and neither the control plane's copy nor
				// the loopback load balancer's shards need them.
				svc := fedtest.FederatedService(scaleNamespace, scaleName(i))
				svc.Spec.AllocateLoadBalancerNodePorts = new(false)
				if err := creator.Create(ctx, svc); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	created := time.Since(start)
	report("%d Services created in %v", n, created.Round(time.Millisecond))

	publishTimeout := max(3*time.Minute, time.Duration(n)*300*time.Millisecond)
	select {
	case <-ready:
	case <-time.After(publishTimeout):
		t.Fatalf("not every DNSEndpoint complete after %v", publishTimeout)
	}
	endpointsDone := time.Since(start)
	report("every DNSEndpoint holds all 3 members %v after the first create", endpointsDone.Round(time.Millisecond))

	names := make([]string, n)
	for i := range names {
		names[i] = globalName(i)
	}
	if err := answerAll(ctx, live.Addr, names, 3, publishTimeout); err != nil {
		t.Fatal(err)
	}
	published := time.Since(start)
	cpu := ctrl.cpu(t) - cpuBefore
	rss, hwm := ctrl.mem(t)
	report("every global name answered by the plugin %v after the first create (%.1f Services/s)",
		published.Round(time.Millisecond), float64(n)/published.Seconds())
	report("controller: %.1f CPU seconds while publishing (%.2f ms a Service), VmRSS %d MiB, VmHWM %d MiB, %d restarts",
		cpu, 1000*cpu/float64(n), rss>>10, hwm>>10, ctrl.restarts())
	reportHeap(t, report, metricsAddr, pprofAddr, n, "published")
	apiPublished := scrapeAll(t, f, clusterNames)
	reportRequests(t, report, n, apiBefore, apiPublished)
	if body, err := fedtest.Get(ctx, "http://"+metricsAddr+"/metrics"); err == nil {
		report("controller's own client requests (rest_client_requests_total, by host and method):\n%s",
			grepLines(body, "rest_client_requests_total{"))
	}
	if err := answerAll(ctx, bind.Addr, names, 3, publishTimeout); err != nil {
		t.Fatalf("BIND: %v", err)
	}
	report("every global name answered by BIND %v after the first create", time.Since(start).Round(time.Millisecond))
	liveRSS, liveHWM := procMem(t, pidOf(t, live.Corefile))
	report("CoreDNS started before the Services: VmRSS %d MiB, VmHWM %d MiB", liveRSS>>10, liveHWM>>10)

	// Every shard is told of by an Event naming its cluster: one for the
	// shards a reconcile created together, one for a shard alone.
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		var evs eventsv1.EventList
		if err := fed.List(ctx, &evs, client.InNamespace(scaleNamespace)); err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, e := range evs.Items {
			switch e.Reason {
			case "ShardCreated":
				seen[e.Regarding.Name+" "+strings.TrimPrefix(e.Note, "created shard in cluster ")] = true
			case "ShardsCreated":
				_, list, _ := strings.Cut(e.Note, ": ")
				for cl := range strings.SplitSeq(list, ", ") {
					seen[e.Regarding.Name+" "+cl] = true
				}
			}
		}
		for i := range n {
			for _, m := range f.Members {
				if key := scaleName(i) + " " + m.Name; !seen[key] {
					return fmt.Errorf("no Event names the shard %q (of %d)", key, len(seen))
				}
			}
		}
		return nil
	})

	// A CoreDNS started now catches up with every name from one list.
	kubeStart := time.Now()
	late, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: corednsBin, Name: "coredns-late", Zone: scaleZone,
		Corefile: devenv.KfedCorefile(devenv.KfedZone{Zone: scaleZone, Federation: "fed", Kubeconfig: f.Kubeconfig, Context: "federation"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(late.Stop)
	if err := answerAll(ctx, late.Addr, names, 3, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	catchUp := time.Since(kubeStart)
	lateRSS, lateHWM := procMem(t, pidOf(t, late.Corefile))
	report("CoreDNS started after all %d exist answers every name %v after its start; VmRSS %d MiB, VmHWM %d MiB",
		n, catchUp.Round(time.Millisecond), lateRSS>>10, lateHWM>>10)

	// One change at this size: a TTL, from the update to every server.
	changed := scaleName(n / 2)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: scaleNamespace, Name: changed}}
	changeStart := time.Now()
	if err := fed.Patch(ctx, svc, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"kfed.io/ttl":"47"}}}`))); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ name, addr string }{{"plugin (live)", live.Addr}, {"plugin (late)", late.Addr}, {"BIND", bind.Addr}} {
		framework.Eventually(t, 2*time.Minute, func(context.Context) error { return fedtest.WantTTL(s.addr, globalName(n/2), 47) })
		report("a TTL change reached %s %v after the update", s.name, time.Since(changeStart).Round(time.Millisecond))
	}

	// Steady state. Let what is in flight finish (each Service's last status
	// patch, a DNS sync), then nothing may write.
	settle(t, f, clusterNames, metricsAddr)
	quietBefore, dnsBefore, serialBefore := scrapeAll(t, f, clusterNames), dnsRequestCount(t, metricsAddr), soaSerial(t, bind.Addr)
	cpuQuiet, restartsQuiet := ctrl.cpu(t), ctrl.restarts()
	time.Sleep(cfg.steady)
	quietAfter, dnsAfter, serialAfter := scrapeAll(t, f, clusterNames), dnsRequestCount(t, metricsAddr), soaSerial(t, bind.Addr)
	report("steady state over %v (%d DNS sync intervals): controller %.2f CPU seconds, BIND requests %v, zone serial %d → %d",
		cfg.steady, int(cfg.steady/interval), ctrl.cpu(t)-cpuQuiet, dnsAfter-dnsBefore, serialBefore, serialAfter)
	for _, c := range clusterNames {
		d := diff(quietBefore[c], quietAfter[c])
		if writes := writesButLeases(d); len(writes) > 0 {
			quietError("%s: writes while nothing changed: %s", c, strings.Join(writes, ", "))
		}
		report("steady state, %s: every request %s", c, formatCounts(d))
	}
	if r := ctrl.restarts() - restartsQuiet; r > 0 {
		quietError("the controller exited %d times while nothing changed", r)
	}
	rss, hwm = ctrl.mem(t)
	report("controller after the quiet window: VmRSS %d MiB, VmHWM %d MiB", rss>>10, hwm>>10)
	reportHeap(t, report, metricsAddr, pprofAddr, n, "quiet")
	if dnsAfter != dnsBefore {
		quietError("the controller sent %v requests to BIND while nothing changed", dnsAfter-dnsBefore)
	}
	if serialAfter != serialBefore {
		quietError("BIND's zone serial moved from %d to %d while nothing changed", serialBefore, serialAfter)
	}
}

func scaleName(i int) string { return fmt.Sprintf("svc-%05d", i) }

func globalName(i int) string {
	return scaleName(i) + "." + scaleNamespace + ".fed.svc." + scaleZone + "."
}

// supervised is a kfed-controller process restarted whenever it exits, as
// its Deployment would be: it exits when it loses its leader Lease, which a
// control plane too loaded to answer a renewal within 10 s makes happen.
type supervised struct {
	mu        sync.Mutex
	p         *process.Process // the current incarnation
	log       *process.Output
	exits     int
	exitedCPU float64 // user + system seconds of the processes that ended
	exitedHWM int64   // the largest peak RSS among them, KiB
}

func superviseController(t *testing.T, cmd *exec.Cmd) *supervised {
	t.Helper()
	s := &supervised{log: &process.Output{}}
	path, args, env := cmd.Path, cmd.Args, cmd.Env
	start := func() error {
		c := exec.Command(path, args[1:]...)
		c.Env = env
		c.Stdout, c.Stderr = s.log, s.log
		p, err := process.Start(c)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.p = p
		s.mu.Unlock()
		return nil
	}
	if err := start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			s.mu.Lock()
			p := s.p
			s.mu.Unlock()
			<-p.Done()
			state := p.State()
			s.mu.Lock()
			s.exitedCPU += (state.UserTime() + state.SystemTime()).Seconds()
			if ru, ok := state.SysUsage().(*syscall.Rusage); ok {
				s.exitedHWM = max(s.exitedHWM, ru.Maxrss)
			}
			s.mu.Unlock()
			select {
			case <-done:
				return
			default:
			}
			s.mu.Lock()
			s.exits++
			s.mu.Unlock()
			t.Logf("scale: kfed-controller exited (%v) at load %s; restarting. Its log ends:\n%s", p.Err(), loadAvg(), tail(s.log.String(), 3000))
			if err := start(); err != nil {
				t.Errorf("restarting kfed-controller: %v", err)
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(done)
		s.mu.Lock()
		p := s.p
		s.mu.Unlock()
		p.Kill()
		<-stopped
		if t.Failed() {
			t.Logf("kfed-controller log (tail):\n%s", tail(s.log.String(), 8000))
		}
	})
	return s
}

func (s *supervised) restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exits
}

// cpu is the CPU seconds of every incarnation so far.
func (s *supervised) cpu(t *testing.T) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", s.p.Pid())); err != nil {
		return s.exitedCPU // it ended and was reaped a moment ago; counted there
	}
	return s.exitedCPU + cpuSeconds(t, s.p.Pid())
}

// mem is the running process's VmRSS, and the peak RSS of every
// incarnation, KiB.
func (s *supervised) mem(t *testing.T) (rss, hwm int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/status", s.p.Pid())); err != nil {
		return 0, s.exitedHWM
	}
	rss, hwm = procMem(t, s.p.Pid())
	return rss, max(hwm, s.exitedHWM)
}

// TestMain runs the package's tests, or, in a child process started by
// startLoadBalancerProcess, one member's loopback load balancer until the
// parent ends it (loopbacklb.ServeFromEnv).
func TestMain(m *testing.M) {
	loopbacklb.ServeIfAsked()
	os.Exit(m.Run())
}

// startLoadBalancerProcess runs member i's loopback load balancer (block
// loopbacklb.Block(f.LBBase, i)) in a child process until the test ends.
func startLoadBalancerProcess(t *testing.T, f *framework.Federation, i int, cluster string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), loopbacklb.ServeEnv([]loopbacklb.Member{{
		Cluster: cluster, Kubeconfig: f.Kubeconfig, Context: cluster, Block: loopbacklb.Block(f.LBBase, i),
	}}))
	framework.StartProcess(t, cmd, "load balancer of "+cluster)
}

// watchComplete watches the scale namespace's DNSEndpoints and closes the
// channel once n of them hold all three members' global A records.
func watchComplete(t *testing.T, f *framework.Federation, n int) <-chan struct{} {
	t.Helper()
	wc, err := client.NewWithWatch(f.ControlPlane.Config, client.Options{Scheme: f.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan struct{})
	go func() {
		completeSet := map[string]bool{}
		rv := ""
		for ctx.Err() == nil {
			var list extdnsv1alpha1.DNSEndpointList
			if err := wc.List(ctx, &list, client.InNamespace(scaleNamespace)); err != nil {
				time.Sleep(time.Second)
				continue
			}
			for i := range list.Items {
				completeSet[list.Items[i].Name] = globalComplete(&list.Items[i], 3)
			}
			rv = list.ResourceVersion
			w, err := wc.Watch(ctx, &extdnsv1alpha1.DNSEndpointList{}, client.InNamespace(scaleNamespace),
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err != nil {
				continue
			}
			for ev := range w.ResultChan() {
				ep, ok := ev.Object.(*extdnsv1alpha1.DNSEndpoint)
				if !ok {
					continue
				}
				switch ev.Type {
				case watch.Added, watch.Modified:
					completeSet[ep.Name] = globalComplete(ep, 3)
				case watch.Deleted:
					delete(completeSet, ep.Name)
				}
				if count(completeSet) >= n {
					w.Stop()
					close(done)
					return
				}
			}
		}
	}()
	return done
}

func count(m map[string]bool) int {
	c := 0
	for _, v := range m {
		if v {
			c++
		}
	}
	return c
}

// globalComplete reports whether ep's global A record has clusters members.
func globalComplete(ep *extdnsv1alpha1.DNSEndpoint, clusters int) bool {
	table, err := dnsendpoint.ReadClusters(ep)
	if err != nil {
		return false
	}
	global := ep.Name + "." + ep.Namespace + ".fed.svc." + scaleZone
	for j := range ep.Spec.Endpoints {
		e := &ep.Spec.Endpoints[j]
		if e.DNSName != global || e.RecordType != "A" {
			continue
		}
		groups, _ := table.Groups(e)
		c := 0
		for _, g := range groups {
			if g.Cluster != nil {
				c++
			}
		}
		return c == clusters
	}
	return false
}

// answerAll asks addr for every name's A records, 16 at a time, until each
// has answered want addresses once.
func answerAll(ctx context.Context, addr string, names []string, want int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	left := names
	for {
		var mu sync.Mutex
		var missing []string
		var lastErr atomic.Value
		var wg sync.WaitGroup
		work := make(chan string)
		for range 16 {
			wg.Go(func() {
				c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
				for name := range work {
					m := new(dns.Msg)
					m.SetQuestion(name, dns.TypeA)
					r, _, err := c.ExchangeContext(ctx, m, addr)
					n := 0
					if err == nil {
						for _, rr := range r.Answer {
							if rr.Header().Rrtype == dns.TypeA {
								n++
							}
						}
					}
					if n != want {
						if err == nil {
							err = fmt.Errorf("%s: %d A records, want %d", name, n, want)
						}
						lastErr.Store(err)
						mu.Lock()
						missing = append(missing, name)
						mu.Unlock()
					}
				}
			})
		}
		for _, name := range left {
			work <- name
		}
		close(work)
		wg.Wait()
		if len(missing) == 0 {
			return nil
		}
		left = missing
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %d of %d names not answered: %v", addr, len(missing), len(names), lastErr.Load())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func soaSerial(t *testing.T, addr string) uint32 {
	t.Helper()
	r, err := fedtest.Query(addr, "udp", scaleZone+".", dns.TypeSOA)
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range r.Answer {
		if soa, ok := rr.(*dns.SOA); ok {
			return soa.Serial
		}
	}
	t.Fatalf("no SOA from %s", addr)
	return 0
}

// requestKey is one series of apiserver_request_total, summed over codes,
// scopes and versions.
type requestKey struct{ verb, group, resource, subresource string }

func (k requestKey) mutating() bool {
	switch k.verb {
	case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY":
		return true
	}
	return false
}

// writesButLeases lists the writes among the requests d counts, leases
// aside (leader election and API server identity heartbeats), as "VERB
// resource: count".
func writesButLeases(d map[requestKey]float64) []string {
	var writes []string
	for _, k := range slices.SortedFunc(maps.Keys(d), requestKey.less) {
		if k.mutating() && k.resource != "leases" {
			writes = append(writes, fmt.Sprintf("%s %s: %v", k.verb, k.resourcePath(), d[k]))
		}
	}
	return writes
}

func (k requestKey) resourcePath() string {
	s := k.resource
	if k.group != "" {
		s += "." + k.group
	}
	if k.subresource != "" {
		s += "/" + k.subresource
	}
	return s
}

// scrapeAll reads apiserver_request_total from every named cluster's API
// server. The scrape itself is a GET of /metrics, not in the series.
func scrapeAll(t *testing.T, f *framework.Federation, names []string) map[string]map[requestKey]float64 {
	t.Helper()
	out := map[string]map[requestKey]float64{}
	for _, name := range names {
		body, err := f.Clientset(name).Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
		if err != nil {
			t.Fatalf("scraping %s: %v", name, err)
		}
		out[name] = parseRequestTotals(string(body))
	}
	return out
}

// parseRequestTotals sums the apiserver_request_total lines of a scrape by
// verb, group, resource and subresource.
func parseRequestTotals(body string) map[requestKey]float64 {
	m := map[requestKey]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		var k requestKey
		for _, kv := range strings.Split(labels, ",") {
			name, val, _ := strings.Cut(kv, "=")
			val = strings.Trim(val, `"`)
			switch name {
			case "verb":
				k.verb = val
			case "group":
				k.group = val
			case "resource":
				k.resource = val
			case "subresource":
				k.subresource = val
			}
		}
		m[k] += v
	}
	return m
}

func diff(before, after map[requestKey]float64) map[requestKey]float64 {
	d := map[requestKey]float64{}
	for k, v := range after {
		if delta := v - before[k]; delta != 0 {
			d[k] = delta
		}
	}
	return d
}

func (k requestKey) less(o requestKey) int {
	return strings.Compare(k.verb+k.resourcePath(), o.verb+o.resourcePath())
}

func formatCounts(d map[requestKey]float64) string {
	keys := slices.SortedFunc(maps.Keys(d), requestKey.less)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %s=%v; ", k.verb, k.resourcePath(), d[k])
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// reportRequests logs each cluster's requests while publishing, by verb and
// resource, and their sum per Service.
func reportRequests(t *testing.T, report func(string, ...any), n int, before, after map[string]map[requestKey]float64) {
	t.Helper()
	var total, mutating float64
	for _, c := range slices.Sorted(maps.Keys(after)) {
		d := diff(before[c], after[c])
		var sum, writes float64
		for k, v := range d {
			sum += v
			if k.mutating() {
				writes += v
			}
		}
		total, mutating = total+sum, mutating+writes
		report("API requests while publishing, %s: %.0f (%.2f a Service, %.2f writes a Service): %s",
			c, sum, sum/float64(n), writes/float64(n), formatCounts(d))
	}
	report("API requests while publishing, all clusters: %.2f a Service, of which %.2f writes (the test's creates, the load balancers' status writes and the plugin's and test's watches included)",
		total/float64(n), mutating/float64(n))
}

// settle waits until no API server sees a write (leases aside) for five
// seconds, at most two minutes.
func settle(t *testing.T, f *framework.Federation, clusters []string, metricsAddr string) {
	t.Helper()
	writes := func() (float64, float64) {
		var w float64
		for _, m := range scrapeAll(t, f, clusters) {
			for k, v := range m {
				if k.mutating() && k.resource != "leases" {
					w += v
				}
			}
		}
		return w, dnsRequestCount(t, metricsAddr)
	}
	deadline := time.Now().Add(2 * time.Minute)
	w, d := writes()
	for quiet := time.Now(); time.Since(quiet) < 5*time.Second; {
		if time.Now().After(deadline) {
			t.Logf("scale: still writing after 2 minutes of settling")
			return
		}
		time.Sleep(time.Second)
		if w2, d2 := writes(); w2 != w || d2 != d {
			w, d, quiet = w2, d2, time.Now()
		}
	}
}

// reportHeap reports the controller's Go memory (live heap, heap the runtime
// holds, what it took from the OS) beside its RSS, and keeps a heap profile
// taken after a GC in $TMPDIR/kfed-scale-heap-<n>-<when>.pb.gz, for
// `go tool pprof -sample_index=inuse_space` (BENCHMARKS.md, "Controller memory").
func reportHeap(t *testing.T, report func(string, ...any), metricsAddr, pprofAddr string, n int, when string) {
	t.Helper()
	ctx := context.Background()
	// ?gc=1 collects first, so the profile and the figures after it are live data.
	profile, err := fedtest.Get(ctx, "http://"+pprofAddr+"/debug/pprof/heap?gc=1")
	if err != nil {
		t.Errorf("controller heap profile: %v", err)
		return
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("kfed-scale-heap-%d-%s.pb.gz", n, when))
	if err := os.WriteFile(path, []byte(profile), 0o644); err != nil {
		t.Errorf("keeping the heap profile: %v", err)
	}
	body, err := fedtest.Get(ctx, "http://"+metricsAddr+"/metrics")
	if err != nil {
		t.Errorf("controller metrics: %v", err)
		return
	}
	m := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && strings.HasPrefix(k, "go_memstats_") && !strings.Contains(k, "{") {
			m[strings.TrimPrefix(k, "go_memstats_")], _ = strconv.ParseFloat(v, 64)
		}
	}
	mib := func(k string) float64 { return m[k] / (1 << 20) }
	report("controller Go memory after a GC (%s): heap live %.0f MiB, heap in use %.0f MiB, idle %.0f MiB (released %.0f), "+
		"stacks %.0f MiB, from the OS %.0f MiB, next GC at %.0f MiB; heap profile %s",
		when, mib("heap_alloc_bytes"), mib("heap_inuse_bytes"), mib("heap_idle_bytes"), mib("heap_released_bytes"),
		mib("stack_inuse_bytes"), mib("sys_bytes"), mib("next_gc_bytes"), path)
}

// dnsRequestCount is the controller's kfed_dns_requests_total, all providers
// and results.
func dnsRequestCount(t *testing.T, metricsAddr string) float64 {
	t.Helper()
	body, err := fedtest.Get(context.Background(), "http://"+metricsAddr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "kfed_dns_requests_total{") {
			continue
		}
		_, v, _ := strings.Cut(line, "} ")
		x, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
		sum += x
	}
	return sum
}

func grepLines(body, prefix string) string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, "  "+line)
		}
	}
	return strings.Join(out, "\n")
}

// cpuSeconds is a process's user + system CPU time in seconds.
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command, which is in parentheses and may hold spaces.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ is 100 on Linux
}

// procMem is a process's VmRSS and VmHWM (peak RSS) in KiB.
func procMem(t *testing.T, pid int) (rss, hwm int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = kb
		case "VmHWM":
			hwm = kb
		}
	}
	return rss, hwm
}

// pidOf finds the process whose command line holds arg (a CoreDNS's
// Corefile path, unique to it).
func pidOf(t *testing.T, arg string) int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			return pid
		}
	}
	t.Fatalf("no process with argument %s", arg)
	return 0
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
