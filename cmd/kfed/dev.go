package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/deploy/crds"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbackgw"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/manager"
	"github.com/kfed-io/kfed/services/serviceconfig"
)

// devOptions are the flags of kfed dev up.
type devOptions struct {
	dir        string
	binDir     string
	federation string
	domain     string
	workloads  bool
	lbBase     int
	coredns    string
	checker    string
}

func newDevCommand() *cobra.Command {
	dev := &cobra.Command{Use: "dev", Short: "Run a local federation for development"}
	var o devOptions
	up := &cobra.Command{
		Use:   "up",
		Short: "Start a federation control plane and three member clusters on loopback",
		Long: `Up starts, on 127.0.0.1, an etcd, a kube-apiserver for the federation control plane and one for
each of three member clusters (with a scheduler, a controller manager and simulated KWOK nodes each),
a loopback load balancer per member, and kfed's controller; joins the members; creates the federated
Service default/demo; and runs until interrupted, then stops every process it started.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return devUp(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	up.Flags().StringVar(&o.dir, "dir", ".kfed-dev", "folder for the kubeconfig, env file, data and logs")
	up.Flags().StringVar(&o.binDir, "bin-dir", os.Getenv("KFED_BIN"), "folder with kube-apiserver, etcd, kubectl, … (default: $KFED_BIN, else hack/test-binaries.sh --print)")
	up.Flags().StringVar(&o.federation, "federation", "dev", "federation name, the F in S.N.F.svc.D")
	up.Flags().StringVar(&o.domain, "domain", "kfed.test", "DNS suffix, the D in S.N.F.svc.D")
	up.Flags().BoolVar(&o.workloads, "workloads", true, "run schedulers, controller managers and KWOK nodes so Deployments get Pods")
	up.Flags().IntVar(&o.lbBase, "lb-base", 100, "member i's load balancer gives out 127.(lb-base+i).0.0/16")
	up.Flags().StringVar(&o.coredns, "coredns", "", "CoreDNS built with the kfed plugin (default: coredns beside the kfed binary; make dev builds it)")
	up.Flags().StringVar(&o.checker, "healthcheck", "", "the kfed-healthcheck agent (default: kfed-healthcheck beside the kfed binary; make dev builds it)")
	dev.AddCommand(up)
	return dev
}

// devUp starts the environment step by step, reports it ready, and runs it
// until ctx ends or a component running in the background fails.
func devUp(ctx context.Context, out io.Writer, o devOptions) error {
	start := time.Now()
	dir, err := o.complete()
	if err != nil {
		return err
	}
	log, closeLog, err := openDevLog(dir)
	if err != nil {
		return err
	}
	defer closeLog()
	fmt.Fprintf(out, "kfed dev: starting etcd and 4 API servers in %s\n", dir)
	env, err := startDevEnv(ctx, dir, o)
	if err != nil {
		return err
	}
	defer env.Stop()

	// The in-process components run until ctx ends; bg.stop waits for them
	// before the API servers go away.
	bg := newBackground(ctx)
	defer bg.stop()
	if err := federate(ctx, bg, env, o, log); err != nil {
		return err
	}
	dnsAddrs, edge, err := startDNS(ctx, env, o)
	if err != nil {
		return err
	}
	demo, shop := "demo.default."+o.federation+".svc."+o.domain, "shop."+o.domain
	for _, name := range []string{demo, shop} {
		// Ready means every member's endpoint is published, not the first one.
		if err := waitResolves(ctx, dnsAddrs[0], name, len(env.Members), bg.errc); err != nil {
			return err
		}
	}
	if err := writeEnvFile(dir, env, o, dnsAddrs, edge); err != nil {
		return err
	}
	printNextSteps(out, dir, env, o, dnsAddrs, demo, shop)
	printEdge(out, edge, demo)
	fmt.Fprintf(out, "kfed dev: ready in %s; Ctrl-C stops everything\n", time.Since(start).Round(100*time.Millisecond))

	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "kfed dev: stopping")
		return nil
	case err := <-bg.errc:
		return err
	}
}

// startDevEnv starts the servers of the environment (devenv.Start) and
// installs the CRDs. The caller stops the environment it returns.
func startDevEnv(ctx context.Context, dir string, o devOptions) (*devenv.Env, error) {
	env, err := devenv.Start(ctx, devenv.Options{
		Dir: dir, BinDir: o.binDir, Members: devenv.DefaultMembers(), Workloads: o.workloads,
		// Members get the Balancer and the Multi-Cluster Services CRDs
		// before they join (so kfed watches those kinds there) and before
		// their controller managers start.
		MemberCRDs: crds.Member(),
	})
	if err != nil {
		return nil, fmt.Errorf("starting the local federation: %w", err)
	}
	if err := installDevCRDs(ctx, env, dir); err != nil {
		env.Stop()
		return nil, err
	}
	return env, nil
}

// federate runs the members' loopback implementations and kfed's controller
// in bg, joins the members, waits until they are Ready and creates the
// demo Service and Gateway.
func federate(ctx context.Context, bg *background, env *devenv.Env, o devOptions, log logr.Logger) error {
	fed, err := federationClient(env)
	if err != nil {
		return err
	}
	runLoopbacks(bg, env, o.lbBase, log)
	if err := joinMembers(ctx, env, fed, o.federation); err != nil {
		return err
	}
	bg.run("kfed controller", func(ctx context.Context) error {
		return runController(ctx, devManager(env, o, log), log.WithName("kfed-controller"), 2*time.Second)
	})
	if err := waitClustersReady(ctx, fed, len(env.Members), bg.errc); err != nil {
		return err
	}
	if err := createDemo(ctx, fed); err != nil {
		return err
	}
	return createDemoGateway(ctx, fed, o.domain)
}

// complete fills in the defaults that depend on where kfed runs and returns
// the absolute path of the environment's folder.
func (o *devOptions) complete() (dir string, err error) {
	if dir, err = filepath.Abs(o.dir); err != nil {
		return "", err
	}
	if o.coredns == "" {
		if o.coredns, err = besideExecutable("coredns"); err != nil {
			return "", err
		}
	}
	if o.checker == "" {
		if o.checker, err = besideExecutable("kfed-healthcheck"); err != nil {
			return "", err
		}
	}
	if o.binDir == "" {
		if o.binDir, err = findBinDir(); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// openDevLog creates DIR/logs/kfed.log, where the in-process components
// (controller, load balancers, Gateways) log, and makes it klog's and
// controller-runtime's log.
func openDevLog(dir string) (logr.Logger, func(), error) {
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return logr.Discard(), nil, err
	}
	f, err := os.Create(filepath.Join(logDir, "kfed.log"))
	if err != nil {
		return logr.Discard(), nil, err
	}
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(f)))
	klog.SetLogger(log)
	ctrl.SetLogger(log)
	return log, func() { f.Close() }, nil
}

// installDevCRDs installs kfed's CRDs in the control plane, and the Gateway
// API's everywhere before kfed starts: it federates Gateways only if the
// control plane serves them then.
func installDevCRDs(ctx context.Context, env *devenv.Env, dir string) error {
	if err := devenv.InstallCRDs(ctx, env.ControlPlane.Config, crds.FS); err != nil {
		return err
	}
	gatewayCRDs, err := devenv.GatewayAPICRDs(filepath.Join(dir, "gateway-api"))
	if err != nil {
		return err
	}
	for _, c := range append([]*devenv.Cluster{env.ControlPlane}, env.Members...) {
		if err := devenv.InstallCRDs(ctx, c.Config, gatewayCRDs); err != nil {
			return fmt.Errorf("installing the Gateway API CRDs in %s: %w", c.Name, err)
		}
	}
	return nil
}

// federationClient is a client of the control plane that knows kfed's kinds.
func federationClient(env *devenv.Env) (client.Client, error) {
	scheme, err := manager.NewScheme()
	if err != nil {
		return nil, err
	}
	return client.New(env.ControlPlane.Config, client.Options{Scheme: scheme})
}

// background runs the environment's in-process components until the
// context it was made with ends, and passes the first one's failure on errc.
type background struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errc   chan error
}

func newBackground(ctx context.Context) *background {
	ctx, cancel := context.WithCancel(ctx)
	return &background{ctx: ctx, cancel: cancel, errc: make(chan error, 1)}
}

// run runs f in a goroutine of its own. An error it returns before the
// background stops is passed on errc, unless another is waiting there.
func (b *background) run(what string, f func(context.Context) error) {
	b.wg.Go(func() {
		if err := f(b.ctx); err != nil && b.ctx.Err() == nil {
			select {
			case b.errc <- fmt.Errorf("%s: %w", what, err):
			default:
			}
		}
	})
}

// stop ends every component and waits for them.
func (b *background) stop() {
	b.cancel()
	b.wg.Wait()
}

// runLoopbacks runs each member's loopback load balancer and Gateway
// implementation, the member's Gateway addresses beside its load balancer's.
func runLoopbacks(bg *background, env *devenv.Env, lbBase int, log logr.Logger) {
	for i, m := range env.Members {
		lb := loopbacklb.Block(lbBase, i)
		bg.run("load balancer of "+m.Name, func(ctx context.Context) error {
			return loopbacklb.Run(ctx, loopbacklb.Options{
				Cluster: m.Name, Block: lb, Config: m.Config,
				Logger: log.WithName("loopbacklb").WithValues("cluster", m.Name),
			})
		})
		bg.run("gateways of "+m.Name, func(ctx context.Context) error {
			return loopbackgw.Run(ctx, loopbackgw.Options{
				Cluster: m.Name, Block: loopbackgw.BlockBeside(lb), Config: m.Config,
				Logger: log.WithName("loopbackgw").WithValues("cluster", m.Name),
			})
		})
	}
}

// devManager builds kfed's controller manager for the environment: leader
// elected, so that a replacement stands by until it leads.
func devManager(env *devenv.Env, o devOptions, log logr.Logger) func() (starter, error) {
	return func() (starter, error) {
		return manager.New(env.ControlPlane.Config, manager.Options{
			LeaderElection: true, MetricsAddr: "127.0.0.1:0", HealthAddr: "0",
			ClusterProbeInterval: 5 * time.Second, Logger: log.WithName("kfed-controller"),
			Federation: o.federation, Domain: o.domain,
			HealthFreshness: 8 * time.Second, // four of the checkers' 2 s heartbeats
			SharedProcess:   true,            // a replaced manager's controllers keep their names
		})
	}
}

// startDNS starts a health checker and a CoreDNS with the plugin in each
// member, and the edge CoreDNS; it returns the members' DNS addresses and
// the edge's.
func startDNS(ctx context.Context, env *devenv.Env, o devOptions) ([]string, string, error) {
	if err := startCheckers(ctx, env, o); err != nil {
		return nil, "", err
	}
	dnsAddrs, err := startCoreDNS(ctx, env, o)
	if err != nil {
		return nil, "", err
	}
	edge, err := env.StartEdgeCoreDNS(ctx, o.coredns, devenv.KfedZone{
		Zone: o.domain, Federation: o.federation, Kubeconfig: env.Kubeconfig, Context: devenv.ControlPlaneName,
	})
	if err != nil {
		return nil, "", fmt.Errorf("starting the edge CoreDNS: %w", err)
	}
	return dnsAddrs, edge.Addr, nil
}

// findBinDir asks hack/test-binaries.sh, when run from a checkout, where
// the binaries are.
func findBinDir() (string, error) {
	script := filepath.Join("hack", "test-binaries.sh")
	if _, err := os.Stat(script); err != nil {
		return "", errors.New("no --bin-dir or $KFED_BIN, and not in a kfed checkout: run `make dev` from the checkout, or pass --bin-dir")
	}
	outp, err := exec.Command(script, "--print").Output()
	if err != nil {
		return "", errors.New("test binaries are not built yet: run hack/test-binaries.sh (make dev does it)")
	}
	return strings.TrimSpace(string(outp)), nil
}

func joinMembers(ctx context.Context, env *devenv.Env, fed client.Client, federation string) error {
	raw, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		return err
	}
	for _, m := range env.Members {
		_, err := clusters.Join(ctx, fed, clusters.JoinOptions{
			Name: m.Name, Region: m.Region, Zones: m.Zones, Kubeconfig: raw, Context: m.Name, ClusterSet: federation,
		})
		if err != nil {
			return fmt.Errorf("joining %s: %w", m.Name, err)
		}
	}
	return nil
}

func waitClustersReady(ctx context.Context, fed client.Client, n int, errc <-chan error) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := failed(errc); err != nil {
			return false, err
		}
		var list kfedv1alpha1.ClusterList
		if err := fed.List(ctx, &list); err != nil {
			return false, nil // the control plane is still coming up
		}
		ready := 0
		for _, c := range list.Items {
			if meta.IsStatusConditionTrue(c.Status.Conditions, kfedv1alpha1.ClusterReady) {
				ready++
			}
		}
		return ready == n, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("waiting for %d clusters to be Ready: %w", n, err)
	}
	return err
}

// createDemo creates the sample federated Service default/demo, routed by
// proximity so that the edge CoreDNS shows it.
func createDemo(ctx context.Context, fed client.Client) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default",
			Annotations: map[string]string{serviceconfig.AnnotationRouting: string(serviceconfig.RoutingProximity)}},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: new("kfed.io/global"),
			Selector:          map[string]string{"app": "demo"},
			Ports:             []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if err := fed.Create(ctx, svc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the demo Service: %w", err)
	}
	return nil
}

// createDemoGateway creates the sample federated Gateway default/demo-gw of
// the loopback class, with an HTTPRoute for shop.<domain> to the demo
// Service (../shared/DESIGN.md, "Gateways and Ingresses").
func createDemoGateway(ctx context.Context, fed client.Client, domain string) error {
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-gw", Namespace: "default", Annotations: map[string]string{"kfed.io/federated": "true"}},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: loopbackgw.ClassName,
			Listeners:        []gatewayv1.Listener{{Name: "http", Port: 8080, Protocol: gatewayv1.HTTPProtocolType}},
		},
	}
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "demo-gw"}}},
			Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname("shop." + domain)},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "demo", Port: new(gatewayv1.PortNumber(8080))},
			}}}}},
		},
	}
	for _, o := range []client.Object{gw, route} {
		if err := fed.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the demo Gateway: %w", err)
		}
	}
	return nil
}

// startCoreDNS runs, for each member, a CoreDNS with the kfed plugin that
// stands for that member (its endpoints answered first), and returns their
// addresses in member order.
func startCoreDNS(ctx context.Context, env *devenv.Env, o devOptions) ([]string, error) {
	var addrs []string
	for _, m := range env.Members {
		d, err := env.StartCoreDNS(ctx, devenv.CoreDNSOptions{
			Binary: o.coredns, Name: "coredns-" + m.Name, Cluster: m.Name, Zone: o.domain,
			Corefile: devenv.KfedCorefile(devenv.KfedZone{
				Zone: o.domain, Federation: o.federation, Cluster: m.Name,
				Kubeconfig: env.Kubeconfig, Context: devenv.ControlPlaneName,
			}),
		})
		if err != nil {
			return nil, fmt.Errorf("starting CoreDNS for %s: %w", m.Name, err)
		}
		addrs = append(addrs, d.Addr)
	}
	return addrs, nil
}

// waitResolves waits until the DNS server at addr answers name with n
// addresses or more: the whole chain from Service to DNS works, in every
// member.
func waitResolves(ctx context.Context, addr, name string, n int, errc <-chan error) error {
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), dns.TypeA)
	c := &dns.Client{Timeout: time.Second}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := failed(errc); err != nil {
			return false, err
		}
		r, _, err := c.ExchangeContext(ctx, q, addr)
		return err == nil && len(r.Answer) >= n, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("waiting for %s to resolve at %s: %w", name, addr, err)
	}
	return err
}

// failed returns the error a component running in the background reported
// on errc, or nil if none did.
func failed(errc <-chan error) error {
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// starter is what runController runs: a controller-runtime manager.
type starter interface {
	Start(ctx context.Context) error
}

// runController runs kfed's controller manager until ctx ends. A manager
// that stops on its own — it lost its leader lease, as it does when the
// control plane is frozen or unreachable for longer than the lease, say on a
// laptop that slept — is replaced after retry by a new one, which stands by
// until it leads again, instead of ending the environment and every member's
// CoreDNS with it. (kfed-controller itself exits then, for its supervisor to
// restart it.) Only a manager that cannot be built is an error.
func runController(ctx context.Context, newManager func() (starter, error), log logr.Logger, retry time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var buildErr error
	// UntilWithContext waits retry from the end of each manager's life.
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		m, err := newManager()
		if err != nil {
			buildErr = err
			cancel()
			return
		}
		if err := m.Start(ctx); ctx.Err() == nil {
			log.Error(err, "the controller stopped; a new one stands by until it leads", "after", retry)
		}
	}, retry)
	return buildErr
}

// startCheckers runs a kfed-healthcheck agent in each member, probing
// through the loopback load balancers every 2 s (fall 2, rise 2), so that
// turning a load balancer off shows in DNS within seconds.
func startCheckers(ctx context.Context, env *devenv.Env, o devOptions) error {
	for _, m := range env.Members {
		_, err := env.StartChecker(ctx, devenv.CheckerOptions{
			Binary: o.checker, Name: "healthcheck-" + m.Name, Cluster: m.Name, Federation: o.federation,
			Kubeconfig: env.Kubeconfig, Context: devenv.ControlPlaneName,
			Args: []string{"--interval=2s", "--timeout=1s", "--fall=2", "--rise=2", "--heartbeat=2s"},
		})
		if err != nil {
			return fmt.Errorf("starting the health checker of %s: %w", m.Name, err)
		}
	}
	return nil
}

// besideExecutable finds name in the folder of the running binary.
func besideExecutable(name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(self), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no %s beside %s: build it (go build -o bin/ ./cmd/kfed ./cmd/coredns ./cmd/kfed-healthcheck, as make dev does) or pass --%s", name, self, name)
	}
	return p, nil
}

// writeEnvFile writes DIR/env, NAME=value lines a shell can source.
func writeEnvFile(dir string, env *devenv.Env, o devOptions, dnsAddrs []string, edge string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "KUBECONFIG=%s\n", env.Kubeconfig)
	fmt.Fprintf(&b, "KFED_BIN=%s\n", o.binDir)
	fmt.Fprintf(&b, "KFED_FEDERATION=%s\n", o.federation)
	fmt.Fprintf(&b, "KFED_DOMAIN=%s\n", o.domain)
	for i, a := range dnsAddrs {
		fmt.Fprintf(&b, "KFED_DNS_CLUSTER_%d=%s\n", i+1, a)
	}
	fmt.Fprintf(&b, "KFED_DNS_EDGE=%s\n", edge)
	return os.WriteFile(filepath.Join(dir, "env"), []byte(b.String()), 0o644)
}

func printNextSteps(out io.Writer, dir string, env *devenv.Env, o devOptions, dnsAddrs []string, demo, shop string) {
	rel := func(p string) string {
		if wd, err := os.Getwd(); err == nil {
			if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
				return r
			}
		}
		return p
	}
	names := []string{env.ControlPlane.Name}
	for _, m := range env.Members {
		names = append(names, fmt.Sprintf("%s (%s/%s)", m.Name, m.Region, strings.Join(m.Zones, ",")))
	}
	fmt.Fprintf(out, `kfed dev: federation %q, DNS suffix %q
  kubeconfig %s, contexts: %s
  logs in %s

Try:
  set -a; . %s; set +a; export PATH="$KFED_BIN:$PATH"
  kubectl get clusters                       # the members and their Ready condition
  kubectl --context cluster-1 get nodes      # KWOK's simulated nodes
  kubectl get service demo                   # the sample federated Service
  kubectl get gateway demo-gw                # the sample federated Gateway, with an HTTPRoute for shop.DOMAIN
`, o.federation, o.domain, rel(env.Kubeconfig), strings.Join(names, ", "), rel(filepath.Join(dir, "logs")), rel(filepath.Join(dir, "env")))
	host, port, _ := net.SplitHostPort(dnsAddrs[0])
	fmt.Fprintf(out, "  dig @%s -p %s %s   # cluster-1's CoreDNS: its own endpoint first\n", host, port, demo)
	fmt.Fprintf(out, "  dig @%s -p %s %s   # the federated Gateway demo-gw's HTTPRoute: a Gateway in each member\n", host, port, shop)
	for i, a := range dnsAddrs {
		fmt.Fprintf(out, "  (CoreDNS of %s: %s, $KFED_DNS_CLUSTER_%d)\n", env.Members[i].Name, a, i+1)
	}
}

// printEdge shows how to ask the edge CoreDNS as a client in each of the
// places its GeoIP database knows.
func printEdge(out io.Writer, edge, demo string) {
	host, port, _ := net.SplitHostPort(edge)
	fmt.Fprintf(out, "  (edge CoreDNS, for clients outside the clusters: %s, $KFED_DNS_EDGE; it orders by the client's place)\n", edge)
	for _, p := range devenv.DevPlaces() {
		fmt.Fprintf(out, "  dig @%s -p %s %s +subnet=%s   # a client in %s\n", host, port, demo, p.Network, p.City)
	}
}
