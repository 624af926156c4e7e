// Package kubeclient is how kfed's CoreDNS plugins read a Kubernetes API: a
// REST config from a kubeconfig or from the pod's service account, and the
// lists and watches of one kind through a REST client, so that a CoreDNS
// build carries no clientset, only the types its plugins read.
package kubeclient

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kfed-io/kfed/internal/kubetoken"
)

// Config reaches a cluster through the kubeconfig at path (its context, or
// its current one), or, without a path, through the pod's own service
// account.
func Config(path, context string) (*rest.Config, error) {
	if path == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no kubeconfig given and not in a cluster: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path},
		&clientcmd.ConfigOverrides{CurrentContext: context},
	).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	// A renewed token (kfed join --renew) is taken up at the old one's
	// first refusal.
	kubetoken.Reread(cfg)
	return cfg, nil
}

// Source is one kind a plugin lists and watches.
type Source struct {
	GroupVersion schema.GroupVersion
	// AddToScheme registers the kind and its list.
	AddToScheme func(*runtime.Scheme) error
	Resource    string // "dnsendpoints"
	Namespace   string // "" for every namespace
	Selector    string // a label selector, or ""
	NewList     func() runtime.Object
}

// ListWatch is an informer's ListerWatcher of s through a REST client made
// with cfg, identified as userAgent. The error of every list and watch call,
// nil when it succeeded, goes to report: the informer retries failures with
// backoff and tells only klog, which CoreDNS does not show.
func ListWatch(cfg *rest.Config, userAgent string, s Source, report func(error)) (*cache.ListWatch, error) {
	scheme := runtime.NewScheme()
	if err := s.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering %s: %w", s.Resource, err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.APIPath = "/apis"
	cfg.GroupVersion = &s.GroupVersion
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	cfg.UserAgent = userAgent
	client, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", s.Resource, err)
	}
	params := runtime.NewParameterCodec(scheme)
	request := func(opts metav1.ListOptions) *rest.Request {
		opts.LabelSelector = s.Selector
		return client.Get().NamespaceIfScoped(s.Namespace, s.Namespace != "").Resource(s.Resource).VersionedParams(&opts, params)
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := s.NewList()
			err := request(opts).Do(ctx).Into(list)
			report(err)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			wi, err := request(opts).Watch(ctx)
			report(err)
			return wi, err
		},
	}, nil
}
