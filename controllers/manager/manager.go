// Package manager assembles kfed's controllers into one leader-elected
// controller-runtime manager running against the federation control plane.
// cmd/kfed-controller runs it as a process; kfed dev up runs it in-process.
package manager

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedscheme "github.com/kfed-io/kfed/api/scheme"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/controllers/balancer"
	"github.com/kfed-io/kfed/controllers/deployments"
	"github.com/kfed-io/kfed/controllers/gateways"
	"github.com/kfed-io/kfed/controllers/inventory"
	"github.com/kfed-io/kfed/controllers/mcs"
	"github.com/kfed-io/kfed/controllers/services"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/policy/tenancy"
	"github.com/kfed-io/kfed/policy/tenancy/report"
)

// The controller's own namespace holds its leader election Lease and the
// members' kubeconfig Secrets.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=kfed-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=kfed-system,resources=events,verbs=create;patch

// Options configure the manager.
type Options struct {
	// LeaderElection makes only one replica act at a time, holding a Lease
	// named kfed-controller in Namespace.
	LeaderElection bool
	// Namespace is kfed's own: the Lease, and the members' kubeconfig
	// Secrets (the only Secrets kfed reads and caches). kfed-system when empty.
	Namespace string
	// MetricsAddr serves Prometheus metrics at /metrics ("0" disables).
	MetricsAddr string
	// HealthAddr serves /healthz and /readyz ("0" disables).
	HealthAddr string
	// PprofAddr serves Go's profiles at /debug/pprof/ (heap, CPU,
	// goroutines); empty or "0" disables. Off by default: profiles show
	// the process's internals and nothing guards the endpoint.
	PprofAddr string
	// ClusterProbeInterval is how often each member is probed.
	ClusterProbeInterval time.Duration
	// SharedProcess allows more than one manager in the process (tests):
	// controller names then need not be unique across managers.
	SharedProcess bool
	// WrapTransport, if set, wraps the transport of every client the
	// controllers use, control plane and members (benchmarks count requests).
	WrapTransport transport.WrapperFunc
	// DNS, if its Provider is set, publishes the DNSEndpoints to that provider.
	DNS dnssync.ProviderFlags
	// DNSInterval is the time between DNS syncs when nothing changes.
	DNSInterval time.Duration
	// HealthFreshness is how long a checker's heartbeat counts in a quorum;
	// publish.DefaultFreshness when zero.
	HealthFreshness time.Duration
	// Resolver looks up the load balancers' hostnames members give (a
	// Service's ingress, a Gateway's or Ingress's address),
	// net.DefaultResolver when nil, again every HostnameResync (a minute
	// when zero).
	Resolver       publish.Resolver
	HostnameResync time.Duration
	// UnschedulableThreshold is how long a pod of a federated Deployment may
	// stay unschedulable before its cluster counts as full;
	// deployments.DefaultUnschedulableThreshold when zero.
	UnschedulableThreshold time.Duration
	// MemberGracePeriod is how long a member that cannot be reached keeps
	// the replicas of federated Deployments before they are planned
	// elsewhere; deployments.DefaultGracePeriod when zero.
	MemberGracePeriod time.Duration
	// Federation and Domain name the DNS names S.N.F.svc.D.
	Federation string
	Domain     string
	// TrustedNamespaces may publish names that are no namespace's federated
	// names (tenancy.Endpoints); Namespace alone when empty.
	TrustedNamespaces []string
	// HostnameReservations reserve DNS suffixes of Gateway and Ingress
	// hostnames for some namespaces (tenancy.Hostnames).
	HostnameReservations []tenancy.Reservation
	// Inventory says where members come from besides kfed join.
	Inventory InventoryOptions
	Logger    logr.Logger
}

// cacheOptions are the control plane cache's. Secrets are cached (and
// readable) only in kfed's namespace; of Leases, only checkers'
// heartbeats, which are in their members' namespaces (ADR 0013), as their
// HealthReports are.
// No object keeps its managedFields: kfed never reads them, they grow with
// every writer of the object, and an update without them keeps the
// server's.
func cacheOptions(namespace string) cache.Options {
	// A control plane that is also an ordinary cluster holds a Lease a
	// node, which kfed never reads. The key is valid: no error.
	checker, _ := labels.NewRequirement(kfedv1alpha1.LabelChecker, selection.Exists, nil)
	checkerHeartbeats := labels.NewSelector().Add(*checker)
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}:        {Namespaces: map[string]cache.Config{namespace: {}}},
			&coordinationv1.Lease{}: {Label: checkerHeartbeats},
		},
	}
}

// New builds the manager with every kfed controller registered; Start it to run.
func New(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	// Checked first, so that bad options leave no half-built manager.
	if o.Federation == "" || o.Domain == "" {
		return nil, fmt.Errorf("a federation name and a DNS domain are required")
	}
	if err := o.Inventory.check(); err != nil {
		return nil, err
	}
	if o.Namespace == "" {
		o.Namespace = kfedv1alpha1.DefaultNamespace
	}
	if len(o.TrustedNamespaces) == 0 {
		o.TrustedNamespaces = []string{o.Namespace}
	}
	mgr, err := newManager(cfg, o)
	if err != nil {
		return nil, err
	}
	members, err := addClusters(mgr, o)
	if err != nil {
		return nil, err
	}
	for _, add := range []func(ctrl.Manager, Options, *registry.Registry) error{addServices, addReplicas, addGateways, addMCS, addDNS, addInventory} {
		if err := add(mgr, o, members); err != nil {
			return nil, err
		}
	}
	if o.LeaderElection {
		if err := mgr.Add(newVersionWriter(mgr.GetClient(), o.Logger.WithName("version"), o.Namespace)); err != nil {
			return nil, fmt.Errorf("adding the version writer: %w", err)
		}
	}
	return mgr, nil
}

// newManager is the controller-runtime manager kfed's controllers run in,
// with its health checks.
func newManager(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	scheme, err := kfedscheme.New()
	if err != nil {
		return nil, err
	}
	if o.WrapTransport != nil {
		cfg = rest.CopyConfig(cfg)
		cfg.Wrap(o.WrapTransport)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  o.Logger,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        leaseName,
		LeaderElectionNamespace: o.Namespace,
		Cache:                   cacheOptions(o.Namespace),
		// Release the Lease on a clean stop so a standby takes over at once.
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.HealthAddr,
		PprofBindAddress:              o.PprofAddr,
		Controller:                    config.Controller{SkipNameValidation: &o.SharedProcess},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// addClusters registers the Cluster controller, its metrics and the
// registry of member clients the other controllers share.
func addClusters(mgr ctrl.Manager, o Options) (*registry.Registry, error) {
	cc := &clusters.Controller{
		Client:   mgr.GetClient(),
		Recorder: recorder(mgr, "kfed-cluster-controller"),
		Interval: o.ClusterProbeInterval,
		Access:   o.Inventory.Access,
	}
	if err := cc.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the cluster controller: %w", err)
	}
	if err := clusters.RegisterMetrics(ctrlmetrics.Registry, mgr.GetClient()); err != nil {
		return nil, fmt.Errorf("registering cluster metrics: %w", err)
	}
	members := &registry.Registry{
		Fed: mgr.GetClient(), Scheme: mgr.GetScheme(), Logger: o.Logger.WithName("members"), WrapTransport: o.WrapTransport,
		Access: o.Inventory.Access,
	}
	if err := members.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the member registry: %w", err)
	}
	mc := &copies.MemberCleanup{
		Fed: mgr.GetClient(), Recorder: recorder(mgr, "kfed-member-cleanup"), Federation: o.Federation,
		Members: members, Access: o.Inventory.Access,
	}
	if err := mc.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up member cleanup: %w", err)
	}
	return members, nil
}

// addServices registers the federated Service controller and its metrics.
func addServices(mgr ctrl.Manager, o Options, members *registry.Registry) error {
	metrics, err := services.NewMetrics(ctrlmetrics.Registry, mgr.GetClient(), func() int { return len(members.Ready()) }, o.HealthFreshness)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	sc := &services.Controller{
		Metrics:    metrics,
		Fed:        mgr.GetClient(),
		Live:       mgr.GetAPIReader(),
		Members:    members,
		Recorder:   recorder(mgr, "kfed-service-controller"),
		Federation: o.Federation,
		Domain:     o.Domain,
		Namespace:  o.Namespace,
		Freshness:  o.HealthFreshness,
		Resolver:   o.Resolver,
		Resync:     o.HostnameResync,
	}
	if err := sc.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the service controller: %w", err)
	}
	return nil
}

// addGateways registers the federated Gateway and Ingress controller, for
// each kind that kfed can list and watch in the control plane when it
// starts: an informer for a kind it cannot watch (not served, or RBAC from
// an older chart) would never sync and would hold up every controller.
func addGateways(mgr ctrl.Manager, o Options, members *registry.Registry) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	watchable := func(obj client.Object, what string) bool {
		why := registry.CannotWatch(ctx, mgr, obj)
		if why != "" {
			o.Logger.Info("not federating "+what, "reason", why)
		}
		return why == ""
	}
	ingresses := watchable(&networkingv1.Ingress{}, "Ingresses")
	gws := watchable(&gatewayv1.Gateway{}, "Gateways")
	gc := &gateways.Controller{
		Fed: mgr.GetClient(), Live: mgr.GetAPIReader(), Members: members, Recorder: recorder(mgr, "kfed-gateway-controller"),
		Federation: o.Federation, Namespace: o.Namespace,
		Rule:      tenancy.NewHostnames([]string{o.Domain}, o.HostnameReservations),
		Tenancy:   tenancy.NewEndpoints(o.Federation, o.TrustedNamespaces),
		Ingresses: ingresses, Gateways: gws, Freshness: o.HealthFreshness,
		Resolver: o.Resolver, Resync: o.HostnameResync,
	}
	if err := gc.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the gateway controller: %w", err)
	}
	return nil
}

// addMCS registers the Multi-Cluster Services controller: ServiceExports
// in members become ServiceImports in every member, and the exports of
// LoadBalancer Services the federation's names.
func addMCS(mgr ctrl.Manager, o Options, members *registry.Registry) error {
	mc := &mcs.Controller{
		Members: members, Federation: o.Federation, Logger: o.Logger.WithName("mcs"),
		// The exports of LoadBalancer Services get the federation's names.
		Fed: mgr.GetClient(), Live: mgr.GetAPIReader(), Domain: o.Domain, Namespace: o.Namespace,
		Freshness: o.HealthFreshness, Resolver: o.Resolver,
		Tenancy: tenancy.NewEndpoints(o.Federation, o.TrustedNamespaces),
	}
	if err := mc.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the MCS controller: %w", err)
	}
	return nil
}

// addReplicas registers the Balancer and federated Deployment controllers.
func addReplicas(mgr ctrl.Manager, o Options, members *registry.Registry) error {
	bm, err := balancer.NewMetrics(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("registering Balancer metrics: %w", err)
	}
	bc := &balancer.Reconciler{Fed: mgr.GetClient(), Members: members, Metrics: bm}
	if err := bc.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Balancer controller: %w", err)
	}
	dm, err := deployments.NewMetrics(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("registering federated Deployment metrics: %w", err)
	}
	dc := &deployments.Controller{
		Fed: mgr.GetClient(), Members: members, Recorder: recorder(mgr, "kfed-deployment-controller"),
		Federation: o.Federation, Metrics: dm, UnschedulableThreshold: o.UnschedulableThreshold,
		GracePeriod: o.MemberGracePeriod,
	}
	if err := dc.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the federated Deployment controller: %w", err)
	}
	return nil
}

// addInventory registers the inventory's controllers: the Importer with an
// inventory; the Exporter and the PlacementDecision writers whenever the
// Cluster Inventory API is served (an informer for a kind that is not
// would never sync and hold up every controller).
func addInventory(mgr ctrl.Manager, o Options, _ *registry.Registry) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	profiles := registry.CannotWatch(ctx, mgr, &inventoryv1alpha1.ClusterProfile{})
	decisions := registry.CannotWatch(ctx, mgr, &inventoryv1alpha1.PlacementDecision{})
	if o.Inventory.Inventory != "" {
		if profiles != "" {
			return fmt.Errorf("--inventory %s: cannot watch ClusterProfiles: %s", o.Inventory.Inventory, profiles)
		}
		im := &inventory.Importer{
			Fed: mgr.GetClient(), Recorder: recorder(mgr, "kfed-inventory"),
			Namespace: o.Inventory.InventoryNamespace, Selector: o.Inventory.InventorySelector,
		}
		if err := im.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the inventory importer: %w", err)
		}
	}
	ns := o.Inventory.ProfileNamespace
	if ns == "" {
		ns = o.Namespace
	}
	if profiles != "" {
		o.Logger.Info("not writing ClusterProfiles", "reason", profiles)
	} else if err := (&inventory.Exporter{Fed: mgr.GetClient(), Namespace: ns}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the inventory exporter: %w", err)
	}
	if decisions != "" {
		o.Logger.Info("not writing PlacementDecisions", "reason", decisions)
		return nil
	}
	// Gateways and Ingresses as addGateways federates them: where kfed can
	// watch them.
	gws := registry.CannotWatch(ctx, mgr, &gatewayv1.Gateway{}) == ""
	ingresses := registry.CannotWatch(ctx, mgr, &networkingv1.Ingress{}) == ""
	for _, d := range inventory.NewDecisions(mgr.GetClient(), recorder(mgr, "kfed-placement"), ns, gws, ingresses) {
		if err := d.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the %s PlacementDecisions: %w", d.Kind, err)
		}
	}
	return nil
}

// addDNS registers what reads the DNSEndpoints: the tenancy reporter and,
// with a provider, the DNS sync.
func addDNS(mgr ctrl.Manager, o Options, _ *registry.Registry) error {
	rule := tenancy.NewEndpoints(o.Federation, o.TrustedNamespaces)
	tr := &report.Reporter{
		Client: mgr.GetClient(), Recorder: recorder(mgr, "kfed-tenancy"), Federation: o.Federation, Rule: rule,
	}
	if err := tr.SetupWithManager(mgr, ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("setting up the tenancy reporter: %w", err)
	}
	if o.DNS.Provider == "" {
		return nil
	}
	prov, planner, err := o.DNS.New(context.Background())
	if err != nil {
		return fmt.Errorf("DNS provider: %w", err)
	}
	dm, err := dnssync.NewMetrics(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("registering DNS metrics: %w", err)
	}
	return mgr.Add(&dnssync.Controller{
		Syncer: &dnssync.Syncer{Provider: prov, Planner: planner},
		Fed:    mgr.GetClient(), APIReader: mgr.GetAPIReader(), Cache: mgr.GetCache(), Recorder: recorder(mgr, "kfed-dns-sync"),
		Federation: o.Federation, Tenancy: rule, Logger: o.Logger.WithName("dns-sync"), Interval: o.DNSInterval, Metrics: dm,
	})
}
