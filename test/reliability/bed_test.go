// Package reliability injects real faults into a running kfed — its
// controller killed, the control plane restarted and frozen, a member's API
// server down, a load balancer withdrawing its addresses, BIND killed, the
// Route53 and Cloud DNS endpoints refusing half of their requests, CoreDNS
// restarted under load — and checks one set of invariants after each: the
// DNSEndpoints are what the Services imply, every provider holds exactly
// them plus the records kfed does not own, untouched, no shard is orphaned,
// no change is lost and no process panicked.
//
// Everything is real but Route53 and Cloud DNS (test/route53fake and
// test/clouddnsfake, driven by kfed's provider code): kube-apiserver and
// etcd, BIND, kfed-controller and CoreDNS built from this checkout, dnsperf.
// `go test` runs the short form (tens of Services, a few faults);
// KFED_RELIABILITY=full (make reliability) runs the full one, whose figures
// are in docs/reliability.md.
package reliability

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awsroute53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/prometheus/client_golang/prometheus"
	clouddnsapi "google.golang.org/api/dns/v1"
	"google.golang.org/api/option"
	"k8s.io/klog/v2/textlogger"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnsprovider/clouddns"
	"github.com/kfed-io/kfed/dns/dnsprovider/rfc2136"
	"github.com/kfed-io/kfed/dns/dnsprovider/route53"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/clouddnsfake"
	"github.com/kfed-io/kfed/test/framework"
	"github.com/kfed-io/kfed/test/route53fake"
)

const (
	zone       = "kfed.test"
	federation = "fed"
	ownerID    = "fed"
	ns         = "churn"
	gcpProject = "kfed-reliability"
	gcpZone    = "kfed-test"
)

// form is how much of each fault a run injects.
type form struct {
	name     string
	services int           // churned Services
	stable   int           // Services no churn touches, queried throughout
	churn    time.Duration // time between two churn writes
	kills    int           // kfed-controller SIGKILLs
	freeze   time.Duration // the control plane SIGSTOPped
	down     time.Duration // a member's API server stopped
	bindDown time.Duration // BIND killed
	faulty   time.Duration // the Route53 and Cloud DNS endpoints refusing half
	dnsperf  int           // seconds of dnsperf load per CoreDNS restart
	restarts int           // CoreDNS restarts under load
	converge time.Duration // bound on convergence after a fault
}

func formFromEnv() form {
	if os.Getenv("KFED_RELIABILITY") == "full" {
		return form{name: "full", services: 1000, stable: 10, churn: 100 * time.Millisecond, kills: 20,
			freeze: time.Minute, down: time.Minute, bindDown: 10 * time.Second, faulty: 2 * time.Minute,
			dnsperf: 20, restarts: 5, converge: 10 * time.Minute}
	}
	// The freeze outlasts what a leader may go without renewing: a renew
	// round starts up to a retry period (2 s) after the last success and
	// gives up after the renew deadline (10 s), so 12 s was the very edge,
	// and under CI's load the leader kept its lease.
	return form{name: "short", services: 30, stable: 4, churn: 300 * time.Millisecond, kills: 1,
		freeze: 16 * time.Second, down: 8 * time.Second, bindDown: 3 * time.Second, faulty: 10 * time.Second,
		dnsperf: 3, restarts: 1, converge: 2 * time.Minute}
}

// bed is the test bed: a federation of three members with load balancers,
// two kfed-controller replicas publishing to BIND, in-process DNS syncs to
// the Route53 and Cloud DNS endpoints, and a CoreDNS with the kfed plugin.
type bed struct {
	t    *testing.T
	form form
	f    *framework.Federation
	fed  client.Client

	bind       *bindtest.Server
	r53        *route53fake.Server
	r53Zone    string
	gcp        *clouddnsfake.Server
	r53Sync    *dnssync.Syncer
	gcpSync    *dnssync.Syncer
	controller []*proc
	coredns    *proc
	dnsAddr    string
	seeded     []dnsprovider.RecordSet // records kfed does not own, in every provider

	churn *churn

	mu       sync.Mutex
	figures  []string
	failures []string // what check found, said again at the very end
}

// figure records one measured figure of the run, for docs/reliability.md.
func (b *bed) figure(scenario, format string, args ...any) {
	line := fmt.Sprintf("%-16s %s", scenario, fmt.Sprintf(format, args...))
	b.t.Log("FIGURE " + line)
	b.mu.Lock()
	b.figures = append(b.figures, line)
	b.mu.Unlock()
}

func startBed(t *testing.T, fm form) *bed {
	t.Helper()
	b := &bed{t: t, form: fm}
	// Registered first, so it runs last: after every process's logs, the
	// end of the output (what CI keeps) says what failed.
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if t.Failed() && len(b.failures) > 0 {
			t.Logf("what failed, again:\n%s", strings.Join(b.failures, "\n"))
		}
	})
	b.bind = bindtest.Start(t, zone)
	b.r53 = route53fake.New()
	t.Cleanup(b.r53.Close)
	b.r53Zone = b.r53.AddZone(zone, false)
	b.gcp = clouddnsfake.New()
	t.Cleanup(b.gcp.Close)
	b.gcp.AddZone(gcpProject, gcpZone, zone+".")
	b.gcp.LimitRecordSets(0) // 10,000 by default, raised on request

	b.f = framework.Start(t, framework.Members(3), framework.LoadBalancer())
	b.f.JoinAll()
	b.fed = b.f.Client("federation")
	if err := b.fed.Create(context.Background(), framework.Namespace(ns)); err != nil {
		t.Fatal(err)
	}
	b.seed()

	controllerBin := framework.BuildCommand(t, "kfed-controller")
	host, port, _ := net.SplitHostPort(b.bind.Addr)
	args := []string{"--kubeconfig", b.f.Kubeconfig, "--context", "federation",
		"--federation", federation, "--domain", zone, "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
		"--cluster-probe-interval", "500ms", "--dns-interval", "2s",
		"--dns-provider", "rfc2136", "--owner-id", ownerID, "--rfc2136-host", host, "--rfc2136-port", port,
		"--rfc2136-zone", zone, "--rfc2136-tsig-keyname", bindtest.KeyName, "--rfc2136-tsig-secret-file", b.bind.SecretFile}
	for i := range 2 {
		b.controller = append(b.controller, newProc(t, "kfed-controller-"+strconv.Itoa(i), controllerBin, args...))
	}
	b.startProviderSyncs()

	corefile := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(corefile, []byte(devenv.KfedCorefile(devenv.KfedZone{
		Zone: zone, Federation: federation, Kubeconfig: b.f.Kubeconfig, Context: "federation",
	})), 0o644); err != nil {
		t.Fatal(err)
	}
	dnsPort := framework.FreePort(t)
	b.dnsAddr = "127.0.0.1:" + strconv.Itoa(dnsPort)
	b.coredns = newProc(t, "coredns", framework.BuildCommand(t, "coredns"), "-conf", corefile, "-dns.port", strconv.Itoa(dnsPort))
	b.churn = newChurn(b)
	return b
}

// route53Provider is kfed's Route53 provider for the local endpoint, paced
// at rps requests a second (0: Route53's five).
func (b *bed) route53Provider(rps float64) dnsprovider.Provider {
	c := awsroute53.NewFromConfig(aws.Config{Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDKFEDRELIABILITY", "reliability", "")},
		func(o *awsroute53.Options) { o.BaseEndpoint = aws.String(b.r53.URL) })
	return route53.New(c, route53.Config{ZoneIDs: []string{b.r53Zone}, RequestsPerSecond: rps})
}

func (b *bed) cloudDNSProvider() dnsprovider.Provider {
	svc, err := clouddnsapi.NewService(context.Background(), option.WithEndpoint(b.gcp.URL+"/"), option.WithoutAuthentication())
	if err != nil {
		b.t.Fatal(err)
	}
	p, err := clouddns.New(svc, clouddns.Config{Project: gcpProject, Zones: []string{gcpZone}})
	if err != nil {
		b.t.Fatal(err)
	}
	return p
}

func (b *bed) bindProvider() dnsprovider.Provider {
	p, err := rfc2136.New(rfc2136.Config{Server: b.bind.Addr, Zones: []string{zone}, TSIGKeyName: bindtest.KeyName, TSIGSecretFile: b.bind.SecretFile})
	if err != nil {
		b.t.Fatal(err)
	}
	return p
}

func planner(t *testing.T) dnsprovider.Planner {
	reg, err := dnsprovider.NewRegistry(ownerID, dnsprovider.DefaultTXTPrefix)
	if err != nil {
		t.Fatal(err)
	}
	return dnsprovider.Planner{Registry: reg}
}

// seed writes, in every provider, records that another tool owns: names of
// their own, and one at a name a Service wants (its cluster-1 name).
func (b *bed) seed() {
	b.seeded = []dnsprovider.RecordSet{
		dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: "www." + zone, Type: "A", TTL: 300, Targets: []string{"192.0.2.10"}}),
		dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: "mail." + zone, Type: "TXT", TTL: 3600, Targets: []string{`"v=spf1 -all"`}}),
		dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: "alias." + zone, Type: "CNAME", TTL: 60, Targets: []string{"www." + zone + "."}}),
		dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: "cluster-1." + stableName(0) + "." + ns + "." + federation + ".svc." + zone, Type: "A", TTL: 300, Targets: []string{"192.0.2.77"}}),
	}
	ctx := context.Background()
	for _, p := range []dnsprovider.Provider{b.bindProvider(), b.route53Provider(1000), b.cloudDNSProvider()} {
		zones, err := p.Zones(ctx)
		if err != nil || len(zones) != 1 {
			b.t.Fatalf("zones of %s: %v %v", p.Name(), zones, err)
		}
		cs := zones[0].NewChangeset()
		for _, rs := range b.seeded {
			cs.Add(dnsprovider.Change{Action: dnsprovider.Create, New: rs, Group: rs.Name})
		}
		if err := cs.Apply(ctx); err != nil {
			b.t.Fatalf("seeding %s: %v", p.Name(), err)
		}
	}
}

// startProviderSyncs runs kfed's DNS sync loop (dnssync.Controller) for
// Route53 and for Cloud DNS in the test process, each with kfed's provider
// code against its local endpoint, beside the controller's own to BIND: the
// controller takes one provider, and one federation may well publish to
// several.
func (b *bed) startProviderSyncs() {
	t := b.t
	cfg := b.f.ControlPlane.Config
	c, err := cache.New(cfg, cache.Options{Scheme: b.f.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: b.f.Scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Start(ctx) }()
	if _, err := c.GetInformer(ctx, &extdnsv1alpha1.DNSEndpoint{}); err != nil {
		t.Fatal(err)
	}
	b.r53Sync = &dnssync.Syncer{Provider: b.route53Provider(0), Planner: planner(t)}
	b.gcpSync = &dnssync.Syncer{Provider: b.cloudDNSProvider(), Planner: planner(t)}
	for _, s := range []*dnssync.Syncer{b.r53Sync, b.gcpSync} {
		m, err := dnssync.NewMetrics(prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		sc := &dnssync.Controller{Syncer: s, Fed: cl, Cache: c, Federation: federation, Interval: 2 * time.Second, Metrics: m,
			Logger: textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&lineFilter{w: framework.LogWriter(t), keep: "DNS sync"}))).WithName(s.Provider.Name())}
		wg.Add(1)
		go func() { defer wg.Done(); _ = sc.Start(ctx) }()
	}
}

// lineFilter passes on only the lines holding keep: the in-process syncs'
// errors, not their every line.
type lineFilter struct {
	w    interface{ Write([]byte) (int, error) }
	keep string
}

func (l *lineFilter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), l.keep) && (strings.HasPrefix(string(p), "E") || strings.Contains(string(p), "error")) {
		return l.w.Write(p)
	}
	return len(p), nil
}

// logs returns every log file of the run: kfed-controller's and CoreDNS's
// runs, and the API servers' and etcd's.
func (b *bed) logs() []string {
	var files []string
	for _, p := range append(append([]*proc(nil), b.controller...), b.coredns) {
		files = append(files, p.logFiles()...)
	}
	more, _ := filepath.Glob(filepath.Join(b.f.Dir, "logs", "*.log"))
	return append(files, more...)
}

// leader returns the controller replica whose current run holds the Lease,
// or nil.
func (b *bed) leader() *proc {
	for _, p := range b.controller {
		if strings.Contains(strings.ToLower(p.currentLog()), "successfully acquired lease") {
			return p
		}
	}
	return nil
}
