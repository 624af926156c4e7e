package kfed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/plugin/kfed/index"
	"github.com/kfed-io/kfed/plugin/kubeclient"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// watcher keeps an index current with the federation's DNSEndpoints in every
// namespace of the control plane, through an informer: one list, then a
// watch, each change applied to the index as it arrives.
type watcher struct {
	federation string
	informer   cache.SharedIndexInformer
	index      *index.Index
	serial     *zoneSerial
	onChange   func() // after each change to the index and serial
	onSynced   func()
	synced     chan struct{} // closed after onSynced

	lastHeard atomic.Int64 // Unix nanoseconds
	mu        sync.Mutex
	refused   map[string]int // endpoints the tenancy rule refused, by object
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// newWatcher prepares a watch with cfg that keeps x and serial current with
// what rule admits; start runs it.
func newWatcher(cfg *rest.Config, federation string, rule tenancy.Endpoints, x *index.Index, serial *zoneSerial, onChange, onSynced func()) (*watcher, error) {
	w := &watcher{federation: federation, index: x, serial: serial, onChange: onChange, onSynced: onSynced,
		synced: make(chan struct{}), refused: map[string]int{}}
	lw, err := kubeclient.ListWatch(cfg, userAgent, kubeclient.Source{
		GroupVersion: extdnsv1alpha1.GroupVersion, AddToScheme: extdnsv1alpha1.AddToScheme, Resource: "dnsendpoints",
		Selector: labels.SelectorFromSet(dnsendpoint.Selector(federation)).String(),
		NewList:  func() runtime.Object { return &extdnsv1alpha1.DNSEndpointList{} },
	}, (&failureLog{federation: federation, what: "DNSEndpoints"}).report)
	if err != nil {
		return nil, err
	}
	w.informer = cache.NewSharedIndexInformer(lw, &extdnsv1alpha1.DNSEndpoint{}, 0, cache.Indexers{})
	if err := w.informer.SetTransform(cacheEndpoint(x, rule)); err != nil {
		return nil, fmt.Errorf("watching DNSEndpoints: %w", err)
	}
	return w, nil
}

// start runs the informer until stop, and reports the first full sync
// through onSynced.
func (w *watcher) start() error {
	reg, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.apply,
		UpdateFunc: func(_, obj any) { w.apply(obj) },
		DeleteFunc: w.remove,
	})
	if err != nil {
		return fmt.Errorf("watching DNSEndpoints: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.heard()
	w.wg.Go(func() { w.informer.RunWithContext(ctx) })
	w.wg.Go(func() {
		if cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
			w.heard()
			log.Infof("federation %s: %d names from the control plane", w.federation, w.index.Len())
			w.onSynced()
			close(w.synced)
		}
	})
	w.wg.Go(func() { w.trackAge(ctx) })
	return nil
}

// stop ends the watch and waits for its goroutines.
func (w *watcher) stop() {
	if w.cancel != nil {
		w.cancel()
	}
	w.wg.Wait()
}

func (w *watcher) apply(obj any) {
	c, ok := obj.(*cachedEndpoint)
	if !ok {
		return
	}
	if err := errors.Join(c.err, w.index.SetObject(c.key, c.object)); err != nil {
		log.Warningf("DNSEndpoint %s: serving what is valid: %v", c.key, err)
	}
	w.countRefused(c.key, c.refused)
	w.changed(c.key, c.resourceVersion)
}

// countRefused logs the endpoints of object the tenancy rule refused and
// keeps refused_endpoints current.
func (w *watcher) countRefused(object string, refused []tenancy.Refusal) {
	for _, r := range refused {
		log.Warningf("DNSEndpoint %s: not serving %s", object, r)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(refused) == 0 {
		delete(w.refused, object)
	} else {
		w.refused[object] = len(refused)
	}
	total := 0
	for _, n := range w.refused {
		total += n
	}
	refusedEndpoints.WithLabelValues(w.federation).Set(float64(total))
}

func (w *watcher) remove(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	c, ok := obj.(*cachedEndpoint)
	if !ok {
		return
	}
	w.index.Delete(c.key)
	w.countRefused(c.key, nil)
	// A deletion event carries the object's version at its deletion; a
	// tombstone from a relist carries an older one, which changes nothing.
	w.changed(c.key, c.resourceVersion)
}

// changed follows a change to object, at resourceVersion rv, that is in the
// index: the serial rises only after the records it stands for are served,
// so that a transfer never pairs a new serial with old records.
func (w *watcher) changed(object, rv string) {
	if err := w.serial.observe(rv); err != nil {
		log.Warningf("DNSEndpoint %s: %v", object, err)
	}
	if w.onChange != nil {
		w.onChange()
	}
	w.heard()
	indexNames.WithLabelValues(w.federation).Set(float64(w.index.Len()))
}

func (w *watcher) heard() { w.lastHeard.Store(time.Now().UnixNano()) }

// trackAge keeps sync_age_seconds and index_names current. Events alone would make a quiet
// federation look stale, so a watch bookmark counts too: the informer's
// resource version moves when the API server sends one (about once a minute
// while anything in the control plane changes), and not while the watch is
// broken.
func (w *watcher) trackAge(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	version := ""
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if v := w.informer.LastSyncResourceVersion(); v != version {
				version = v
				w.heard()
			}
			age := now.Sub(time.Unix(0, w.lastHeard.Load()))
			syncAge.WithLabelValues(w.federation).Set(max(age, 0).Seconds())
			// Also here, not only on changes: a reloaded CoreDNS's new
			// instance shares the series with the old one.
			indexNames.WithLabelValues(w.federation).Set(float64(w.index.Len()))
		}
	}
}
