package kfed

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// listWatch is how the plugin's informers read the control plane: a REST
// client for one kind, lists and watches of the objects a label selector
// picks, and a log of the calls that fail. It builds on the REST client
// rather than a clientset or controller-runtime so that a CoreDNS build
// carries only what the plugin reads.
type listWatch struct {
	client   *rest.RESTClient
	params   runtime.ParameterCodec
	resource string // "dnsendpoints"
	// namespace to read, "" for every namespace.
	namespace string
	selector  string
	newList   func() runtime.Object
	failures  *failureLog
}

// newListWatch prepares a listWatch of resource in group version gv, whose
// types addToScheme registers, with cfg.
func newListWatch(cfg *rest.Config, gv schema.GroupVersion, addToScheme func(*runtime.Scheme) error,
	resource, namespace, selector string, newList func() runtime.Object, failures *failureLog) (*listWatch, error) {
	scheme := runtime.NewScheme()
	if err := addToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering %s: %w", resource, err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.APIPath = "/apis"
	cfg.GroupVersion = &gv
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	cfg.UserAgent = "coredns-kfed"
	client, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for the control plane: %w", err)
	}
	return &listWatch{client: client, params: runtime.NewParameterCodec(scheme), resource: resource,
		namespace: namespace, selector: selector, newList: newList, failures: failures}, nil
}

// lister is the listWatch as an informer's ListerWatcher.
func (l *listWatch) lister() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = l.selector
			list := l.newList()
			err := l.request(opts).Do(ctx).Into(list)
			l.failures.report(err)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = l.selector
			opts.Watch = true
			wi, err := l.request(opts).Watch(ctx)
			l.failures.report(err)
			return wi, err
		},
	}
}

func (l *listWatch) request(opts metav1.ListOptions) *rest.Request {
	return l.client.Get().NamespaceIfScoped(l.namespace, l.namespace != "").Resource(l.resource).VersionedParams(&opts, l.params)
}

// failureLog logs an informer's list and watch calls that fail: the first
// failure, then at most one a minute while they go on, and the first
// success after them. The informer retries with backoff; client-go tells
// only klog, which CoreDNS does not show.
type failureLog struct {
	federation string
	what       string // "DNSEndpoints"
	meanwhile  string // what the plugin does while it cannot read them, or ""

	mu      sync.Mutex
	failing bool      // the last call failed
	logged  time.Time // when a failure was last logged
}

func (f *failureLog) report(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil && time.Since(f.logged) >= time.Minute:
		f.failing, f.logged = true, time.Now()
		log.Warningf("federation %s: listing or watching %s%s: %v", f.federation, f.what, f.meanwhile, err)
	case err == nil && f.failing:
		f.failing, f.logged = false, time.Time{}
		log.Infof("federation %s: watching %s again", f.federation, f.what)
	}
}
