// Package agent runs one health checker (cmd/kfed-healthcheck): it learns
// what to probe from the federation's DNSEndpoints (a watch, never a list per
// interval), probes with the healthcheck engine, and reports to the control
// plane in two parts, as kubelets heartbeat nodes: a Lease renewed every
// heartbeat interval, and a HealthReport written only when its content
// changes (debounced) and checked against the stored one on a slow resync.
// In steady state its only writes are heartbeats.
//
// It never removes anything but its own objects: a checker that cannot reach
// the control plane, or lacks a permission, logs and retries, and its
// heartbeat going stale takes it out of every quorum.
//
// A file per concern: agent.go the options and the run loop, targets.go what
// to probe, report.go the HealthReport, rtt.go the round-trip times it
// carries, heartbeat.go the Lease.
package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
)

// What a checker may do in the control plane, as its member's identity
// (ADR 0013, deploy/identities): read DNSEndpoints, Clusters and the other
// checkers' HealthReports (who shares the endpoints), and write
// HealthReports and Leases in its cluster's member namespace alone.

// DefaultHeartbeat is how often a checker renews its Lease: 0.1 writes a
// second, a quarter of the controller's default freshness window.
const DefaultHeartbeat = 10 * time.Second

// Options configure an agent.
type Options struct {
	// Config reaches the federation control plane.
	Config *rest.Config
	// Checker is the agent's identity: its HealthReport and Lease are named
	// after it, in the member namespace of Cluster, the member it runs in
	// (kfedv1alpha1.MemberNamespace). Federation is the one it checks for.
	Checker, Cluster, Federation string
	// Namespace is kfed's in the control plane, trusted by default;
	// kfed-system when empty.
	Namespace string
	// TrustedNamespaces may publish names that are no namespace's federated
	// names (tenancy.Endpoints); Namespace alone when empty.
	TrustedNamespaces []string
	// Defaults are the probe settings a Service does not set itself.
	Defaults healthcheck.Spec
	// CheckersPerEndpoint is how many of the federation's checkers probe
	// each endpoint, K (ADR 0012): with more checkers than K, this one
	// probes only the endpoints whose panel the assignment seats it on.
	// Zero: every endpoint, whatever the fleet (cmd/kfed-healthcheck's
	// default is healthcheck.DefaultCheckersPerEndpoint).
	CheckersPerEndpoint int
	// Heartbeat is how often the Lease is renewed; DefaultHeartbeat when
	// zero. The controller counts a checker fresh for its freshness window
	// (default 40 s, four heartbeats), whatever the probe interval.
	Heartbeat time.Duration
	// Debounce gathers verdict changes into one report write; 200 ms when
	// zero.
	Debounce time.Duration
	// Resync compares the stored report with the agent's view this often
	// and rewrites it if they differ; 10 minutes when zero.
	Resync time.Duration
	// RTTInterval is how often the round-trip times measured are read and,
	// when a bucket changed, published; DefaultRTTInterval when zero.
	RTTInterval time.Duration
	// Engine are the probe engine's options; its callbacks are the agent's.
	Engine healthcheck.Options
	// Registerer takes the agent's metrics; none when nil.
	Registerer prometheus.Registerer
	Logger     logr.Logger
}

// Run checks until ctx ends. It returns an error only when it cannot start:
// no control plane within a minute, or no permission to read what it probes.
func Run(ctx context.Context, o Options) error {
	if o.Checker == "" || o.Cluster == "" || o.Federation == "" {
		return errors.New("a checker needs a name, its cluster and its federation")
	}
	if o.Namespace == "" {
		o.Namespace = kfedv1alpha1.DefaultNamespace
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	a := &agent{o: o, ns: kfedv1alpha1.MemberNamespace(o.Cluster), dirty: make(chan struct{}, 1), since: map[string]time.Time{}}
	if err := a.start(ctx); err != nil {
		return err
	}
	return a.run(ctx)
}

type agent struct {
	o      Options
	ns     string // the member namespace: the report's and the Lease's
	c      client.Client
	cache  cache.Cache
	engine *healthcheck.Engine

	dirty chan struct{} // the report may need writing
	// off is true while the checker's cluster has health checking off: the
	// checker then retires (no report, no heartbeat), so that it is not
	// counted in any quorum.
	off    atomic.Bool
	mu     sync.Mutex
	since  map[string]time.Time // when each endpoint turned unhealthy here
	region string               // of the checker's cluster, as last read

	assign assignment // the retarget loop's alone

	rtts     rttTable
	rttGauge *prometheus.GaugeVec
}

func (a *agent) start(ctx context.Context) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{kfedv1alpha1.AddToScheme, extdnsv1alpha1.AddToScheme, coordinationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	ours := labels.SelectorFromSet(dnsendpoint.Selector(a.o.Federation))
	var err error
	a.cache, err = cache.New(a.o.Config, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{
		&extdnsv1alpha1.DNSEndpoint{}: {Label: ours},
		// Every member's, each in its member namespace.
		&kfedv1alpha1.HealthReport{}: {
			Label:     labels.SelectorFromSet(labels.Set{kfedv1alpha1.LabelFederation: a.o.Federation}),
			Transform: keepAssignment,
		},
	}})
	if err != nil {
		return fmt.Errorf("watching the control plane: %w", err)
	}
	a.c, err = client.New(a.o.Config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	eo := a.o.Engine
	eo.OnChange = a.verdictChanged
	eo.OnDegraded = func(bool) { a.markDirty() }
	eo.Registerer = a.o.Registerer
	if a.engine, err = healthcheck.NewEngine(eo); err != nil {
		return err
	}
	a.rttGauge, err = rttGauge(a.o.Registerer)
	return err
}

func (a *agent) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cacheErr := make(chan error, 1)
	go func() { cacheErr <- a.cache.Start(ctx) }()
	inf, err := a.cache.GetInformer(ctx, &extdnsv1alpha1.DNSEndpoint{})
	if err != nil {
		return fmt.Errorf("watching DNSEndpoints: %w", err)
	}
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke,
	}); err != nil {
		return err
	}
	// Who else checks decides what this checker probes; what they find
	// does not.
	reports, err := a.cache.GetInformer(ctx, &kfedv1alpha1.HealthReport{})
	if err != nil {
		return fmt.Errorf("watching the checkers' HealthReports: %w", err)
	}
	if _, err := reports.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: poke, DeleteFunc: poke,
		UpdateFunc: func(old, cur any) {
			if fleetChanged(old, cur) {
				poke(cur)
			}
		},
	}); err != nil {
		return err
	}
	// Clusters say whose reports count and in which domain, and whether
	// this checker's cluster has health checking on.
	clusters, err := a.cache.GetInformer(ctx, &kfedv1alpha1.Cluster{})
	if err != nil {
		return fmt.Errorf("watching Clusters: %w", err)
	}
	if _, err := clusters.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke,
	}); err != nil {
		return err
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	synced := a.cache.WaitForCacheSync(syncCtx)
	syncCancel()
	if !synced {
		select {
		case err := <-cacheErr:
			return fmt.Errorf("watching the control plane: %w", err)
		default:
			return errors.New("the control plane's DNSEndpoints, HealthReports and Clusters could not be read within a minute (no control plane, or no permission)")
		}
	}
	a.o.Logger.Info("checking", "checker", a.o.Checker, "cluster", a.o.Cluster, "federation", a.o.Federation, "namespace", a.ns)

	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); _ = a.engine.Run(ctx) }()
	go func() { defer wg.Done(); a.heartbeats(ctx) }()
	go func() { defer wg.Done(); a.reports(ctx) }()
	go func() { defer wg.Done(); a.measureRTTs(ctx) }()
	defer wg.Wait()

	for {
		if err := a.retarget(ctx); err != nil {
			a.o.Logger.Error(err, "reading what to probe")
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-cacheErr:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watching the control plane: %w", err)
		case <-changed:
			// Let a burst of changes (a controller writing many objects) settle.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// retire deletes the checker's report and heartbeat: a checker that is
// not configured does not count towards any quorum.
func (a *agent) retire(ctx context.Context) error {
	meta := metav1.ObjectMeta{Name: a.o.Checker, Namespace: a.ns}
	return errors.Join(
		client.IgnoreNotFound(a.c.Delete(ctx, &kfedv1alpha1.HealthReport{ObjectMeta: meta})),
		client.IgnoreNotFound(a.c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: meta})))
}

func cmpDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
