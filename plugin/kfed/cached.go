package kfed

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/plugin/kfed/index"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// cachedEndpoint is what the informer's cache keeps of a DNSEndpoint: its
// key and version, and its records parsed for the index, which the index
// keeps too (the same records, not a copy). The informer's cache holds an
// object for as long as it exists, so keeping the decoded DNSEndpoint there
// (its metadata, its spec, the cluster table as JSON) would hold every name
// twice more: at 100,000 names that was a third of the plugin's memory.
type cachedEndpoint struct {
	key             string // namespace/name
	resourceVersion string
	object          *index.Object
	err             error // reading the cluster table
	// refused are the endpoints the tenancy rule keeps out of the index.
	refused []tenancy.Refusal
}

// cacheEndpoint is the informer's transform: it parses a DNSEndpoint for x
// as soon as it is decoded and keeps only what the plugin reads of it, so
// that the decoded object is garbage at once. Endpoints the tenancy rule
// refuses are left out here, before anything is indexed. An object it has
// already transformed is returned as it is: with streaming lists the
// informer transforms each object twice.
func cacheEndpoint(x *index.Index, rule tenancy.Endpoints) func(obj any) (any, error) {
	return func(obj any) (any, error) {
		ep, ok := obj.(*extdnsv1alpha1.DNSEndpoint)
		if !ok {
			return obj, nil // already transformed, or a tombstone
		}
		ep, refused := rule.Admit(ep)
		clusters, err := dnsendpoint.ReadClusters(ep)
		return &cachedEndpoint{
			key:             ep.Namespace + "/" + ep.Name,
			resourceVersion: ep.ResourceVersion,
			object:          x.ParseRouted(ep.Spec.Endpoints, clusters, dnsendpoint.ByDistance(ep)),
			err:             err,
			refused:         refused,
		}, nil
	}
}

// GetObjectMeta implements metav1.ObjectMetaAccessor, which is what the
// informer's key function reads.
func (c *cachedEndpoint) GetObjectMeta() metav1.Object {
	namespace, name, _ := strings.Cut(c.key, "/")
	return &metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: c.resourceVersion}
}

// GetObjectKind and DeepCopyObject implement runtime.Object, for any part of
// client-go that expects one in the cache.
func (c *cachedEndpoint) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (c *cachedEndpoint) DeepCopyObject() runtime.Object {
	cp := *c // object is immutable: shared
	return &cp
}
