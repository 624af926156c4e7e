package devenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	kfedscheme "github.com/kfed-io/kfed/api/scheme"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/clusters/access"
	"github.com/kfed-io/kfed/clusters/identity"
	"github.com/kfed-io/kfed/config/serviceconfig"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/deploy/crds"
	"github.com/kfed-io/kfed/devenv/loopbackgw"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
)

// DevOptions say what `kfed dev up` starts.
type DevOptions struct {
	// Dir holds the kubeconfig, the env file, data and logs. Required.
	Dir string
	// BinDir holds kube-apiserver, etcd, kubectl and the workload binaries.
	BinDir string
	// Members is how many member clusters to start (Members(n) names and
	// places them).
	Members int
	// Federation and Domain are the F and D of S.N.F.svc.D.
	Federation string
	Domain     string
	// Workloads runs schedulers, controller managers and KWOK nodes
	// (never with LightMembers).
	Workloads bool
	// LightMembers starts each member with only what federated Services and
	// their DNS need: its API server on the shared etcd, its Cluster, its
	// loopback load balancer and its CoreDNS. It drops the workloads, the
	// loopback Gateway (and so the demo Gateway) and every checker beyond
	// the first LightCheckers members'; health is still judged, by those.
	LightMembers bool
	// NoGateways starts the members without the Gateway API, as light
	// members are: no CRDs there, no loopback Gateway, no demo Gateway
	// (the control plane still serves the kind). For beds whose users
	// federate no Gateway: its five CRDs are an API server's dearest.
	NoGateways bool
	// Inventory "" joins the members as kfed join does;
	// kfedv1alpha1.InventoryClusterProfile lists them as ClusterProfiles
	// instead (inventory.go), which kfed's controller federates to.
	Inventory string
	// CredentialPlugin is the command and arguments of the exec plugin
	// that hands out a member's token with an Inventory (`kfed dev
	// credential`); the dev bed adds --kubeconfig, --context and
	// --namespace.
	CredentialPlugin []string
	// LBBase places member i's load balancer at 127.(LBBase+i).0.0/16.
	LBBase int
	// CoreDNS and Checker are the binaries of CoreDNS with the kfed plugin
	// and of kfed-healthcheck.
	CoreDNS string
	Checker string
	// Log is where the in-process components (controller, load balancers,
	// Gateways) log.
	Log logr.Logger
	// CheckerProbes are the checkers' probe flags; empty is DevProbes().
	// A fleet of thousands of endpoints is measured at the product's
	// defaults instead: every 2 s, three checkers owe a thousand Services
	// in ten members 5,000 probes a second each.
	CheckerProbes []string
	// RealNodes, if set, gives each member a real node (StartRealNode)
	// once the demo Service resolves.
	RealNodes *RealNodeOptions
	// LoadBalancerBinary, if set, runs the members' loopback load
	// balancers in child processes of that binary, LoadBalancersPerProcess
	// members each (10 when zero), not in this process: every listener is
	// an open file, a process here may hold 20,000, and thirty members of
	// 1,000 Services hold 30,000. The binary must call
	// loopbacklb.ServeFromEnv first thing (a test binary, in TestMain).
	LoadBalancerBinary      string
	LoadBalancersPerProcess int
}

// Dev is a running `kfed dev up` environment: the servers, kfed's
// controller, the members' loopback implementations, a checker and a
// CoreDNS per member and the edge CoreDNS.
type Dev struct {
	*Env
	// Federation and Domain are the F and D of S.N.F.svc.D.
	Federation, Domain string
	// DNS are the members' CoreDNS addresses, in member order.
	DNS []string
	// CoreDNS and Checkers are the members' CoreDNS servers and health
	// checkers, in member order, for tests that stop one.
	CoreDNS  []*CoreDNS
	Checkers []*Checker
	// Edge is the edge CoreDNS's address.
	Edge string
	// Demo and Shop are the sample names: the federated Service
	// default/demo's global name and the demo Gateway's HTTPRoute host.
	Demo, Shop string
	// Nodes are the members' real nodes, in member order, with
	// DevOptions.RealNodes.
	Nodes []*RealNode

	opts   DevOptions
	bg     *background
	access *access.Config // the access provider file, with an Inventory
}

// gateways says whether the members run the Gateway API and the bed has
// the demo Gateway.
func (o DevOptions) gateways() bool { return !o.LightMembers && !o.NoGateways }

// LightCheckers is how many members run a health checker with
// LightMembers: the first three, placed as DefaultMembers, cover both
// regions, and a panel holds every checker while there are at most
// healthcheck.DefaultCheckersPerEndpoint (15) of them, so each endpoint is
// judged by a quorum of three as in the three-member bed.
const LightCheckers = 3

// StartDev starts the environment step by step and returns once the demo
// Service's and the demo Gateway's names resolve with every member's
// address through the first member's CoreDNS (with LightMembers or NoGateways, the
// Service's alone: there is no Gateway), and DIR/env is written. On
// error it stops whatever it had started; otherwise the caller calls Stop.
func StartDev(ctx context.Context, o DevOptions) (_ *Dev, err error) {
	env, err := Start(ctx, Options{
		Dir: o.Dir, BinDir: o.BinDir, Members: Members(o.Members), Workloads: o.Workloads && !o.LightMembers,
		// Members get the Balancer and the Multi-Cluster Services CRDs
		// before they join (so kfed watches those kinds there) and before
		// their controller managers start.
		MemberCRDs: crds.Member(),
		// Light members make a fleet, whose CoreDNS all watch every
		// DNSEndpoint.
		ControlPlaneWatchCache: o.LightMembers,
		SeedDir:                DefaultSeedDir(),
	})
	if err != nil {
		return nil, fmt.Errorf("starting the local federation: %w", err)
	}
	// The in-process components run until Stop; they stop before the API
	// servers go away.
	d := &Dev{Env: env, Federation: o.Federation, Domain: o.Domain, opts: o, bg: newBackground(context.WithoutCancel(ctx))}
	defer func() {
		if err != nil {
			d.Stop()
		}
	}()
	if err := installDevCRDs(ctx, env, o.Dir, o.gateways()); err != nil {
		return nil, err
	}
	if err := d.federate(ctx); err != nil {
		return nil, err
	}
	if err := d.startDNS(ctx); err != nil {
		return nil, err
	}
	d.Demo = "demo.default." + o.Federation + ".svc." + o.Domain
	names := []string{d.Demo}
	if o.gateways() {
		d.Shop = "shop." + o.Domain
		names = append(names, d.Shop)
	}
	for _, name := range names {
		// Ready means every member's endpoint is published, not the first one.
		if err := waitResolves(ctx, d.DNS[0], name, len(env.Members), d.bg.errc); err != nil {
			return nil, fmt.Errorf("%w; %s", err, d.demoState())
		}
	}
	if o.RealNodes != nil {
		if err := d.startRealNodes(ctx, *o.RealNodes); err != nil {
			return nil, err
		}
	}
	if err := d.writeEnvFile(); err != nil {
		return nil, err
	}
	return d, nil
}

// startRealNodes starts the members' real nodes side by side, each with
// its cluster DNS standing for its member as the member's CoreDNS does.
func (d *Dev) startRealNodes(ctx context.Context, o RealNodeOptions) error {
	d.Nodes = make([]*RealNode, len(d.Members))
	errs := make([]error, len(d.Members))
	var wg sync.WaitGroup
	for i, m := range d.Members {
		wg.Go(func() {
			d.Nodes[i], errs[i] = d.StartRealNode(ctx, m, i, o, KfedZone{
				Zone: d.opts.Domain, Federation: d.opts.Federation, Cluster: m.Name,
				Kubeconfig: d.Kubeconfig, Context: ControlPlaneName,
				Clusterset: &ClustersetZone{Kubeconfig: d.Kubeconfig, Context: m.Name},
			})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Wait runs until ctx ends (nil) or a component running in the background
// fails (its error).
func (d *Dev) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-d.bg.errc:
		return err
	}
}

// Stop ends the in-process components, then every process.
func (d *Dev) Stop() {
	d.bg.stop()
	d.Env.Stop()
}

// installDevCRDs installs kfed's CRDs in the control plane, and the Gateway
// API's there and, with inMembers, in every member, before kfed starts: it
// federates Gateways only if the control plane serves them then. Light
// members run no Gateway implementation, so they go without the CRDs.
func installDevCRDs(ctx context.Context, env *Env, dir string, inMembers bool) error {
	if err := env.InstallCRDs(ctx, env.ControlPlane, crds.FS); err != nil {
		return err
	}
	gatewayCRDs, err := GatewayAPICRDs(filepath.Join(dir, "gateway-api"))
	if err != nil {
		return err
	}
	where := []*Cluster{env.ControlPlane}
	if inMembers {
		where = append(where, env.Members...)
	}
	if err := env.InstallCRDsIn(ctx, gatewayCRDs, where...); err != nil {
		return fmt.Errorf("Gateway API CRDs: %w", err)
	}
	return nil
}

// federate runs the members' loopback implementations and kfed's controller
// in the background, joins the members, waits until they are Ready and
// creates the demo Service and, unless members are light, Gateway.
func (d *Dev) federate(ctx context.Context) error {
	scheme, err := kfedscheme.New()
	if err != nil {
		return err
	}
	fed, err := client.New(d.ControlPlane.Config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	if err := d.runLoopbacks(); err != nil {
		return err
	}
	switch d.opts.Inventory {
	case "":
		err = joinMembers(ctx, d.Env, fed, d.Federation)
	case kfedv1alpha1.InventoryClusterProfile:
		if len(d.opts.CredentialPlugin) == 0 {
			return errors.New("an inventory of ClusterProfiles needs DevOptions.CredentialPlugin")
		}
		if d.access, err = writeProviderFile(d.Dir, d.Kubeconfig, d.opts.CredentialPlugin); err == nil {
			err = listProfiles(ctx, fed, d.Members)
		}
	default:
		err = fmt.Errorf("unknown inventory %q (want %q)", d.opts.Inventory, kfedv1alpha1.InventoryClusterProfile)
	}
	if err != nil {
		return err
	}
	log := d.opts.Log.WithName("kfed-controller")
	d.bg.run("kfed controller", func(ctx context.Context) error {
		return runController(ctx, d.newManager, log, 2*time.Second)
	})
	if err := waitClustersReady(ctx, fed, len(d.Members), d.bg.errc); err != nil {
		return err
	}
	if err := createDemo(ctx, fed); err != nil {
		return err
	}
	if !d.opts.gateways() {
		return nil
	}
	return createDemoGateway(ctx, fed, d.opts.Domain)
}

// runLoopbacks runs each member's loopback load balancer and, unless
// members are light or go without Gateways, Gateway implementation, the member's Gateway addresses
// beside its load balancer's.
func (d *Dev) runLoopbacks() error {
	if d.opts.LoadBalancerBinary != "" {
		if err := d.startLoadBalancers(); err != nil {
			return err
		}
	}
	for i, m := range d.Members {
		lb := loopbacklb.Block(d.opts.LBBase, i)
		if d.opts.LoadBalancerBinary == "" {
			d.bg.run("load balancer of "+m.Name, func(ctx context.Context) error {
				return loopbacklb.Run(ctx, loopbacklb.Options{
					Cluster: m.Name, Block: lb, Config: m.Config,
					Logger: d.opts.Log.WithName("loopbacklb").WithValues("cluster", m.Name),
				})
			})
		}
		if !d.opts.gateways() {
			continue
		}
		d.bg.run("gateways of "+m.Name, func(ctx context.Context) error {
			return loopbackgw.Run(ctx, loopbackgw.Options{
				Cluster: m.Name, Block: loopbackgw.BlockBeside(lb), Config: m.Config,
				Logger: d.opts.Log.WithName("loopbackgw").WithValues("cluster", m.Name),
			})
		})
	}
	return nil
}

// startLoadBalancers starts the child processes of LoadBalancerBinary that
// serve the members' load balancers, LoadBalancersPerProcess members each.
// They stop with the environment.
func (d *Dev) startLoadBalancers() error {
	per := cmp.Or(d.opts.LoadBalancersPerProcess, 10)
	for first := 0; first < len(d.Members); first += per {
		var serve []loopbacklb.Member
		for i := first; i < min(first+per, len(d.Members)); i++ {
			m := d.Members[i]
			serve = append(serve, loopbacklb.Member{Cluster: m.Name, Kubeconfig: d.Kubeconfig, Context: m.Name, Block: loopbacklb.Block(d.opts.LBBase, i)})
		}
		p := newChild(fmt.Sprintf("loopbacklb-%d", first/per+1), d.opts.LoadBalancerBinary, d.logDir)
		p.env = []string{loopbacklb.ServeEnv(serve)}
		if err := d.adopt(d.ControlPlane, p); err != nil {
			return fmt.Errorf("starting load balancers: %w", err)
		}
	}
	return nil
}

// newManager builds kfed's controller manager for the environment: leader
// elected, so that a replacement stands by until it leads.
func (d *Dev) newManager() (starter, error) {
	return manager.New(d.ControlPlane.Config, manager.Options{
		LeaderElection: true, MetricsAddr: "127.0.0.1:0", HealthAddr: "0",
		ClusterProbeInterval: 5 * time.Second, Logger: d.opts.Log.WithName("kfed-controller"),
		Federation: d.opts.Federation, Domain: d.opts.Domain,
		HealthFreshness: 8 * time.Second, // four of the checkers' 2 s heartbeats
		SharedProcess:   true,            // a replaced manager's controllers keep their names
		Inventory:       inventoryOptions(d.opts.Inventory, d.access),
	})
}

// startDNS starts a health checker and a CoreDNS with the plugin in each
// member, and the edge CoreDNS.
func (d *Dev) startDNS(ctx context.Context) error {
	if err := d.startCheckers(ctx); err != nil {
		return err
	}
	if err := d.startCoreDNS(ctx); err != nil {
		return err
	}
	edge, err := d.StartEdgeCoreDNS(ctx, d.opts.CoreDNS, KfedZone{
		Zone: d.opts.Domain, Federation: d.opts.Federation, Kubeconfig: d.Kubeconfig, Context: ControlPlaneName,
	})
	if err != nil {
		return fmt.Errorf("starting the edge CoreDNS: %w", err)
	}
	d.Edge = edge.Addr
	return nil
}

// DevProbes are the dev bed's checkers' probe flags: every 2 s, fall 2,
// rise 2, so that turning a load balancer off shows in DNS within
// seconds.
func DevProbes() []string { return []string{"--interval=2s", "--timeout=1s", "--fall=2", "--rise=2"} }

// startCheckers runs a kfed-healthcheck agent in each member (with
// LightMembers, in the first LightCheckers), probing through the loopback
// load balancers as DevOptions.CheckerProbes say, with a heartbeat every
// 2 s, a quarter of the controller's freshness.
func (d *Dev) startCheckers(ctx context.Context) error {
	members := d.Members
	if d.opts.LightMembers {
		members = members[:min(len(members), LightCheckers)]
	}
	probes := DevProbes()
	if len(d.opts.CheckerProbes) > 0 {
		probes = d.opts.CheckerProbes
	}
	for _, m := range members {
		// As the member it runs in, which may write its own report and
		// heartbeat alone (ADR 0013).
		kubeconfig, err := d.AgentKubeconfig(ctx, m.Name, identity.HealthCheck)
		if err != nil {
			return fmt.Errorf("an identity for the health checker of %s: %w", m.Name, err)
		}
		c, err := d.StartChecker(ctx, CheckerOptions{
			Binary: d.opts.Checker, Name: "healthcheck-" + m.Name, Cluster: m.Name, Federation: d.opts.Federation,
			Kubeconfig: kubeconfig, Context: ControlPlaneName,
			Args: append(slices.Clip(probes), "--heartbeat=2s"),
		})
		if err != nil {
			return fmt.Errorf("starting the health checker of %s: %w", m.Name, err)
		}
		d.Checkers = append(d.Checkers, c)
	}
	return nil
}

// startCoreDNS runs, for each member, a CoreDNS with the kfed plugin that
// stands for that member (its endpoints answered first) and the clusterset
// plugin that answers its clusterset.local.
func (d *Dev) startCoreDNS(ctx context.Context) error {
	for _, m := range d.Members {
		// As the member it runs in, which may read alone.
		kubeconfig, err := d.AgentKubeconfig(ctx, m.Name, identity.CoreDNS)
		if err != nil {
			return fmt.Errorf("an identity for the CoreDNS of %s: %w", m.Name, err)
		}
		c, err := d.StartCoreDNS(ctx, CoreDNSOptions{
			Binary: d.opts.CoreDNS, Name: "coredns-" + m.Name, Cluster: m.Name, Zone: d.opts.Domain,
			Corefile: KfedCorefile(KfedZone{
				Zone: d.opts.Domain, Federation: d.opts.Federation, Cluster: m.Name,
				Kubeconfig: kubeconfig, Context: ControlPlaneName,
				// and clusterset.local from the member's own ServiceImports
				Clusterset: &ClustersetZone{Kubeconfig: d.Kubeconfig, Context: m.Name},
			}),
		})
		if err != nil {
			return fmt.Errorf("starting CoreDNS for %s: %w", m.Name, err)
		}
		d.DNS, d.CoreDNS = append(d.DNS, c.Addr), append(d.CoreDNS, c)
	}
	return nil
}

// writeEnvFile writes DIR/env, NAME=value lines a shell can source (the
// contract in docs/design.md, "Local development and the test bed").
func (d *Dev) writeEnvFile() error {
	var b strings.Builder
	fmt.Fprintf(&b, "KUBECONFIG=%s\n", d.Kubeconfig)
	fmt.Fprintf(&b, "KFED_BIN=%s\n", d.opts.BinDir)
	fmt.Fprintf(&b, "KFED_FEDERATION=%s\n", d.opts.Federation)
	fmt.Fprintf(&b, "KFED_DOMAIN=%s\n", d.opts.Domain)
	for i, a := range d.DNS {
		fmt.Fprintf(&b, "KFED_DNS_CLUSTER_%d=%s\n", i+1, a)
	}
	fmt.Fprintf(&b, "KFED_DNS_EDGE=%s\n", d.Edge)
	// The edge's GeoIP database, which kfed explain --client-subnet reads.
	if db, err := filepath.Abs(filepath.Join(d.Dir, "geoip.mmdb")); err == nil {
		fmt.Fprintf(&b, "KFED_GEOIP=%s\n", db)
	}
	return os.WriteFile(filepath.Join(d.Dir, "env"), []byte(b.String()), 0o644)
}

func joinMembers(ctx context.Context, env *Env, fed client.Client, federation string) error {
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
			Annotations: map[string]string{kfedv1alpha1.AnnotationRouting: string(serviceconfig.RoutingProximity)}},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: new(kfedv1alpha1.LoadBalancerClassGlobal),
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
		ObjectMeta: metav1.ObjectMeta{Name: "demo-gw", Namespace: "default", Annotations: map[string]string{kfedv1alpha1.AnnotationFederated: "true"}},
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

// waitResolves waits until the DNS server at addr answers name with n
// addresses or more: the whole chain from Service to DNS works, in every
// member.
func waitResolves(ctx context.Context, addr, name string, n int, errc <-chan error) error {
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), dns.TypeA)
	// Thirty members' addresses overflow 512 bytes; a truncated answer
	// would never hold them all.
	q.SetEdns0(dns.DefaultMsgSize, false)
	c := &dns.Client{Timeout: time.Second}
	// What it saw last goes into the error: a bed that never gets ready
	// in CI says how far the chain got.
	last := "no answer"
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := failed(errc); err != nil {
			return false, err
		}
		r, _, err := c.ExchangeContext(ctx, q, addr)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%s with %d of %d addresses %v", dns.RcodeToString[r.Rcode], len(r.Answer), n, r.Answer)
		return len(r.Answer) >= n, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("waiting for %s to resolve at %s (last: %s): %w", name, addr, last, err)
	}
	return err
}

// demoState is what the control plane says of the demo Service: its
// conditions, as kfed's controller wrote them.
func (d *Dev) demoState() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fed, err := client.New(d.ControlPlane.Config, client.Options{})
	if err != nil {
		return err.Error()
	}
	var svc corev1.Service
	if err := fed.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo"}, &svc); err != nil {
		return fmt.Sprintf("the demo Service: %v", err)
	}
	return fmt.Sprintf("the demo Service's conditions: %s", cmp.Or(svc.Annotations[kfedv1alpha1.AnnotationConditions], "none"))
}

// background runs the environment's in-process components until stop, and
// passes the first one's failure on errc.
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
