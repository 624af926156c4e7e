package kfed

import (
	"slices"
	"strings"
	"sync"

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
// strings share one copy. The JSON decoder allocates
// every string afresh, though most repeat: property names and the cluster,
// region, zone and record type in every endpoint, a name and an address in
// several endpoints of one object. Strings of a kind that has few values
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

// transform is a cache.TransformFunc.
func (s *slimmer) transform(obj any) (any, error) {
	ep, ok := obj.(*extdnsv1alpha1.DNSEndpoint)
	if !ok {
		return obj, nil // a tombstone
	}
	local := map[string]string{}
	own := func(v string) string {
		if c, ok := local[v]; ok {
			return c
		}
		local[v] = v
		return v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       ep.Namespace,
			Name:            ep.Name,
			UID:             ep.UID,
			ResourceVersion: ep.ResourceVersion,
		},
		// The decoder grows slices by doubling, which leaves up to half of
		// each array empty: copies of the exact size take their place.
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: slices.Clip(slices.Clone(ep.Spec.Endpoints))},
	}
	if len(ep.Labels) > 0 {
		out.Labels = make(map[string]string, len(ep.Labels))
		for k, v := range ep.Labels {
			out.Labels[s.share(k)] = s.share(v)
		}
	}
	for k, v := range ep.Annotations {
		if strings.HasPrefix(k, "kfed.io/") {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[s.share(k)] = v
		}
	}
	for i := range out.Spec.Endpoints {
		e := &out.Spec.Endpoints[i]
		e.DNSName = own(e.DNSName)
		e.RecordType = s.share(e.RecordType)
		e.SetIdentifier = s.share(e.SetIdentifier)
		e.Targets = slices.Clip(slices.Clone(e.Targets))
		for j := range e.Targets {
			e.Targets[j] = own(e.Targets[j])
		}
		e.ProviderSpecific = slices.Clip(slices.Clone(e.ProviderSpecific))
		for j := range e.ProviderSpecific {
			p := &e.ProviderSpecific[j]
			p.Name = s.share(p.Name)
			p.Value = own(p.Value)
		}
		if len(e.Labels) > 0 {
			labels := make(map[string]string, len(e.Labels))
			for k, v := range e.Labels {
				labels[s.share(k)] = own(v)
			}
			e.Labels = labels
		}
	}
	return out, nil
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
