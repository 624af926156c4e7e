package kfed

import (
	"slices"
	"strings"
	"sync"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

// slimmer is the informer's transform: it keeps of each DNSEndpoint what
// the plugin reads (namespace, name, UID, resourceVersion, labels, the
// annotations under kfed.io/, and the whole spec) and drops the rest (status,
// managed fields, owner references, other annotations such as kubectl's
// last-applied copy of the object). The informer's cache holds every object
// for as long as it exists, and the index points into their endpoints, so
// this is most of the plugin's memory.
//
// It also stores the spec's arrays at their exact size and makes equal
// strings share one copy. The JSON decoder allocates every string afresh,
// though most repeat: property names and the cluster, region, zone and record
// type in every endpoint, a name and an address in several endpoints of one
// object. Strings of a kind that has few values
// (property and label names, record types, set identifiers) share one copy
// across objects, kept for the plugin's life; all others share within their
// object only, so that nothing outlives the objects that use it.
type slimmer struct {
	mu     sync.Mutex
	shared map[string]string // the strings of few values, across objects
}

// maxShared bounds the strings shared across objects, in case a field
// thought to have few values has many.
const maxShared = 4096

func newSlimmer() *slimmer { return &slimmer{shared: map[string]string{}} }

// transform is a cache.TransformFunc. It changes the object in place, as
// client-go allows, and costs next to nothing on an object it has already
// slimmed: with streaming lists the informer transforms each object twice.
func (s *slimmer) transform(obj any) (any, error) {
	ep, ok := obj.(*extdnsv1alpha1.DNSEndpoint)
	if !ok {
		return obj, nil // a tombstone
	}
	ep.ObjectMeta = metav1.ObjectMeta{
		Namespace:       ep.Namespace,
		Name:            ep.Name,
		UID:             ep.UID,
		ResourceVersion: ep.ResourceVersion,
		Labels:          ep.Labels,
		Annotations:     kfedAnnotations(ep.Annotations),
	}
	ep.Status = extdnsv1alpha1.DNSEndpointStatus{}
	var local map[string]string // made on the first string not yet seen
	own := func(v string) string {
		if c, ok := local[v]; ok {
			return c
		}
		if local == nil {
			local = map[string]string{}
		}
		local[v] = v
		return v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range ep.Labels {
		if sk, sv := s.share(k), s.share(v); unsafe.StringData(sk) != unsafe.StringData(k) || unsafe.StringData(sv) != unsafe.StringData(v) {
			delete(ep.Labels, k)
			ep.Labels[sk] = sv
		}
	}
	for k, v := range ep.Annotations {
		if sk := s.share(k); unsafe.StringData(sk) != unsafe.StringData(k) {
			delete(ep.Annotations, k)
			ep.Annotations[sk] = v
		}
	}
	ep.Spec.Endpoints = exact(ep.Spec.Endpoints)
	for i := range ep.Spec.Endpoints {
		e := &ep.Spec.Endpoints[i]
		e.DNSName = own(e.DNSName)
		e.RecordType = s.share(e.RecordType)
		e.SetIdentifier = s.share(e.SetIdentifier)
		e.Targets = exact(e.Targets)
		for j := range e.Targets {
			e.Targets[j] = own(e.Targets[j])
		}
		e.ProviderSpecific = exact(e.ProviderSpecific)
		for j := range e.ProviderSpecific {
			p := &e.ProviderSpecific[j]
			p.Name = s.share(p.Name)
			p.Value = own(p.Value)
		}
		for k, v := range e.Labels {
			if sk := s.share(k); unsafe.StringData(sk) != unsafe.StringData(k) {
				delete(e.Labels, k)
				e.Labels[sk] = own(v)
			}
		}
	}
	return ep, nil
}

// kfedAnnotations returns the annotations under kfed.io/ in a, a itself when
// it has no others.
func kfedAnnotations(a map[string]string) map[string]string {
	others := 0
	for k := range a {
		if !strings.HasPrefix(k, "kfed.io/") {
			others++
		}
	}
	if others == 0 {
		return a
	}
	if others == len(a) {
		return nil
	}
	kept := make(map[string]string, len(a)-others)
	for k, v := range a {
		if strings.HasPrefix(k, "kfed.io/") {
			kept[k] = v
		}
	}
	return kept
}

// exact returns s in an array of its length: the JSON decoder grows slices
// by doubling, which leaves up to half of each array empty.
func exact[S ~[]E, E any](s S) S {
	if cap(s) == len(s) {
		return s
	}
	return slices.Clip(slices.Clone(s))
}

// share returns the one copy of v kept across objects. Called with s.mu
// held.
func (s *slimmer) share(v string) string {
	if c, ok := s.shared[v]; ok {
		return c
	}
	if len(s.shared) < maxShared {
		s.shared[v] = v
	}
	return v
}
