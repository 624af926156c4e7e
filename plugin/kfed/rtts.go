package kfed

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/plugin/kfed/index"
	"github.com/kfed-io/kfed/plugin/kubeclient"
)

// rttWatcher keeps the index's round-trip times current with the
// HealthReports of the checkers in the plugin's own cluster: the times they
// measure from there to every other cluster, which order clusters within a
// tier. One small object per checker, written when a bucket changes: a few
// watch events an hour, none per query.
//
// The RTTs are a refinement: the plugin is ready without them, and a watch
// that fails (no permission to read HealthReports, after an upgrade that
// did not apply the new RBAC) is logged and retried while the plugin
// answers in the order labels and weights give.
type rttWatcher struct {
	federation, cluster string
	informer            cache.SharedIndexInformer
	index               *index.Index

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// newRTTWatcher prepares a watch with cfg on the HealthReports in namespace
// of the checkers of cluster in federation; start runs it.
func newRTTWatcher(cfg *rest.Config, federation, cluster, namespace string, x *index.Index) (*rttWatcher, error) {
	w := &rttWatcher{federation: federation, cluster: cluster, index: x}
	lw, err := kubeclient.ListWatch(cfg, userAgent, kubeclient.Source{
		GroupVersion: kfedv1alpha1.GroupVersion, AddToScheme: kfedv1alpha1.AddToScheme, Resource: "healthreports",
		Namespace: namespace,
		Selector:  labels.SelectorFromSet(labels.Set{kfedv1alpha1.LabelFederation: federation, kfedv1alpha1.LabelCluster: cluster}).String(),
		NewList:   func() runtime.Object { return &kfedv1alpha1.HealthReportList{} },
	}, (&failureLog{federation: federation, what: "the HealthReports of cluster " + cluster,
		meanwhile: " (ordering clusters without round-trip times meanwhile)"}).report)
	if err != nil {
		return nil, err
	}
	w.informer = cache.NewSharedIndexInformer(lw, &kfedv1alpha1.HealthReport{}, 0, cache.Indexers{})
	// Keep only what RTTs need: a report's list of unhealthy endpoints may
	// be long exactly when the federation is in trouble.
	if err := w.informer.SetTransform(func(obj any) (any, error) {
		if r, ok := obj.(*kfedv1alpha1.HealthReport); ok {
			r.Unhealthy, r.ManagedFields, r.Annotations = nil, nil, nil
		}
		return obj, nil
	}); err != nil {
		return nil, fmt.Errorf("watching HealthReports: %w", err)
	}
	return w, nil
}

func (w *rttWatcher) start() error {
	update := func(any) {
		var reports []*kfedv1alpha1.HealthReport
		for _, o := range w.informer.GetStore().List() {
			if r, ok := o.(*kfedv1alpha1.HealthReport); ok {
				reports = append(reports, r)
			}
		}
		w.index.SetRTTs(index.CombineRTTs(reports))
	}
	if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: update, UpdateFunc: func(_, o any) { update(o) }, DeleteFunc: update,
	}); err != nil {
		return fmt.Errorf("watching HealthReports: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.wg.Go(func() { w.informer.RunWithContext(ctx) })
	return nil
}

func (w *rttWatcher) stop() {
	if w.cancel != nil {
		w.cancel()
	}
	w.wg.Wait()
}
