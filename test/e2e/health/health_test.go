package health

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/clusters/identity"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/devenv/process"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/framework"
)

// healthBed is a federation of three members with a checker in each, a
// controller publishing to a real BIND, a CoreDNS with the kfed plugin, and
// the federated Services default/web and default/steady in every member.
type healthBed struct {
	f        *framework.Federation
	bind     *bindtest.Server
	dns      *devenv.CoreDNS
	checkers []*devenv.Checker
	sources  []netip.Addr // each checker's probe source address
	lb       []string     // each member's load-balancer address of web
	global   string

	t          testing.TB // the bed's test: its processes end with it
	hc         hcSettings // the bed's checker and controller settings
	checkerBin string

	controllerBin  string
	controllerArgs []string
	controller     *process.Process
}

// startController starts kfed-controller as a process, for a bed with
// controllerBinary; it runs until the bed's test ends, or is killed.
func (b *healthBed) startController(t *testing.T) {
	t.Helper()
	b.controller, _ = framework.StartProcess(b.t, exec.Command(b.controllerBin, b.controllerArgs...), "kfed-controller")
}

// killController ends the controller process with SIGKILL: no Lease
// released, no last write.
func (b *healthBed) killController(t *testing.T) {
	t.Helper()
	b.controller.Kill()
}

// hcSettings are the checkers' probe settings and the controller's
// freshness window.
type hcSettings struct {
	interval, timeout time.Duration
	fall, rise        int
	freshness         time.Duration
	// controllerBinary runs kfed-controller as a process of its own (which
	// startController starts) instead of in the test.
	controllerBinary bool
	// checkerArgs are more flags for every checker.
	checkerArgs []string
}

var fastHC = hcSettings{interval: fedtest.HCInterval, timeout: 400 * time.Millisecond, fall: fedtest.HCFall, rise: 2, freshness: fedtest.HCFreshness}

func startHealthBed(t *testing.T, hc hcSettings) *healthBed {
	t.Helper()
	const zone = "kfed.test"
	b := &healthBed{bind: bindtest.Start(t, zone), global: "web.default.e2e.svc." + zone + ".", t: t, hc: hc}
	b.f = framework.Start(t, framework.Members(3), framework.LoadBalancer())
	b.f.JoinAll()
	host, port, _ := net.SplitHostPort(b.bind.Addr)
	p, _ := strconv.Atoi(port)
	if hc.controllerBinary {
		b.controllerArgs = []string{"--kubeconfig", b.f.Kubeconfig, "--context", "federation",
			"--federation", "e2e", "--domain", zone, "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
			"--cluster-probe-interval", "500ms", "--health-freshness", hc.freshness.String(), "--dns-interval", "500ms",
			"--dns-provider", "rfc2136", "--owner-id", "e2e", "--rfc2136-host", host, "--rfc2136-port", port,
			"--rfc2136-zone", zone, "--rfc2136-tsig-keyname", bindtest.KeyName, "--rfc2136-tsig-secret-file", b.bind.SecretFile}
		b.controllerBin = framework.BuildCommand(t, "kfed-controller")
		b.startController(t)
	} else {
		b.f.StartController(manager.Options{
			Federation: "e2e", Domain: zone, HealthFreshness: hc.freshness, DNSInterval: 500 * time.Millisecond,
			DNS: dnssync.ProviderFlags{
				Provider: "rfc2136", OwnerID: "e2e", RFC2136Host: host, RFC2136Port: p, RFC2136Zone: zone,
				RFC2136KeyName: bindtest.KeyName, RFC2136Secret: b.bind.SecretFile,
			},
		})
	}
	ctx := context.Background()
	var err error
	b.dns, err = b.f.Env.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: fedtest.BuildCoreDNS(t), Name: "coredns-health", Zone: zone,
		Corefile: devenv.KfedCorefile(devenv.KfedZone{Zone: zone, Federation: "e2e", Kubeconfig: b.f.Kubeconfig, Context: "federation"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.dns.Stop)

	b.checkerBin = fedtest.BuildHealthcheck(t)
	base := 10 + rand.IntN(200) // probe sources 127.0.BASE+i: distinct from parallel tests
	for i := range b.f.Members {
		b.sources = append(b.sources, netip.AddrFrom4([4]byte{127, 0, byte(base + i), 1}))
	}
	b.startCheckers(t, hc)
	fed := b.f.Client("federation")
	// web is the Service the tests break; steady stays up in every cluster,
	// as most of a real federation's endpoints do, so that a checker seeing
	// all of web's endpoints fail does not take itself for cut off.
	for _, name := range []string{"web", "steady"} {
		if err := fed.Create(ctx, fedtest.FederatedService("default", name)); err != nil {
			t.Fatal(err)
		}
	}
	b.ready(t)
	return b
}

// startCheckers starts a checker in each member with hc's settings, from
// the probe sources b.sources: checker-cluster-1 … as long as the bed runs
// (or restartCheckers).
func (b *healthBed) startCheckers(t testing.TB, hc hcSettings) {
	t.Helper()
	b.checkers = b.checkers[:0]
	for i, m := range b.f.Members {
		// Each as its member, with the permissions kfed join gives it.
		c, err := b.f.Env.StartChecker(context.Background(), devenv.CheckerOptions{
			Binary: b.checkerBin, Name: "checker-" + m.Name, Cluster: m.Name, Federation: "e2e",
			Kubeconfig: fedtest.AgentKubeconfig(t, b.f, m.Name, identity.HealthCheck), Context: "federation",
			Args: append([]string{"--interval=" + hc.interval.String(), "--timeout=" + hc.timeout.String(),
				"--fall=" + strconv.Itoa(hc.fall), "--rise=" + strconv.Itoa(hc.rise),
				"--heartbeat=" + (hc.freshness / 4).String(), "--probe-source=" + b.sources[i].String()}, hc.checkerArgs...),
		})
		if err != nil {
			t.Fatal(err)
		}
		b.checkers = append(b.checkers, c)
	}
}

// restartCheckers ends every checker and starts them again with hc's
// settings.
func (b *healthBed) restartCheckers(t testing.TB, hc hcSettings) {
	t.Helper()
	for _, c := range b.checkers {
		c.Stop()
	}
	b.startCheckers(t, hc)
}

// ready waits until the bed is as a fresh one: every checker running and
// reporting on web's and steady's six endpoints and nothing else, and
// CoreDNS answering web's global name with every member's load-balancer
// address (b.lb).
func (b *healthBed) ready(t testing.TB) {
	t.Helper()
	fed := b.f.Client("federation")
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		for _, c := range b.checkers {
			if !c.Running() {
				return fmt.Errorf("a checker has exited; see %s", c.Log())
			}
		}
		b.lb = b.lb[:0]
		for _, m := range b.f.Members {
			var s corev1.Service
			if err := b.f.Client(m.Name).Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, &s); err != nil {
				return err
			}
			if len(s.Status.LoadBalancer.Ingress) == 0 {
				return fmt.Errorf("no ingress in %s yet", m.Name)
			}
			b.lb = append(b.lb, s.Status.LoadBalancer.Ingress[0].IP)
		}
		var reports kfedv1alpha1.HealthReportList
		if err := fed.List(ctx, &reports); err != nil {
			return err
		}
		for _, r := range reports.Items {
			if r.Endpoints != 6 {
				return fmt.Errorf("checker %s probes %d endpoints, want 6", r.Name, r.Endpoints)
			}
		}
		if len(reports.Items) != 3 {
			return fmt.Errorf("%d checkers report, want 3", len(reports.Items))
		}
		return b.answers(b.lb...)
	})
}

// answers checks that CoreDNS answers the global name with exactly want.
func (b *healthBed) answers(want ...string) error {
	return fedtest.WantAddresses(b.dns.Addr, "udp", b.global, dns.TypeA, want...)
}

// bindAnswers checks that BIND answers the global name with exactly want.
func (b *healthBed) bindAnswers(t *testing.T, want ...string) error {
	return bindHas(t, b, b.global, want...)
}

// fail switches member i's load balancer of web to refuse connections
// ("" switches it back), through the member's API as a user would.
func (b *healthBed) fail(t *testing.T, i int, mode string) {
	t.Helper()
	fedtest.SetFailure(t, b.f.Client(b.f.Members[i].Name), "default", "web", mode)
}

// within waits for check to pass, fails the test if that takes longer than
// bound, and returns how long it took.
func within(t *testing.T, bound time.Duration, what string, check func() error) time.Duration {
	t.Helper()
	start := time.Now()
	var err error
	for time.Since(start) < bound+10*time.Second {
		if err = check(); err == nil {
			took := time.Since(start)
			if took > bound {
				t.Errorf("%s took %v, over the bound of %v", what, took.Round(10*time.Millisecond), bound)
			}
			t.Logf("%s in %v", what, took.Round(10*time.Millisecond))
			return took
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v: %v", what, bound+10*time.Second, err)
	return 0
}

func (b *healthBed) condition(t *testing.T) *metav1.Condition {
	t.Helper()
	c, err := fedtest.ServiceCondition(context.Background(), b.f.Client("federation"), client.ObjectKey{Namespace: "default", Name: "web"}, kfedv1alpha1.ConditionHealthy)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// healthChecksTakeADeadEndpointOutOfDNSByQuorum
// (TestHealthChecksTakeADeadEndpointOutOfDNSByQuorum): the checkers' quorum
// takes a refusing load balancer out of CoreDNS's and BIND's answers and
// brings it back; a checker cut off or killed changes nothing; with every
// endpoint down, the name keeps them all.
func healthChecksTakeADeadEndpointOutOfDNSByQuorum(t *testing.T, b *healthBed) {
	lb1, lb2, lb3 := b.lb[0], b.lb[1], b.lb[2]
	// A checker is killed below: the bed's are started again at the end.
	t.Cleanup(func() { b.restartCheckers(t, b.hc) })

	t.Run("a load balancer that refuses connections leaves DNS, and comes back", func(t *testing.T) {
		b.fail(t, 1, "refuse")
		within(t, fedtest.HCBound, "cluster-2 out of CoreDNS's answers", func() error { return b.answers(lb1, lb3) })
		within(t, fedtest.HCBound, "cluster-2 out of BIND", func() error { return b.bindAnswers(t, lb1, lb3) })
		if err := fedtest.WantAddresses(b.dns.Addr, "udp", "cluster-2."+b.global, dns.TypeA, lb2); err != nil {
			t.Errorf("cluster-2's own name: %v", err)
		}
		if c := b.condition(t); c == nil || c.Status != "False" || !strings.Contains(c.Message, "cluster-2 (") {
			t.Errorf("condition %s: %+v", kfedv1alpha1.ConditionHealthy, c)
		}
		b.fail(t, 1, "")
		within(t, fedtest.HCBound, "cluster-2 back in CoreDNS's answers", func() error { return b.answers(lb1, lb2, lb3) })
		within(t, fedtest.HCBound, "cluster-2 back in BIND", func() error { return b.bindAnswers(t, lb1, lb2, lb3) })
	})

	t.Run("a checker cut off at the network level removes nothing; the others still remove a dead endpoint", func(t *testing.T) {
		cut := nftDrop(t, b.sources[2], b.f, lb1)
		// The cut checker sees every endpoint fail: it turns degraded and
		// abstains. Nothing leaves DNS meanwhile.
		fedtest.Steady(t, fedtest.HCBound+fedtest.HCFreshness, "every endpoint stays while checker-cluster-3 is cut off", func() error { return b.answers(lb1, lb2, lb3) })
		b.fail(t, 0, "refuse")
		within(t, fedtest.HCBound, "cluster-1 out with two of three checkers able to see", func() error { return b.answers(lb2, lb3) })
		b.fail(t, 0, "")
		within(t, fedtest.HCBound, "cluster-1 back", func() error { return b.answers(lb1, lb2, lb3) })
		cut()
	})

	t.Run("a minority of checkers killed changes nothing; the rest still decide", func(t *testing.T) {
		b.checkers[2].Kill()
		fedtest.Steady(t, fedtest.HCFreshness+2*time.Second, "every endpoint stays after checker-cluster-3 died", func() error { return b.answers(lb1, lb2, lb3) })
		b.fail(t, 2, "refuse")
		within(t, fedtest.HCBound, "cluster-3 out, decided by the two fresh checkers", func() error { return b.answers(lb1, lb2) })
		b.fail(t, 2, "")
		within(t, fedtest.HCBound, "cluster-3 back", func() error { return b.answers(lb1, lb2, lb3) })
	})

	t.Run("every endpoint down: the global name keeps them all and places fall back to it", func(t *testing.T) {
		for i := range 3 {
			b.fail(t, i, "refuse")
		}
		framework.Eventually(t, fedtest.HCBound+5*time.Second, func(context.Context) error {
			c := b.condition(t)
			if c == nil || c.Reason != "NoEndpointHealthy" {
				return fmt.Errorf("condition %+v", c)
			}
			return nil
		})
		// The condition can be read before CoreDNS has the DNSEndpoint
		// written in the same reconcile: its watch is a moment behind.
		within(t, 5*time.Second, "fail open", func() error { return b.answers(lb1, lb2, lb3) })
		region := strings.Replace(b.global, ".svc.", ".svc.us-east1.", 1)
		within(t, 5*time.Second, "the region name falls back to the global one", func() error {
			return fedtest.WantAddresses(b.dns.Addr, "udp", region, dns.TypeA, "CNAME "+b.global, lb1, lb2, lb3)
		})
		for i := range 3 {
			b.fail(t, i, "")
		}
		within(t, fedtest.HCBound, "every endpoint healthy again", func() error {
			if c := b.condition(t); c == nil || c.Status != "True" {
				return fmt.Errorf("condition %+v", c)
			}
			return nil
		})
	})
}

// nftDrop cuts src off from every member's load-balancer block with an
// nftables rule on loopback (a table of its own), checks that a connection
// from src to probe:8080 now goes nowhere, and returns the function that
// removes the rule; the test's cleanup removes it too.
func nftDrop(t *testing.T, src netip.Addr, f *framework.Federation, probe string) func() {
	t.Helper()
	var blocks []string
	for i := range f.Members {
		blocks = append(blocks, loopbacklb.Block(f.LBBase, i).String())
	}
	return fedtest.DropFrom(t, src, blocks, probe)
}

// healthVerdictsSurviveAControllerKilledMidReport
// (TestHealthVerdictsSurviveAControllerKilledMidReport): kfed-controller
// killed and restarted twice, once while a cluster is out and once while it
// recovers: a client sees it out, then back, nothing else in between. The
// controller runs again at the end, as the bed's.
func healthVerdictsSurviveAControllerKilledMidReport(t *testing.T, b *healthBed) {
	lb1, lb2, lb3 := b.lb[0], b.lb[1], b.lb[2]
	b.fail(t, 1, "refuse")
	within(t, fedtest.HCBound, "cluster-2 out", func() error { return b.answers(lb1, lb3) })

	// Record every answer the plugin gives from here on.
	type sample struct {
		at      time.Time
		answers string
	}
	var (
		mu      sync.Mutex
		samples []sample
		done    = make(chan struct{})
		stopped = make(chan struct{})
	)
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			r, err := fedtest.Query(b.dns.Addr, "udp", b.global, dns.TypeA)
			got := "error: " + fmt.Sprint(err)
			if err == nil {
				a := fedtest.AnswerStrings(r)
				slices.Sort(a)
				got = strings.Join(a, ",")
			}
			mu.Lock()
			samples = append(samples, sample{time.Now(), got})
			mu.Unlock()
		}
	}()

	// Killed while the checkers keep reporting; restarted at once, the new
	// process must wait for the dead one's Lease to expire before it leads.
	b.killController(t)
	b.startController(t)
	fedtest.Steady(t, 20*time.Second, "cluster-2 stays out across the failover", func() error { return b.answers(lb1, lb3) })
	// Killed again, and cluster-2 recovers while no controller runs: the
	// next leader brings it back once the checkers say so.
	b.killController(t)
	b.fail(t, 1, "")
	time.Sleep(3 * time.Second)
	b.startController(t)
	framework.Eventually(t, 40*time.Second, func(context.Context) error { return b.answers(lb1, lb2, lb3) })
	time.Sleep(time.Second) // the recorder sees the final answer too
	close(done)
	<-stopped

	// What a client saw: cluster-2 out, then back, nothing else in between.
	out := strings.Join(slices.Sorted(slices.Values([]string{lb1, lb3})), ",")
	all := strings.Join(slices.Sorted(slices.Values([]string{lb1, lb2, lb3})), ",")
	var seen []string
	for _, s := range samples {
		if len(seen) == 0 || seen[len(seen)-1] != s.answers {
			seen = append(seen, s.answers)
		}
	}
	if !slices.Equal(seen, []string{out, all}) {
		t.Errorf("answers over the failovers went %q; want %q then %q", seen, out, all)
	}
	t.Logf("%d answers recorded over %v", len(samples), samples[len(samples)-1].at.Sub(samples[0].at).Round(time.Second))
}
