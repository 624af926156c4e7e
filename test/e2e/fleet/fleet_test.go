package fleet

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/clusters/identity"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// The dev bed's checkers probe every 2 s, fall 2, and the controller takes
// heartbeats as fresh for 8 s (devenv.StartDev): an endpoint leaves within
// 2 × 2 s + 2 s of failing, and the plugins' watches add a moment.
const (
	bound     = 8 * time.Second
	freshness = 8 * time.Second
	domain    = "kfed.test"
	fedName   = "dev"
)

// fleet is `kfed dev up`'s bed of n members with clients for each.
type fleet struct {
	d       *devenv.Dev
	fed     client.Client
	members []client.Client
	checker string // kfed-healthcheck, to replace a checker
	lbBase  int
}

// members is KFED_FLEET_MEMBERS, 4 unless set: light members above three,
// so the fourth has no checker and still answers.
func members(t *testing.T) int {
	s := os.Getenv("KFED_FLEET_MEMBERS")
	if s == "" {
		return 4
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 3 || n > 30 {
		t.Fatalf("KFED_FLEET_MEMBERS=%q: want 3 to 30", s)
	}
	return n
}

// startFleet starts a bed of n light members whose checkers probe as
// probes say (nil: the dev bed's every 2 s).
func startFleet(t *testing.T, n int, probes []string) *fleet {
	t.Helper()
	bin, err := framework.Build(t, "./cmd/coredns", "./cmd/kfed-healthcheck")
	if err != nil {
		t.Fatal(err)
	}
	// Thirty members' API servers take minutes to start side by side.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute+time.Duration(n)*10*time.Second)
	defer cancel()
	// The load balancers hold a listener a Service in every member, more
	// open files than one process may have at 30 × 1,000: they run in
	// copies of this binary (TestMain), ten members each.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{checker: filepath.Join(bin, "kfed-healthcheck"), lbBase: framework.ClaimLBBase(t, n)}
	start := time.Now()
	d, err := devenv.StartDev(ctx, devenv.DevOptions{
		Dir: t.TempDir(), BinDir: framework.BinDir(t), Members: n, Federation: fedName, Domain: domain,
		LightMembers: true, LBBase: f.lbBase, CoreDNS: filepath.Join(bin, "coredns"), Checker: f.checker,
		CheckerProbes: probes, LoadBalancerBinary: self, Log: logr.Discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	t.Logf("%d light members ready in %v", n, time.Since(start).Round(time.Second))
	f.d = d
	scheme := framework.NewScheme(t)
	if f.fed, err = client.New(d.ControlPlane.Config, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	for _, m := range d.Members {
		c, err := client.New(m.Config, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		f.members = append(f.members, c)
	}
	return f
}

// global is Service name's global name.
func global(name string) string { return name + ".default." + fedName + ".svc." + domain + "." }

// addresses are the A records the DNS server at addr answers for name,
// sorted; EDNS lets thirty of them fit in one UDP reply.
func addresses(addr, name string) ([]string, error) {
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	q.SetEdns0(dns.DefaultMsgSize, false)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(q, addr)
	if err != nil {
		return nil, err
	}
	var got []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			got = append(got, a.A.String())
		}
	}
	slices.Sort(got)
	return got, nil
}

// shards are the addresses of a Service's shards: each member's load
// balancer address and cluster IP, in member order.
type shards struct{ lbs, clusterIPs []string }

// want is what member j's CoreDNS answers for the Service's global name
// while the members up are healthy: their load balancers' addresses, but
// its own cluster IP for its own shard (a client inside a cluster reaches
// its own shard there first).
func (s shards) want(j int, up []int) []string {
	var out []string
	for _, i := range up {
		if i == j {
			out = append(out, s.clusterIPs[i])
		} else {
			out = append(out, s.lbs[i])
		}
	}
	return slices.Sorted(slices.Values(out))
}

// everyMemberAnswers checks that every member's CoreDNS answers name with
// the shards of the members up.
func (f *fleet) everyMemberAnswers(name string, s shards, up []int) error {
	for j, addr := range f.d.DNS {
		got, err := addresses(addr, name)
		if err != nil {
			return fmt.Errorf("cluster-%d: %w", j+1, err)
		}
		if want := s.want(j, up); !slices.Equal(got, want) {
			return fmt.Errorf("cluster-%d answers %s with %v, want %v", j+1, name, got, want)
		}
	}
	return nil
}

// shardsOf reads Service name's shards in every member.
func (f *fleet) shardsOf(ctx context.Context, name string) (shards, error) {
	var s shards
	for i, c := range f.members {
		var svc corev1.Service
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &svc); err != nil {
			return s, fmt.Errorf("cluster-%d: %w", i+1, err)
		}
		if len(svc.Status.LoadBalancer.Ingress) == 0 {
			return s, fmt.Errorf("no ingress in cluster-%d yet", i+1)
		}
		s.lbs = append(s.lbs, svc.Status.LoadBalancer.Ingress[0].IP)
		s.clusterIPs = append(s.clusterIPs, svc.Spec.ClusterIP)
	}
	return s, nil
}

// fail switches member i's load balancer of Service name to mode ("" back
// to serving).
func (f *fleet) fail(t *testing.T, i int, name, mode string) {
	t.Helper()
	fedtest.SetFailure(t, f.members[i], "default", name, mode)
}

// within waits for check to pass and fails the test if that takes longer
// than limit.
func within(t *testing.T, limit time.Duration, what string, check func() error) {
	t.Helper()
	start := time.Now()
	var err error
	for time.Since(start) < limit+10*time.Second {
		if err = check(); err == nil {
			if took := time.Since(start); took > limit {
				t.Errorf("%s took %v, over %v", what, took.Round(10*time.Millisecond), limit)
			} else {
				t.Logf("%s in %v", what, took.Round(10*time.Millisecond))
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v: %v", what, limit+10*time.Second, err)
}

// metric sums the samples of the Prometheus metric name (any labels) that
// the server at url serves.
func metric(url, name string) (float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, name); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "{")) {
			fields := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
			if len(fields) == 0 {
				continue
			}
			v, err := strconv.ParseFloat(fields[0], 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", line, err)
			}
			sum, found = sum+v, true
		}
	}
	if !found {
		return 0, fmt.Errorf("%s: no %s", url, name)
	}
	return sum, sc.Err()
}

// TestFleetServiceAnswersEverywhereAndHealthHoldsAcrossTheFleet runs on `kfed
// dev up`'s bed of KFED_FLEET_MEMBERS light members (4 by default, the
// checkers in the first three): a federated Service created in the control
// plane answers with every member's address in every member's CoreDNS; a
// member's endpoint made to fail leaves every member's answers and comes
// back; a checker cut off from every load balancer alone turns degraded and
// flips nothing, while the other two still take a dead endpoint out (with
// KFED_FLEET_MEMBERS set: the short form in make test keeps to the first
// two).
func TestFleetServiceAnswersEverywhereAndHealthHoldsAcrossTheFleet(t *testing.T) {
	n := members(t)
	f := startFleet(t, n, nil)
	ctx := context.Background()
	if err := f.fed.Create(ctx, fedtest.FederatedService("default", "web")); err != nil {
		t.Fatal(err)
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	without := func(i int) []int { return slices.Delete(slices.Clone(all), i, i+1) }
	var web shards
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		var err error
		if web, err = f.shardsOf(ctx, "web"); err != nil {
			return err
		}
		return f.everyMemberAnswers(global("web"), web, all)
	})

	t.Run("an endpoint made to fail leaves every member's answers and comes back", func(t *testing.T) {
		last := n - 1 // above three members, one with no checker of its own
		f.fail(t, last, "web", loopbacklb.FailureRefuse)
		within(t, bound, fmt.Sprintf("cluster-%d out of every member's answers", n), func() error {
			return f.everyMemberAnswers(global("web"), web, without(last))
		})
		f.fail(t, last, "web", "")
		within(t, bound, fmt.Sprintf("cluster-%d back in every member's answers", n), func() error {
			return f.everyMemberAnswers(global("web"), web, all)
		})
	})

	t.Run("a checker cut off alone flips nothing", func(t *testing.T) {
		if os.Getenv("KFED_FLEET_MEMBERS") == "" {
			// make test keeps to the short form; test/e2e/health cuts a
			// checker off in a three-member bed there.
			t.Skip("KFED_FLEET_MEMBERS is not set (make fleet)")
		}
		src, metrics := f.replaceChecker(t, 2)
		var blocks []string
		for i := range n {
			blocks = append(blocks, loopbacklb.Block(f.lbBase, i).String())
		}
		cut := fedtest.DropFrom(t, src, blocks, web.lbs[0])
		fedtest.Steady(t, bound+freshness, "every endpoint stays in every member while checker-cluster-3 is cut off", func() error {
			return f.everyMemberAnswers(global("web"), web, all)
		})
		// The cut checker saw every endpoint fail: it abstains, degraded.
		if v, err := metric(metrics, "kfed_healthcheck_degraded"); err != nil || v != 1 {
			t.Errorf("the cut checker's kfed_healthcheck_degraded: %v, %v; want 1", v, err)
		}
		f.fail(t, 0, "web", loopbacklb.FailureRefuse)
		within(t, bound, "cluster-1 out with two of three checkers able to see", func() error {
			return f.everyMemberAnswers(global("web"), web, without(0))
		})
		f.fail(t, 0, "web", "")
		within(t, bound, "cluster-1 back", func() error { return f.everyMemberAnswers(global("web"), web, all) })
		cut()
	})
}

// replaceChecker stops member i's checker and starts one of the same
// identity and settings that probes from an address of its own, for an
// nftables rule to cut off; it returns that address and the URL of the new
// checker's metrics once it probes every endpoint and reports healthy.
func (f *fleet) replaceChecker(t *testing.T, i int) (netip.Addr, string) {
	t.Helper()
	src := netip.AddrFrom4([4]byte{127, 0, byte(10 + rand.IntN(200)), 1})
	m := f.d.Members[i]
	f.d.Checkers[i].Stop()
	kubeconfig, err := f.d.AgentKubeconfig(context.Background(), m.Name, identity.HealthCheck)
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.d.StartChecker(context.Background(), devenv.CheckerOptions{
		Binary: f.checker, Name: "healthcheck-" + m.Name, Cluster: m.Name, Federation: fedName,
		Kubeconfig: kubeconfig, Context: devenv.ControlPlaneName,
		// As devenv.StartDev's checkers, and the probe source.
		Args: append(devenv.DevProbes(), "--heartbeat=2s", "--probe-source="+src.String()),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.d.Checkers[i] = c
	url := "http://" + c.MetricsAddr + "/metrics"
	// Two rounds of every target probed and passing: its verdicts and
	// heartbeat are current before it is cut off.
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		targets, err := metric(url, "kfed_healthcheck_targets")
		if err != nil {
			return err
		}
		ok, err := metric(url, `kfed_healthcheck_probes_total{result="ok"}`)
		if err != nil {
			return err
		}
		if targets == 0 || ok < 2*targets {
			return fmt.Errorf("%v probes passed of %v targets", ok, targets)
		}
		return nil
	})
	return src, url
}
