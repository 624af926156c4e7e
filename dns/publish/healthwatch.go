package publish

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// HealthWatch turns what checkers say into reconciles of the federated
// objects it may change, so that a verdict reaches DNS within a second of a
// report. It speaks of DNSEndpoints (the endpoint keys checkers report
// are theirs); Enqueue maps one to the object that publishes it:
//   - a report's list of unhealthy endpoints changes: the DNSEndpoints in
//     the old and the new list; so does a load it publishes (a bucket
//     moves, a figure comes or goes): that endpoint's DNSEndpoint;
//   - a checker appears, is retired, turns degraded or back, or changes
//     checkers per endpoint: All (the quorum, the seats or the panels
//     changed), which is rare; so does a Cluster's change of region or
//     of maxCheckers, through the publishers' own watch of Clusters;
//   - a checker's heartbeat turns stale or fresh again — noticed by a timer
//     set to the moment the next one goes stale, not by polling: the
//     DNSEndpoints some checker finds down, and those published with an
//     unhealthy cluster, the only ones a changed quorum can change.
//
// Each publisher adds one to its manager (it is a Runnable).
type HealthWatch struct {
	Cache      cache.Cache
	Federation string
	// Freshness is how long a heartbeat counts; DefaultFreshness when zero.
	Freshness time.Duration
	Clock     clock.PassiveClock
	// Enqueue reconciles the object that publishes the DNSEndpoint key, if
	// it is this publisher's.
	Enqueue func(key types.NamespacedName)
	// All reconciles every object of this publisher.
	All func(ctx context.Context)

	mu    sync.Mutex
	fresh map[string]time.Time // checker → heartbeat, while fresh
	poke  chan struct{}
}

// Start watches until ctx ends; it is a manager Runnable.
func (w *HealthWatch) Start(ctx context.Context) error {
	w.fresh = map[string]time.Time{}
	w.poke = make(chan struct{}, 1)
	reports, err := w.Cache.GetInformer(ctx, &kfedv1alpha1.HealthReport{})
	if meta.IsNoMatchError(err) {
		return nil // no HealthReport CRD, no checkers: nothing to watch
	}
	if err != nil {
		return fmt.Errorf("watching health reports: %w", err)
	}
	leases, err := w.Cache.GetInformer(ctx, &coordinationv1.Lease{})
	if err != nil {
		return fmt.Errorf("watching checker heartbeats: %w", err)
	}
	r1, err := reports.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.all(ctx) },
		DeleteFunc: func(any) { w.all(ctx) },
		UpdateFunc: w.reportChanged(ctx),
	})
	if err != nil {
		return err
	}
	defer func() { _ = reports.RemoveEventHandler(r1) }()
	r2, err := leases.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.heartbeat(o, false) },
		UpdateFunc: func(_, o any) { w.heartbeat(o, false) },
		DeleteFunc: func(o any) { w.heartbeat(o, true) },
	})
	if err != nil {
		return err
	}
	defer func() { _ = leases.RemoveEventHandler(r2) }()
	// A cluster's seats and failure domain are its Cluster's.
	clusters, err := w.Cache.GetInformer(ctx, &kfedv1alpha1.Cluster{})
	if err != nil {
		return fmt.Errorf("watching clusters: %w", err)
	}
	r3, err := clusters.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			if seatsChanged(old, cur) {
				w.all(ctx)
			}
		},
	})
	if err != nil {
		return err
	}
	defer func() { _ = clusters.RemoveEventHandler(r3) }()

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if w.expire() {
			w.affected(ctx)
		}
		timer.Reset(w.nextExpiry())
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-w.poke:
		}
	}
}

func (w *HealthWatch) reportChanged(ctx context.Context) func(old, cur any) {
	return func(old, cur any) {
		o, ok1 := old.(*kfedv1alpha1.HealthReport)
		n, ok2 := cur.(*kfedv1alpha1.HealthReport)
		if !ok1 || !ok2 || o.Federation != w.Federation && n.Federation != w.Federation {
			return
		}
		// A checker's K moves endpoints between panels (its domain is its
		// Cluster's region: a Cluster's change reconciles everything).
		if o.Degraded != n.Degraded || o.CheckersPerEndpoint != n.CheckersPerEndpoint {
			w.all(ctx)
			return
		}
		was := map[string]bool{}
		for _, u := range o.Unhealthy {
			was[u.Endpoint] = true
		}
		changed := map[string]bool{}
		for _, u := range n.Unhealthy {
			if !was[u.Endpoint] {
				changed[u.Endpoint] = true
			}
			delete(was, u.Endpoint)
		}
		for k := range was {
			changed[k] = true
		}
		for k := range loadsChanged(o.Loads, n.Loads) {
			changed[k] = true
		}
		for k := range changed {
			w.enqueueEndpoint(k)
		}
	}
}

// loadsChanged are the endpoints whose published load differs between two
// reports: one with a figure in one only, or another bucket.
func loadsChanged(old, cur []kfedv1alpha1.EndpointLoad) map[string]bool {
	was := map[string]kfedv1alpha1.EndpointLoad{}
	for _, l := range old {
		was[l.Endpoint] = l
	}
	changed := map[string]bool{}
	for _, l := range cur {
		if p, ok := was[l.Endpoint]; !ok || p.Utilization.Cmp(l.Utilization) != 0 {
			changed[l.Endpoint] = true
		}
		delete(was, l.Endpoint)
	}
	for k := range was {
		changed[k] = true
	}
	return changed
}

// seatsChanged reports whether a Cluster's update changes which of its
// checkers count or the failure domain they count in. A Cluster's
// creation or deletion changes its members too, which every publisher
// follows already.
func seatsChanged(old, cur any) bool {
	o, ok1 := old.(*kfedv1alpha1.Cluster)
	n, ok2 := cur.(*kfedv1alpha1.Cluster)
	if !ok1 || !ok2 {
		return false
	}
	or, _ := o.Location()
	nr, _ := n.Location()
	return o.MaxCheckers() != n.MaxCheckers() || o.HealthCheckEnabled() != n.HealthCheckEnabled() || or != nr
}

// heartbeat notes a checker's Lease, or its deletion (a retired checker);
// a checker that turns fresh or stale may change verdicts at once.
func (w *HealthWatch) heartbeat(obj any, deleted bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l.Labels[kfedv1alpha1.LabelChecker] == "" || l.Labels[kfedv1alpha1.LabelFederation] != w.Federation {
		return
	}
	name := kfedv1alpha1.CheckerName(l.Namespace, l.Name)
	w.mu.Lock()
	_, wasFresh := w.fresh[name]
	t := Heartbeat(l)
	delete(w.fresh, name)
	if !deleted && !t.IsZero() && w.Clock.Now().Sub(t) < w.freshness() {
		w.fresh[name] = t
	}
	_, isFresh := w.fresh[name]
	w.mu.Unlock()
	if wasFresh != isFresh {
		w.affected(context.Background())
	}
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

// expire drops checkers whose heartbeat is no longer fresh, and reports
// whether any was.
func (w *HealthWatch) expire() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now, expired := w.Clock.Now(), false
	for name, t := range w.fresh {
		if now.Sub(t) >= w.freshness() {
			delete(w.fresh, name)
			expired = true
		}
	}
	return expired
}

func (w *HealthWatch) nextExpiry() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	next := time.Hour
	for _, t := range w.fresh {
		next = min(next, t.Add(w.freshness()).Sub(w.Clock.Now()))
	}
	return max(next, time.Millisecond)
}

// affected enqueues the Services a change of quorum can change.
func (w *HealthWatch) affected(ctx context.Context) {
	var reports kfedv1alpha1.HealthReportList
	if err := w.Cache.List(ctx, &reports); err == nil {
		for _, r := range reports.Items {
			for _, u := range r.Unhealthy {
				w.enqueueEndpoint(u.Endpoint)
			}
			for _, l := range r.Loads { // a checker's figures count while it is fresh
				w.enqueueEndpoint(l.Endpoint)
			}
		}
	}
	var eps extdnsv1alpha1.DNSEndpointList // the cache's own: read only
	if err := w.Cache.List(ctx, &eps, client.MatchingLabels(dnsendpoint.Selector(w.Federation)), client.UnsafeDisableDeepCopy); err == nil {
		for i := range eps.Items {
			table, _ := dnsendpoint.ReadClusters(&eps.Items[i])
			for _, cl := range table {
				if cl.Unhealthy {
					w.enqueue(eps.Items[i].Namespace, eps.Items[i].Name)
					break
				}
			}
		}
	}
}

func (w *HealthWatch) all(ctx context.Context) { w.All(ctx) }

func (w *HealthWatch) freshness() time.Duration {
	if w.Freshness > 0 {
		return w.Freshness
	}
	return DefaultFreshness
}

func (w *HealthWatch) enqueueEndpoint(key string) {
	if namespace, service, _, ok := kfedv1alpha1.ParseEndpointKey(key); ok {
		w.enqueue(namespace, service)
	}
}

func (w *HealthWatch) enqueue(namespace, name string) {
	w.Enqueue(types.NamespacedName{Namespace: namespace, Name: name})
}
