package agent

// The run loop: what the agent watches, and the loops it runs until its
// context ends.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
)

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
	if a.rttGauge, err = rttGauge(a.o.Registerer); err != nil {
		return err
	}
	a.loadGauge, err = loadGauge(a.o.Registerer)
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
	wg.Add(5)
	go func() { defer wg.Done(); _ = a.engine.Run(ctx) }()
	go func() { defer wg.Done(); a.heartbeats(ctx) }()
	go func() { defer wg.Done(); a.reports(ctx) }()
	go func() {
		defer wg.Done()
		a.rtts.measure(ctx, cmpDuration(a.o.RTTInterval, DefaultRTTInterval), a.engine, a.rttGauge, a.markDirty)
	}()
	go func() {
		defer wg.Done()
		a.loads.measure(ctx, cmpDuration(a.o.LoadInterval, DefaultLoadInterval), a.engine, a.loadGauge, a.markDirty)
	}()
	defer wg.Wait()

	var assign assignment // the retarget loop's alone
	for {
		if err := a.retarget(ctx, &assign); err != nil {
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
