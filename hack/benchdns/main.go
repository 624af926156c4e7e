// Command benchdns prepares hack/bench-dns.sh's comparison of the kfed
// CoreDNS plugin with CoreDNS's file plugin: it starts a federation control
// plane on loopback (package devenv), writes the DNSEndpoints of a synthetic
// federation there, writes the same records as a zone file, a dnsperf query
// file and a Corefile serving them, then waits for SIGINT or SIGTERM.
//
//	go run ./hack/benchdns -dir DIR -names 10000
//
// With -probe ADDR it instead waits (up to a minute) until the DNS server at
// ADDR answers the zone's SOA and a query for the last Service's global name,
// which the kfed plugin does once it has listed every DNSEndpoint.
//
// The Service of index i has ten names, as the services controller writes
// them for shards in cluster-1 and cluster-2 (us-east1-b) and cluster-3
// (europe-west1-b): the global name, three per-cluster names, two region
// names, the zone names us-east1-b and europe-west1-b, the CNAME fallback of
// zone us-east1-c, and an SRV name.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/deploy/crds"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/oldlayout"
)

const (
	zone       = "kfed.test"
	federation = "bench"
	namespace  = "bench"
	perService = 10
)

func main() {
	dir := flag.String("dir", "", "folder for the control plane, zone file, queries and Corefile (required)")
	names := flag.Int("names", 10000, "federated names to create, ten per Service")
	binDir := flag.String("bin-dir", os.Getenv("KFED_TEST_BIN"), "folder with kube-apiserver and etcd (hack/test-binaries.sh)")
	probeAddr := flag.String("probe", "", "wait until the DNS server at this address serves the names, then exit")
	loads := flag.Bool("loads", false, "give every Service's clusters loads as kfed-controller weighs them: cluster-1 at 0.97 (weight 3), the others at 0.30 (70), so that a CoreDNS in cluster-1 answers every query with its own cluster spilled")
	flag.Parse()
	if *probeAddr != "" {
		if err := probe(*probeAddr, *names/perService); err != nil {
			fmt.Fprintln(os.Stderr, "benchdns:", err)
			os.Exit(1)
		}
		return
	}
	if *dir == "" || *binDir == "" {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *dir, *binDir, *names/perService, *loads); err != nil {
		fmt.Fprintln(os.Stderr, "benchdns:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir, binDir string, services int, loads bool) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	env, err := devenv.Start(ctx, devenv.Options{Dir: filepath.Join(dir, "env"), BinDir: binDir, SeedDir: devenv.DefaultSeedDir()})
	if err != nil {
		return err
	}
	defer env.Stop()
	if err := env.InstallCRDs(ctx, env.ControlPlane, crds.FS); err != nil {
		return err
	}
	start := time.Now()
	if err := createEndpoints(ctx, env.ControlPlane.Config, services, loads); err != nil {
		return err
	}
	fmt.Printf("benchdns: %d DNSEndpoints (%d names) created in %v\n", services, services*perService, time.Since(start).Round(time.Second))
	if err := writeZoneFile(filepath.Join(dir, "db."+zone), services); err != nil {
		return err
	}
	if err := writeQueries(filepath.Join(dir, "queries.txt"), services); err != nil {
		return err
	}
	if err := writeEnv(filepath.Join(dir, "bench.env"), env.Kubeconfig); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		return err
	}
	fmt.Println("benchdns: ready")
	<-ctx.Done()
	return nil
}

// probe waits until addr answers the zone's SOA and the last Service's
// global name.
func probe(addr string, services int) error {
	questions := []dns.Question{{Name: zone + ".", Qtype: dns.TypeSOA, Qclass: dns.ClassINET}}
	if services > 0 {
		questions = append(questions, dns.Question{Name: newService(services-1).global + ".", Qtype: dns.TypeA, Qclass: dns.ClassINET})
	}
	c := &dns.Client{Timeout: time.Second}
	deadline := time.Now().Add(time.Minute)
	for {
		err := func() error {
			for _, q := range questions {
				m := &dns.Msg{Question: []dns.Question{q}}
				m.Id = dns.Id()
				r, _, err := c.Exchange(m, addr)
				if err != nil {
					return err
				}
				if r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
					return fmt.Errorf("%s %s: %s, %d answers", q.Name, dns.TypeToString[q.Qtype], dns.RcodeToString[r.Rcode], len(r.Answer))
				}
			}
			return nil
		}()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not serve the names: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeEnv writes what the script needs, as lines a shell can source: the
// kubeconfig (context "federation") and three free loopback ports, one per
// server block.
func writeEnv(path, kubeconfig string) error {
	lines := []string{"KUBECONFIG=" + kubeconfig, "FEDERATION=" + federation, "ZONE=" + zone}
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for _, name := range []string{"KFED_PORT", "FILE_PORT", "WHOAMI_PORT"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("finding a free port: %w", err)
		}
		held = append(held, l)
		lines = append(lines, fmt.Sprintf("%s=%d", name, l.Addr().(*net.TCPAddr).Port))
	}
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// createEndpoints writes the Services' DNSEndpoints with a few writers at
// once, which a control plane on loopback takes in stride.
func createEndpoints(ctx context.Context, cfg *rest.Config, services int, loads bool) error {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 2000, 2000
	scheme := runtime.NewScheme()
	if err := errors.Join(extdnsv1alpha1.AddToScheme(scheme), corev1.AddToScheme(scheme)); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	work := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				if err := c.Create(ctx, dnsEndpoint(i, loads)); err != nil {
					select {
					case errs <- fmt.Errorf("creating DNSEndpoint %d: %w", i, err):
					default:
					}
				}
			}
		})
	}
	for i := range services {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			return err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// service is the records of Service i: its names and addresses.
type service struct {
	global, region1, region2, zoneB, zoneC, zoneEB, srv string
	cluster                                             [3]string // per-cluster names
	lb, clusterIP                                       [3]string // per cluster
}

var clusters = [3]struct{ name, region, zone string }{
	{"cluster-1", "us-east1", "us-east1-b"},
	{"cluster-2", "us-east1", "us-east1-b"},
	{"cluster-3", "europe-west1", "europe-west1-b"},
}

func newService(i int) service {
	base := fmt.Sprintf("svc-%d.%s.%s.svc", i, namespace, federation)
	s := service{
		global:  base + "." + zone,
		region1: base + ".us-east1." + zone,
		region2: base + ".europe-west1." + zone,
		zoneB:   base + ".us-east1-b.us-east1." + zone,
		zoneC:   base + ".us-east1-c.us-east1." + zone,
		zoneEB:  base + ".europe-west1-b.europe-west1." + zone,
		srv:     "_http._tcp." + base + "." + zone,
	}
	for c := range clusters {
		s.cluster[c] = clusters[c].name + "." + s.global
		s.lb[c] = fmt.Sprintf("10.%d.%d.%d", 100+c, i/250, i%250+1)
		s.clusterIP[c] = fmt.Sprintf("172.%d.%d.%d", 16+c, i/250, i%250+1)
	}
	return s
}

// addressNames maps each address name of the Service to the clusters it
// answers.
func (s service) addressNames() map[string][]int {
	return map[string][]int{
		s.global: {0, 1, 2}, s.cluster[0]: {0}, s.cluster[1]: {1}, s.cluster[2]: {2},
		s.region1: {0, 1}, s.region2: {2}, s.zoneB: {0, 1}, s.zoneEB: {2},
	}
}

func dnsEndpoint(i int, loads bool) *extdnsv1alpha1.DNSEndpoint {
	s := newService(i)
	var eps []extdnsv1alpha1.Endpoint
	for name, cs := range s.addressNames() {
		for _, c := range cs {
			eps = append(eps, extdnsv1alpha1.Endpoint{
				DNSName: name, RecordType: "A", Targets: []string{s.lb[c]}, SetIdentifier: clusters[c].name, RecordTTL: 30,
				ProviderSpecific: []extdnsv1alpha1.ProviderSpecificProperty{
					{Name: "kfed.io/cluster", Value: clusters[c].name},
					{Name: "kfed.io/region", Value: clusters[c].region},
					{Name: "kfed.io/zone", Value: clusters[c].zone},
					{Name: "kfed.io/weight", Value: "1"},
					{Name: "kfed.io/cluster-ip", Value: s.clusterIP[c]},
				},
			})
		}
	}
	eps = append(eps,
		extdnsv1alpha1.Endpoint{DNSName: s.zoneC, RecordType: "CNAME", Targets: []string{s.region1}, RecordTTL: 30},
		extdnsv1alpha1.Endpoint{DNSName: s.srv, RecordType: "SRV", RecordTTL: 30, Targets: []string{
			"0 1 8080 " + s.cluster[0], "0 1 8080 " + s.cluster[1], "0 1 8080 " + s.cluster[2],
		}},
	)
	obj := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("svc-%d", i), Namespace: namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "kfed", "kfed.io/federation": federation},
		},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps},
	}
	// In the layout the services controller writes (ADR 0003): one endpoint
	// per name and type, the clusters in the object's table.
	if err := oldlayout.Upgrade(obj); err != nil {
		panic(err) // the fixtures above are well formed
	}
	if loads {
		withLoads(obj)
	}
	return obj
}

// withLoads gives obj's clusters the loads and weights kfed-controller
// would publish for cluster-1 at 0.97 and the others at 0.30.
func withLoads(obj *extdnsv1alpha1.DNSEndpoint) {
	table, err := dnsendpoint.ReadClusters(obj)
	if err != nil {
		panic(err)
	}
	var rows []dnsendpoint.Cluster
	for _, c := range table {
		u, w := 0.30, 70
		if c.Name == clusters[0].name {
			u, w = 0.97, 3
		}
		c.Load, c.Weight = &u, w
		rows = append(rows, *c)
	}
	dnsendpoint.SetClusters(obj, rows)
}

// writeZoneFile writes the same records for CoreDNS's file plugin.
func writeZoneFile(path string, services int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "$ORIGIN %s.\n$TTL 30\n@ IN SOA ns.dns.%s. hostmaster.%s. 1 7200 1800 86400 30\n@ IN NS ns.dns.%s.\n", zone, zone, zone, zone)
	for i := range services {
		s := newService(i)
		for name, cs := range s.addressNames() {
			for _, c := range cs {
				fmt.Fprintf(w, "%s. IN A %s\n", name, s.lb[c])
			}
		}
		fmt.Fprintf(w, "%s. IN CNAME %s.\n", s.zoneC, s.region1)
		for c := range clusters {
			fmt.Fprintf(w, "%s. IN SRV 0 1 8080 %s.\n", s.srv, s.cluster[c])
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeQueries writes every name once with the type a client asks of it,
// in a shuffled but fixed order, for dnsperf -d.
func writeQueries(path string, services int) error {
	var lines []string
	for i := range services {
		s := newService(i)
		for name := range s.addressNames() {
			lines = append(lines, name+" A")
		}
		lines = append(lines, s.zoneC+" A", s.srv+" SRV")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}
