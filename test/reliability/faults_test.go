package reliability

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/test/framework"
)

// TestFaults runs every scenario, in order, on one test bed, and the
// invariant checker after each. KFED_RELIABILITY=full runs the full form;
// KFED_RELIABILITY_REPORT=FILE writes the figures to FILE.
func TestFaults(t *testing.T) {
	fm := formFromEnv()
	t.Logf("form %s: %+v", fm.name, fm)
	began := time.Now()
	b := startBed(t, fm)
	b.figure("setup", "form %s: federation, BIND, 2 kfed-controllers, CoreDNS and the provider syncs up in %v", fm.name, time.Since(began).Round(100*time.Millisecond))
	created := time.Now()
	if err := b.churn.createAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	createdIn := time.Since(created)
	took := b.check(t, "setup")
	b.figure("setup", "%d + %d Services created in %v, all published %v after", fm.services, fm.stable,
		createdIn.Round(100*time.Millisecond), took.Round(100*time.Millisecond))
	if t.Failed() {
		t.FailNow()
	}

	t.Run("controller crash", b.controllerCrash)
	t.Run("control plane", b.controlPlane)
	t.Run("member down", b.memberDown)
	t.Run("load balancer", b.loadBalancer)
	t.Run("BIND killed", b.bindKilled)
	t.Run("provider errors", b.providerErrors)
	t.Run("CoreDNS restart", b.coreDNSRestart)

	ops, failed := b.churn.counts()
	b.figure("total", "%v churn writes %v, %d refused or cut off; %v in all", fm.name, ops, failed, time.Since(began).Round(time.Second))
	if path := os.Getenv("KFED_RELIABILITY_REPORT"); path != "" {
		b.mu.Lock()
		out := strings.Join(b.figures, "\n") + "\n"
		b.mu.Unlock()
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func sleepRandom(lo, hi time.Duration) {
	time.Sleep(lo + time.Duration(rand.Int64N(int64(hi-lo))))
}

// waitFor polls f every 50 ms until it is true or within passes; it returns
// how long that took and whether f became true.
func waitFor(within time.Duration, f func() bool) (time.Duration, bool) {
	start := time.Now()
	for time.Since(start) < within {
		if f() {
			return time.Since(start), true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start), false
}

func (b *bed) controllerExits() (kills, exits int) {
	for _, p := range b.controller {
		k, e := p.counts()
		kills, exits = kills+k, exits+e
	}
	return kills, exits
}

// controllerCrash kills the leading kfed-controller with SIGKILL at random
// moments during churn; the supervisor restarts it, the standby takes over
// through the Lease.
func (b *bed) controllerCrash(t *testing.T) {
	before, _ := b.churn.counts()
	var takeovers []time.Duration
	b.churn.during(func() {
		for range b.form.kills {
			sleepRandom(500*time.Millisecond, 4*time.Second)
			var leader *proc
			if _, ok := waitFor(time.Minute, func() bool { leader = b.leader(); return leader != nil }); !ok {
				t.Errorf("no kfed-controller leads")
				return
			}
			killed := time.Now()
			leader.restartNow()
			_, ok := waitFor(time.Minute, func() bool { return b.leader() != nil })
			took := time.Since(killed)
			if !ok {
				t.Errorf("no replica took the Lease within a minute of the leader's SIGKILL")
				return
			}
			takeovers = append(takeovers, took)
		}
	})
	after, _ := b.churn.counts()
	kills, exits := b.controllerExits()
	slices.Sort(takeovers)
	b.figure("controller crash", "%d SIGKILLs of the leader (%d exits of its own so far); takeover by the Lease median %v, max %v; churn %v",
		kills, exits, median(takeovers), last(takeovers), diff(after, before))
	b.check(t, "controller crash")
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[len(d)/2].Round(100 * time.Millisecond)
}

func last(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[len(d)-1].Round(100 * time.Millisecond)
}

func diff(after, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if v-before[k] != 0 {
			out[k] = v - before[k]
		}
	}
	return out
}

// controlPlane restarts the federation's kube-apiserver, then etcd, during
// churn, then freezes the kube-apiserver with SIGSTOP past the controller's
// lease; CoreDNS is queried throughout and must answer every stable name
// from its last index.
func (b *bed) controlPlane(t *testing.T) {
	ctx := context.Background()
	p, stopProbe := b.probe(t)
	var phases []string
	phase := func(what string) {
		phases = append(phases, what+" "+time.Since(p.began).Round(100*time.Millisecond).String())
	}
	b.churn.during(func() {
		time.Sleep(2 * time.Second)
		start := time.Now()
		phase("kube-apiserver stop")
		if err := b.f.StopAPIServer("federation"); err != nil {
			t.Fatal(err)
		}
		if err := b.f.RestartAPIServer(ctx, "federation"); err != nil {
			t.Fatal(err)
		}
		b.figure("control plane", "kube-apiserver restarted: down %v", time.Since(start).Round(100*time.Millisecond))
		time.Sleep(3 * time.Second)
		start = time.Now()
		phase("etcd kill")
		b.f.KillEtcd()
		time.Sleep(time.Second)
		if err := b.f.RestartEtcd(ctx); err != nil {
			t.Fatal(err)
		}
		b.figure("control plane", "etcd SIGKILLed and restarted: down %v", time.Since(start).Round(100*time.Millisecond))
		time.Sleep(3 * time.Second)
	})
	// The freeze must find a leader to lose its lease: under load the
	// restarts above can leave the Lease unheld past the pause after them
	// (CI: the API server came back in 21.5 s, the leader of the moment had
	// lost its lease then, and none led yet when the freeze began).
	var leader *proc
	if _, ok := waitFor(time.Minute, func() bool { leader = b.leader(); return leader != nil }); !ok {
		t.Fatal("no kfed-controller took the Lease within a minute of the restarts")
	}
	_, exitsBefore := b.controllerExits()
	phase("SIGSTOP")
	if err := b.f.FreezeAPIServer("federation", true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(b.form.freeze)
	if err := b.f.FreezeAPIServer("federation", false); err != nil {
		t.Fatal(err)
	}
	thawed := time.Now()
	phase("SIGCONT")
	// A lost lease ends the leader; its supervisor starts it again.
	lostLease, _ := waitFor(30*time.Second, func() bool { _, e := b.controllerExits(); return e > exitsBefore })
	_, exitsAfter := b.controllerExits()
	b.churn.during(func() { time.Sleep(5 * time.Second) })
	stopProbe()
	c := p.counts()
	b.figure("control plane", "kube-apiserver SIGSTOPped %v: %d kfed-controller exits on the lost lease (seen %v after SIGCONT), each restarted by the supervisor",
		b.form.freeze, exitsAfter-exitsBefore, lostLease.Round(100*time.Millisecond))
	b.figure("control plane", "CoreDNS during all three: %d queries, %d complete, %d other answers, %d SERVFAIL, %d other codes, %d unanswered",
		c.queries, c.complete, c.other, c.servfail, c.rcode, c.timeouts)
	if c.servfail+c.other+c.rcode > 0 || c.complete == 0 || c.timeouts > c.queries/1000 {
		t.Errorf("CoreDNS did not answer every stable name from its index while the control plane was away: %+v", c)
	}
	if len(p.lost) > 0 {
		b.figure("control plane", "unanswered queries (1 s timeout) sent at %v after probing began; the faults began at %v", p.lost, phases)
	}
	if b.form.freeze > 12*time.Second && exitsAfter == exitsBefore {
		t.Errorf("the leader (%s) did not exit within 30 s of the control plane's thaw after a freeze of %v (past its 2 s retry period and 10 s renew deadline)", leader.name, b.form.freeze)
	}
	b.check(t, "control plane")
	b.figure("control plane", "all converged %v after SIGCONT (5 s of churn included)", time.Since(thawed).Round(100*time.Millisecond))
}

// memberDown stops one member's API server during churn: the Cluster turns
// Offline, the other members are unaffected, and its records stay.
func (b *bed) memberDown(t *testing.T) {
	const member = "cluster-3"
	ctx := context.Background()
	p, stopProbe := b.probe(t)
	b.churn.during(func() {
		start := time.Now()
		if err := b.f.StopAPIServer(member); err != nil {
			t.Fatal(err)
		}
		_, ok := waitFor(b.form.down, func() bool {
			var c kfedv1alpha1.Cluster
			if err := b.fed.Get(ctx, client.ObjectKey{Name: member}, &c); err != nil {
				return false
			}
			return metaStatus(c.Status.Conditions, kfedv1alpha1.ClusterReady) == metav1.ConditionFalse
		})
		offline := time.Since(start)
		if !ok {
			t.Errorf("%s not Offline %v after its API server stopped", member, b.form.down)
		}
		time.Sleep(time.Until(start.Add(b.form.down)))
		// Its records are kept: the stable Services still name it.
		for i := range b.form.stable {
			var ep extdnsv1alpha1.DNSEndpoint
			if err := b.fed.Get(ctx, client.ObjectKey{Namespace: ns, Name: stableName(i)}, &ep); err != nil {
				t.Fatal(err)
			}
			table, err := dnsendpoint.ReadClusters(&ep)
			if err != nil || table[member] == nil {
				t.Errorf("%s lost %s's records while it was down: %v %v", stableName(i), member, table, err)
			}
		}
		if err := b.f.RestartAPIServer(ctx, member); err != nil {
			t.Fatal(err)
		}
		b.figure("member down", "%s's API server down %v; Offline after %v", member, time.Since(start).Round(100*time.Millisecond), offline.Round(100*time.Millisecond))
	})
	stopProbe()
	c := p.counts()
	b.figure("member down", "CoreDNS meanwhile: %d queries, %d complete, %d other, %d SERVFAIL, %d unanswered", c.queries, c.complete, c.other, c.servfail, c.timeouts)
	if c.servfail+c.other+c.rcode > 0 || c.timeouts > c.queries/1000 {
		t.Errorf("the stable names' answers changed while %s was down: %+v", member, c)
	}
	b.check(t, "member down")
}

func metaStatus(conds []metav1.Condition, typ string) metav1.ConditionStatus {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status
		}
	}
	return metav1.ConditionUnknown
}

// loadBalancer makes cluster-2's load balancer withdraw the addresses of
// the stable Services, then give them back.
func (b *bed) loadBalancer(t *testing.T) {
	const member = "cluster-2"
	mc := b.f.Client(member)
	ctx := context.Background()
	set := func(withdrawn bool) {
		for i := range b.form.stable {
			framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
				var s corev1.Service
				if err := mc.Get(ctx, client.ObjectKey{Namespace: ns, Name: stableName(i)}, &s); err != nil {
					return err
				}
				patch := client.MergeFrom(s.DeepCopy())
				if withdrawn {
					metav1.SetMetaDataAnnotation(&s.ObjectMeta, loopbacklb.FailureAnnotation, loopbacklb.FailureWithdrawn)
				} else {
					delete(s.Annotations, loopbacklb.FailureAnnotation)
				}
				return mc.Patch(ctx, &s, patch)
			})
		}
	}
	// in reports whether every stable Service's global name answers with
	// (or without) the member.
	in := func(want bool) bool {
		for i := range b.form.stable {
			var ep extdnsv1alpha1.DNSEndpoint
			if err := b.fed.Get(ctx, client.ObjectKey{Namespace: ns, Name: stableName(i)}, &ep); err != nil {
				return false
			}
			table, err := dnsendpoint.ReadClusters(&ep)
			if err != nil || (table[member] != nil) != want {
				return false
			}
			got, _, err := queryA(b.dnsAddr, publish.NewNames(federation, zone, ns, stableName(i)).Global()+".")
			if err != nil || len(got) != len(table) {
				return false
			}
		}
		return true
	}
	start := time.Now()
	set(true)
	_, ok := waitFor(b.form.converge, func() bool { return in(false) })
	if !ok {
		t.Errorf("%s's withdrawn addresses still answered after %v", member, b.form.converge)
	}
	gone := time.Since(start)
	b.check(t, "load balancer withdrawn")
	start = time.Now()
	set(false)
	_, ok = waitFor(b.form.converge, func() bool { return in(true) })
	back := time.Since(start)
	if !ok {
		t.Errorf("%s's returned addresses not answered after %v", member, b.form.converge)
	}
	b.figure("load balancer", "%s withdrew %d Services' addresses: out of DNSEndpoints and CoreDNS in %v, back in %v after they returned",
		member, b.form.stable, gone.Round(100*time.Millisecond), back.Round(100*time.Millisecond))
	b.check(t, "load balancer")
}

// bindKilled kills BIND with SIGKILL while kfed syncs churn to it, and
// starts it again from its zone file and journal.
func (b *bed) bindKilled(t *testing.T) {
	kills := 1 + b.form.kills/10
	b.churn.during(func() {
		for range kills {
			sleepRandom(time.Second, 3*time.Second)
			b.bind.Kill()
			time.Sleep(b.form.bindDown)
			if err := b.bind.Restart(); err != nil {
				t.Fatal(err)
			}
		}
	})
	b.figure("BIND killed", "%d SIGKILLs during churn, down %v each", kills, b.form.bindDown)
	b.check(t, "BIND killed")
}

// providerErrors makes the Route53 and Cloud DNS endpoints refuse half of
// their requests, with throttling and 5xx answers, during churn and until
// kfed has converged.
func (b *bed) providerErrors(t *testing.T) {
	r53Before, gcpBefore := b.r53Sync.Provider.Stats(), b.gcpSync.Provider.Stats()
	r53Req, gcpReq := b.r53.Requests(""), b.gcp.Requests("")
	b.r53.FailRandomly(0.5, "Throttling", "PriorRequestNotComplete", "InternalFailure", "ServiceUnavailable")
	b.gcp.FailRandomly(0.5, 429, 500, 503)
	b.churn.during(func() { time.Sleep(b.form.faulty) })
	b.check(t, "provider errors")
	b.r53.FailRandomly(0)
	b.gcp.FailRandomly(0)
	r53After, gcpAfter := b.r53Sync.Provider.Stats(), b.gcpSync.Provider.Stats()
	b.figure("provider errors", "Route53: sync sent %d requests (%d throttled retries), %d changes; the endpoint answered %d (checker's included), refused %v",
		r53After.Requests-r53Before.Requests, r53After.ThrottledRetries-r53Before.ThrottledRetries, r53After.Changes-r53Before.Changes,
		b.r53.Requests("")-r53Req, b.r53.Faults())
	b.figure("provider errors", "Cloud DNS: sync sent %d requests (%d throttled retries), %d changes; the endpoint answered %d (checker's included), refused %v",
		gcpAfter.Requests-gcpBefore.Requests, gcpAfter.ThrottledRetries-gcpBefore.ThrottledRetries, gcpAfter.Changes-gcpBefore.Changes,
		b.gcp.Requests("")-gcpReq, b.gcp.Faults())
}

// coreDNSRestart restarts CoreDNS under dnsperf load and measures, with a
// query every 2 ms of its own, when the listener is back, when the first
// answer and the first complete answer come, and what came between.
func (b *bed) coreDNSRestart(t *testing.T) {
	dnsperf, err := exec.LookPath("dnsperf")
	if err != nil {
		t.Fatal("dnsperf is not installed: run hack/install-dnsperf.sh")
	}
	var names []string
	want := map[string][]string{}
	for i := range b.form.stable {
		name := publish.NewNames(federation, zone, ns, stableName(i)).Global() + "."
		got, _, err := queryA(b.dnsAddr, name)
		if err != nil || len(got) == 0 {
			t.Fatalf("%s before the restart: %v %v", name, got, err)
		}
		names, want[name] = append(names, name), got
	}
	data := filepath.Join(t.TempDir(), "queries")
	var lines []string
	for _, n := range names {
		lines = append(lines, n+" A")
	}
	if err := os.WriteFile(data, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(b.dnsAddr, ":")
	for i := range b.form.restarts {
		perf := exec.Command(dnsperf, "-s", host, "-p", port, "-d", data, "-l", strconv.Itoa(b.form.dnsperf),
			"-c", "4", "-Q", "2000", "-t", "1", "-S", "1")
		var out strings.Builder
		perf.Stdout, perf.Stderr = &out, &out
		if err := perf.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(b.form.dnsperf) * time.Second / 3)
		r := b.measureRestart(t, names, want)
		_ = perf.Wait()
		b.figure("CoreDNS restart", "#%d: listener back %v after SIGKILL; first answer +%v, first complete +%v after the listener; before it %d SERVFAIL, %d unanswered; after it %d SERVFAIL, %d incomplete",
			i+1, r.listening.Round(time.Millisecond), r.firstAnswer.Round(time.Millisecond), r.firstComplete.Round(time.Millisecond),
			r.servfailBefore, r.lostBefore, r.servfailAfter, r.incomplete)
		b.figure("CoreDNS restart", "#%d: dnsperf %s", i+1, dnsperfSummary(out.String()))
		if r.firstComplete > time.Second || r.servfailAfter > 0 || r.incomplete > 0 {
			t.Errorf("restart %d: first complete answer %v after the listener (bound 1 s), %d SERVFAIL and %d incomplete answers after it",
				i+1, r.firstComplete, r.servfailAfter, r.incomplete)
		}
	}
	b.check(t, "CoreDNS restart")
}

type restartMeasure struct {
	listening, firstAnswer, firstComplete time.Duration
	servfailBefore, lostBefore            int
	servfailAfter, incomplete             int
}

// measureRestart kills CoreDNS (its supervisor starts it again) and
// queries it every 2 ms until it has answered completely for two seconds.
func (b *bed) measureRestart(t *testing.T, names []string, want map[string][]string) restartMeasure {
	var r restartMeasure
	_, port, _ := strings.Cut(b.dnsAddr, ":")
	portHex := fmt.Sprintf(":%04X ", mustAtoi(port))
	var listenAt time.Time
	var mu sync.Mutex
	stopWatch := make(chan struct{})
	b.coredns.kill()
	killed := time.Now()
	go func() { // when the UDP socket is bound again
		for {
			select {
			case <-stopWatch:
				return
			default:
			}
			if udpBound(portHex) {
				mu.Lock()
				listenAt = time.Now()
				mu.Unlock()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	c := &dns.Client{Timeout: 100 * time.Millisecond}
	var firstAnswer, firstComplete time.Time
	for i := 0; ; i++ {
		if !firstComplete.IsZero() && time.Since(firstComplete) > 2*time.Second {
			break
		}
		if time.Since(killed) > 30*time.Second {
			t.Errorf("CoreDNS did not answer completely within 30 s of its SIGKILL")
			break
		}
		name := names[i%len(names)]
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		resp, _, err := c.Exchange(m, b.dnsAddr)
		now := time.Now()
		switch {
		case err != nil:
			if firstComplete.IsZero() && !firstAnswer.IsZero() {
				r.lostBefore++
			}
		case resp.Rcode == dns.RcodeServerFailure:
			if firstAnswer.IsZero() {
				firstAnswer = now
			}
			if firstComplete.IsZero() {
				r.servfailBefore++
			} else {
				r.servfailAfter++
			}
		default:
			if firstAnswer.IsZero() {
				firstAnswer = now
			}
			var got []string
			for _, rr := range resp.Answer {
				if a, ok := rr.(*dns.A); ok {
					got = append(got, a.A.String())
				}
			}
			slices.Sort(got)
			complete := resp.Rcode == dns.RcodeSuccess && slices.Equal(got, want[name])
			switch {
			case complete && firstComplete.IsZero():
				firstComplete = now
			case !complete:
				r.incomplete++
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	close(stopWatch)
	mu.Lock()
	defer mu.Unlock()
	if listenAt.IsZero() || listenAt.After(firstAnswer) {
		listenAt = firstAnswer // bound between two polls
	}
	r.listening = listenAt.Sub(killed)
	r.firstAnswer = firstAnswer.Sub(listenAt)
	r.firstComplete = firstComplete.Sub(listenAt)
	return r
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// udpBound reports whether a UDP socket is bound on 127.0.0.1 at the port
// whose /proc/net/udp form (":HEX ") is given.
func udpBound(portHex string) bool {
	f, err := os.Open("/proc/net/udp")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 2 && fields[1] == "0100007F"+strings.TrimSpace(portHex) {
			return true
		}
	}
	return false
}

var perfLine = regexp.MustCompile(`(?m)^\s*(Queries sent|Queries completed|Queries lost|Response codes|Queries per second):\s*(.*)$`)

// dnsperfSummary picks dnsperf's totals out of its report.
func dnsperfSummary(out string) string {
	var parts []string
	for _, m := range perfLine.FindAllStringSubmatch(out, -1) {
		parts = append(parts, m[1]+": "+strings.TrimSpace(m[2]))
	}
	if len(parts) == 0 {
		return "no report: " + out
	}
	return strings.Join(parts, "; ")
}
