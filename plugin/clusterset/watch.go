package clusterset

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kfed-io/kfed/plugin/clusterset/zone"
	"github.com/kfed-io/kfed/plugin/kubeclient"
)

// watcher keeps the plugin's zone current with the member's ServiceImports
// and the EndpointSlices labelled with an MCS service name, in every
// namespace, through two informers whose caches keep only what the zone
// reads of each object.
type watcher struct {
	cs          *Clusterset
	imports     cache.SharedIndexInformer
	slices      cache.SharedIndexInformer
	synced      chan struct{}
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	lastError   atomic.Int64 // Unix nanoseconds of the last logged list or watch failure
	missingOnce sync.Once
}

// newWatcher prepares the informers with cfg; start runs them.
func newWatcher(cfg *rest.Config, cs *Clusterset) (*watcher, error) {
	w := &watcher{cs: cs, synced: make(chan struct{})}
	imports, err := w.listWatch(cfg, zone.ServiceImportVersion, zone.AddServiceImports, "serviceimports", "",
		func() runtime.Object { return &zone.ServiceImportList{} })
	if err != nil {
		return nil, err
	}
	slices, err := w.listWatch(cfg, zone.EndpointSliceVersion, zone.AddEndpointSlices, "endpointslices",
		zone.LabelServiceName, func() runtime.Object { return &zone.EndpointSliceList{} })
	if err != nil {
		return nil, err
	}
	w.imports = cache.NewSharedIndexInformer(imports, &zone.ServiceImport{}, 0, cache.Indexers{})
	w.slices = cache.NewSharedIndexInformer(slices, &zone.EndpointSlice{}, 0, cache.Indexers{})
	if err := w.imports.SetTransform(readImport); err != nil {
		return nil, fmt.Errorf("watching ServiceImports: %w", err)
	}
	if err := w.slices.SetTransform(readSlice); err != nil {
		return nil, fmt.Errorf("watching EndpointSlices: %w", err)
	}
	return w, nil
}

// listWatch lists and watches resource of gv in every namespace, with the
// label selector selector. A resource the cluster does not serve lists as
// empty: the MCS CRDs are not installed, so nothing is exported, and the
// plugin answers NXDOMAIN rather than never sync; the watch fails alike and
// the informer lists again, with backoff, until the CRD is there.
func (w *watcher) listWatch(cfg *rest.Config, gv schema.GroupVersion, addToScheme func(*runtime.Scheme) error,
	resource, selector string, newList func() runtime.Object) (*cache.ListWatch, error) {
	lw, err := kubeclient.ListWatch(cfg, "coredns-clusterset", kubeclient.Source{GroupVersion: gv, AddToScheme: addToScheme,
		Resource: resource, Selector: selector, NewList: newList}, func(err error) { w.report(resource, err) })
	if err != nil {
		return nil, err
	}
	list := lw.ListWithContextFunc
	lw.ListWithContextFunc = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		obj, err := list(ctx, opts)
		if apierrors.IsNotFound(err) {
			w.missing(resource)
			return newList(), nil
		}
		return obj, err
	}
	return lw, nil
}

// report logs a failed list or watch, at most once a minute: the informer
// retries with backoff and tells only klog, which CoreDNS does not show. A
// resource the cluster does not serve is missing's to log.
func (w *watcher) report(resource string, err error) {
	if err == nil || apierrors.IsNotFound(err) {
		return
	}
	now := time.Now().UnixNano()
	if last := w.lastError.Load(); now-last >= int64(time.Minute) && w.lastError.CompareAndSwap(last, now) {
		log.Warningf("listing or watching %s (answering from what was last read meanwhile): %v", resource, err)
	}
}

// missing logs, once, that the cluster does not serve resource.
func (w *watcher) missing(resource string) {
	w.missingOnce.Do(func() {
		log.Warningf("the cluster serves no %s (are the MCS CRDs installed?): nothing is exported until it does", resource)
	})
}

// start runs the informers until stop, and marks the plugin synced once
// both have listed everything.
func (w *watcher) start() error {
	regImports, err := w.imports.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.setImport,
		UpdateFunc: func(_, obj any) { w.setImport(obj) },
		DeleteFunc: w.deleteImport,
	})
	if err != nil {
		return fmt.Errorf("watching ServiceImports: %w", err)
	}
	regSlices, err := w.slices.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.setSlice,
		UpdateFunc: func(_, obj any) { w.setSlice(obj) },
		DeleteFunc: w.deleteSlice,
	})
	if err != nil {
		return fmt.Errorf("watching EndpointSlices: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.wg.Go(func() { w.imports.RunWithContext(ctx) })
	w.wg.Go(func() { w.slices.RunWithContext(ctx) })
	w.wg.Go(func() {
		if cache.WaitForCacheSync(ctx.Done(), regImports.HasSynced, regSlices.HasSynced) {
			w.cs.synced.Store(true)
			log.Infof("%d names in %s from the cluster", w.cs.zone.Len(), w.cs.zone.Origin())
			close(w.synced)
		}
	})
	return nil
}

// stop ends the informers and waits for them.
func (w *watcher) stop() {
	if w.cancel != nil {
		w.cancel()
	}
	w.wg.Wait()
}

// cachedImport and cachedSlice are what the informers' caches keep of an
// object: its key and version and what the zone reads of it, not the
// decoded object.
type cachedImport struct {
	cachedMeta
	imp *zone.Import
	err error
}

type cachedSlice struct {
	cachedMeta
	slice *zone.Slice // nil: not served
	err   error
}

type cachedMeta struct {
	namespace, name, resourceVersion string
}

// GetObjectMeta is what the informer's key function reads.
func (c *cachedMeta) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: c.namespace, Name: c.name, ResourceVersion: c.resourceVersion}
}

// GetObjectKind implements runtime.Object, for any part of client-go that
// expects one in the cache.
func (c *cachedMeta) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (c *cachedImport) DeepCopyObject() runtime.Object { cp := *c; return &cp }
func (c *cachedSlice) DeepCopyObject() runtime.Object  { cp := *c; return &cp }

// readImport is the ServiceImport informer's transform. An object already
// transformed is returned as it is (streaming lists transform twice).
func readImport(obj any) (any, error) {
	si, ok := obj.(*zone.ServiceImport)
	if !ok {
		return obj, nil
	}
	imp, err := zone.ImportFrom(si)
	return &cachedImport{cachedMeta: cachedMeta{si.Namespace, si.Name, si.ResourceVersion}, imp: imp, err: err}, nil
}

// readSlice is the EndpointSlice informer's transform.
func readSlice(obj any) (any, error) {
	eps, ok := obj.(*zone.EndpointSlice)
	if !ok {
		return obj, nil
	}
	s, err := zone.SliceFrom(eps)
	return &cachedSlice{cachedMeta: cachedMeta{eps.Namespace, eps.Name, eps.ResourceVersion}, slice: s, err: err}, nil
}

func (w *watcher) setImport(obj any) {
	c, ok := obj.(*cachedImport)
	if !ok {
		return
	}
	if c.err != nil {
		log.Warningf("ServiceImport %s/%s: serving what is valid: %v", c.namespace, c.name, c.err)
	}
	w.cs.zone.SetImport(c.imp)
	w.changed(c.resourceVersion)
}

func (w *watcher) deleteImport(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if c, ok := obj.(*cachedImport); ok {
		w.cs.zone.DeleteImport(c.namespace, c.name)
		w.changed(c.resourceVersion)
	}
}

func (w *watcher) setSlice(obj any) {
	c, ok := obj.(*cachedSlice)
	if !ok {
		return
	}
	if c.err != nil {
		log.Warningf("EndpointSlice %s/%s: %v", c.namespace, c.name, c.err)
	}
	w.cs.zone.SetSlice(c.namespace+"/"+c.name, c.slice)
	w.changed(c.resourceVersion)
}

func (w *watcher) deleteSlice(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if c, ok := obj.(*cachedSlice); ok {
		w.cs.zone.SetSlice(c.namespace+"/"+c.name, nil)
		w.changed(c.resourceVersion)
	}
}

// changed follows a change to the zone, by an object at resourceVersion rv:
// it raises the SOA serial to rv, modulo 2^32, if that is higher (the serial
// rises with every change the zone sees, and replicas that have seen the
// same changes agree), and sets the names gauge.
func (w *watcher) changed(rv string) {
	zoneNames.Set(float64(w.cs.zone.Len()))
	v, err := strconv.ParseUint(strings.TrimSpace(rv), 10, 64)
	if err != nil {
		return // resourceVersions are opaque; etcd's are numbers
	}
	s := uint32(v)
	for {
		old := w.cs.serial.Load()
		// RFC 1982: s is newer than old when it is ahead by less than 2^31.
		if s == old || s-old >= 1<<31 || w.cs.serial.CompareAndSwap(old, s) {
			return
		}
	}
}
