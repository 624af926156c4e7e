package health

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/test/framework"
)

// failoverAsAClientSeesIt (TestFailoverAsAClientSeesIt) measures failover where
// it matters: a client that resolves the Service's name through a caching
// resolver (a real Unbound, which honours TTLs) and connects every 100 ms. Each
// trial kills the serving place (cluster-3's load balancer refuses connections)
// and measures the time until the client's connections succeed again, and the
// connections it lost meanwhile; then cluster-3 comes back and serves again
// after the failback hold. `make test` runs 2 trials with
// kfed.io/failover-within: 10s and checks the worst case kfed computed; `make
// bench-failover` (KFED_FAILOVER_TRIALS=20, KFED_FAILOVER_DEFAULTS=1) runs 20
// at 10s and 20 at the defaults and prints p50/p95 for BENCHMARKS.md.
func failoverAsAClientSeesIt(t *testing.T, shared *healthBed) {
	trials := 2
	if v := os.Getenv("KFED_FAILOVER_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("KFED_FAILOVER_TRIALS=%q: not a positive number", v)
		}
		trials = n
	}
	// The shared bed has fastHC's settings; the defaults get a bed of their own.
	settings := []struct {
		name   string
		hc     hcSettings
		within time.Duration // 0: the defaults
		ownBed bool
	}{{"failover-within 10s", fastHC, 10 * time.Second, false}}
	if os.Getenv("KFED_FAILOVER_DEFAULTS") != "" {
		settings = append(settings, struct {
			name   string
			hc     hcSettings
			within time.Duration
			ownBed bool
		}{"defaults: interval 10s, timeout 4s, fall 3, TTL 30s", hcSettings{interval: 10 * time.Second, timeout: 4 * time.Second, fall: 3, rise: 2, freshness: 40 * time.Second}, 0, true})
	}
	for _, s := range settings {
		t.Run(s.name, func(t *testing.T) {
			b := shared
			if s.ownBed {
				b = startHealthBed(t, s.hc)
			}
			const ns = "client"
			fed := b.f.Client("federation")
			fedtest.Create(t, fed, framework.Namespace(ns))
			db := fedtest.FederatedService(ns, "db")
			fedtest.DeleteFederatedAtEnd(t, b.f, db)
			db.Annotations = map[string]string{
				kfedv1alpha1.AnnotationRouting:       string(serviceconfig.RoutingFailover),
				kfedv1alpha1.AnnotationFailoverOrder: "europe-west1,us-east1",
				kfedv1alpha1.AnnotationFailbackHold:  "2s",
			}
			// The worst case a client may wait: what kfed computes for
			// failover-within, or the same formula at the defaults.
			worst := serviceconfig.Timing{Interval: s.hc.interval, Timeout: s.hc.timeout, Fall: s.hc.fall, TTL: serviceconfig.DefaultTTL * time.Second}.WorstCase()
			if s.within > 0 {
				db.Annotations[kfedv1alpha1.AnnotationFailoverWithin] = s.within.String()
				tm, err := serviceconfig.Within(s.within)
				if err != nil {
					t.Fatal(err)
				}
				worst = tm.WorstCase()
			}
			if err := fed.Create(context.Background(), db); err != nil {
				t.Fatal(err)
			}
			// db's load-balancer address in cluster-3, the serving place.
			var primary string
			framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
				svc := fedtest.FederatedService(ns, "db")
				if err := b.f.Client("cluster-3").Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
					return err
				}
				if len(svc.Status.LoadBalancer.Ingress) == 0 {
					return fmt.Errorf("no ingress in cluster-3 yet")
				}
				primary = svc.Status.LoadBalancer.Ingress[0].IP
				return nil
			})
			resolver := startUnbound(t, b.dns.Addr, "kfed.test", false)
			name := "db." + ns + ".e2e.svc.kfed.test."
			c := newDialingClient(t, resolver, name)
			framework.Eventually(t, 60*time.Second, func(context.Context) error { return c.ok() })
			fail := func(mode string) {
				m := b.f.Client("cluster-3")
				framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
					var svc = fedtest.FederatedService(ns, "db")
					if err := m.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
						return err
					}
					if mode == "" {
						delete(svc.Annotations, loopbacklb.FailureAnnotation)
					} else {
						svc.Annotations[loopbacklb.FailureAnnotation] = mode
					}
					return m.Update(ctx, svc)
				})
			}
			var outage []time.Duration
			var lost []int
			for range trials {
				// The client connects to cluster-3 before each trial.
				framework.Eventually(t, worst+time.Minute, func(context.Context) error { return c.connectedTo(primary) })
				start, before := time.Now(), c.failures()
				fail(loopbacklb.FailureRefuse)
				framework.Eventually(t, worst+time.Minute, func(context.Context) error { return c.okSince(start) })
				outage = append(outage, c.firstOKSince(start).Sub(start))
				lost = append(lost, c.failures()-before)
				fail("")
			}
			p50, p95, mx := percentiles(outage)
			t.Logf("primary dead → the client connects again (%s), %d trials: p50 %v, p95 %v, max %v; bound kfed computed %v; connections lost per trial %v",
				s.name, len(outage), p50, p95, mx, worst.Round(100*time.Millisecond), lost)
			if slack := time.Second; p95 > worst+slack {
				t.Errorf("p95 %v over the worst case %v (+%v for the client's 100 ms and the resolver)", p95, worst, slack)
			}
		})
	}
}

// startUnbound runs Unbound on loopback as a caching resolver that sends
// zone to the server at upstream, and returns its address. With ecs it
// sends each client's /24 as ECS (its subnet module) and keeps the order of
// the answers it caches.
func startUnbound(t *testing.T, upstream, zone string, ecs bool) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(framework.RepoRoot(t), "hack", "install-unbound.sh")).Output()
	if err != nil {
		t.Fatalf("hack/install-unbound.sh: %v", err)
	}
	bin := strings.TrimSpace(string(out))
	dir := t.TempDir()
	port := framework.FreePort(t)
	host, upPort, _ := net.SplitHostPort(upstream)
	modules := "module-config: \"iterator\""
	if ecs {
		modules = fmt.Sprintf(`module-config: "subnetcache iterator"
	send-client-subnet: %s
	client-subnet-always-forward: yes
	max-client-subnet-ipv4: 24
	rrset-roundrobin: no
	num-threads: 1`, host)
	}
	conf := fmt.Sprintf(`server:
	interface: 127.0.0.1@%d
	port: %d
	do-daemonize: no
	username: ""
	chroot: ""
	directory: %q
	pidfile: ""
	use-syslog: no
	logfile: ""
	verbosity: 0
	do-not-query-localhost: no
	%s
	access-control: 127.0.0.0/8 allow
	domain-insecure: %q
	local-zone: %q transparent
	prefetch: no
	serve-expired: no
stub-zone:
	name: %q
	stub-addr: %s@%s
`, port, port, dir, modules, zone, zone, zone, host, upPort)
	path := filepath.Join(dir, "unbound.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	framework.StartProcess(t, exec.Command(bin, "-d", "-c", path), "unbound")
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(zone), dns.TypeSOA)
		_, err := dns.ExchangeContext(ctx, m, addr)
		return err
	})
	return addr
}

// dialingClient resolves name through a resolver and connects to its first
// address every 100 ms, as an application would, until the test ends.
type dialingClient struct {
	mu       sync.Mutex
	attempts []attempt
}

type attempt struct {
	at   time.Time
	addr string
	ok   bool
	// dns says why there was no address: the resolver's error or rcode.
	dns string
}

func newDialingClient(t *testing.T, resolver, name string) *dialingClient {
	c := &dialingClient{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			a := attempt{at: time.Now()}
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeA)
			r, err := dns.ExchangeContext(ctx, m, resolver)
			switch {
			case err != nil:
				a.dns = err.Error()
			case r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0:
				a.dns = dns.RcodeToString[r.Rcode] + ", no address"
			}
			for _, rr := range answerOf(r, err) {
				if rr, isA := rr.(*dns.A); isA {
					a.addr = rr.A.String()
					d := net.Dialer{Timeout: 200 * time.Millisecond}
					if conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.addr, "8080")); err == nil {
						conn.Close()
						a.ok = true
					}
					break // the first address, as most clients use
				}
			}
			c.mu.Lock()
			c.attempts = append(c.attempts, a)
			c.mu.Unlock()
		}
	}()
	return c
}

func answerOf(r *dns.Msg, err error) []dns.RR {
	if err != nil {
		return nil
	}
	return r.Answer
}

func (c *dialingClient) last() (attempt, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.attempts) == 0 {
		return attempt{}, false
	}
	return c.attempts[len(c.attempts)-1], true
}

func (c *dialingClient) ok() error {
	if a, any := c.last(); !any || !a.ok {
		return fmt.Errorf("the client does not connect yet (%+v)", a)
	}
	return nil
}

func (c *dialingClient) connectedTo(addr string) error {
	if a, any := c.last(); !any || !a.ok || a.addr != addr {
		return fmt.Errorf("the client connects to %+v, want %s", a, addr)
	}
	return nil
}

// okSince is nil once an attempt after start has failed and a later one
// succeeded: the client has seen the outage and is through it.
func (c *dialingClient) okSince(start time.Time) error {
	if c.firstOKSince(start).IsZero() {
		return fmt.Errorf("the client has not connected again since %v; its attempts since: %s",
			start.Format(time.TimeOnly), c.attemptsSince(start))
	}
	return nil
}

// attemptsSince counts the attempts after start by what happened, for a
// failure message to say whether the resolver failed, the answer stayed
// on the dead place or the next place refused too.
func (c *dialingClient) attemptsSince(start time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	counts := map[string]int{}
	for _, a := range c.attempts {
		if a.at.Before(start) {
			continue
		}
		key := a.dns
		if key == "" {
			key = fmt.Sprintf("%s ok=%v", a.addr, a.ok)
		}
		counts[key]++
	}
	return fmt.Sprint(counts)
}

// firstOKSince is the first successful attempt after start that follows a
// failed one; zero when there is none yet.
func (c *dialingClient) firstOKSince(start time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	failed := false
	for _, a := range c.attempts {
		if a.at.Before(start) {
			continue
		}
		if !a.ok {
			failed = true
		} else if failed {
			return a.at
		}
	}
	return time.Time{}
}

func (c *dialingClient) failures() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, a := range c.attempts {
		if !a.ok {
			n++
		}
	}
	return n
}
