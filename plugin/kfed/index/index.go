// Package index keeps the DNS records of a federation's DNSEndpoints in
// memory, by name, for the kfed CoreDNS plugin.
//
// The index is rebuilt piecewise: when one DNSEndpoint changes, only the names
// it touches are merged again, so that a federation with many Services pays
// per change, never per query. Records are built once, as miekg/dns resource
// records, and shared by every response that carries them; nothing here
// builds messages, and nothing a lookup returns may be modified.
package index

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

// Index is the record sets of one federation's names, seen from one cluster.
// It is safe for concurrent use: any number of lookups run beside one writer.
type Index struct {
	cluster    string
	defaultTTL uint32

	mu    sync.RWMutex
	names map[string]*node // fully qualified, lower-case name → node
	// served is what lookups read: the records of every name that exists
	// (nil for an empty non-terminal). It repeats names' state so that a
	// lookup reads the map alone, without loading a node.
	served  map[string]*Records
	objects map[string][]string // object key → names it has endpoints at
	size    int                 // names with records

	version atomic.Uint32
}

// node is one name: its merged records and what is needed to merge them
// again. Fields are written under Index.mu; records is replaced, never
// modified, so a reader may keep it after unlocking.
type node struct {
	records *Records
	below   int      // names with records strictly below this one
	sources []source // endpoints at this name, one entry per object, by key
}

// source is what one DNSEndpoint says about one name. The endpoints point
// into the object, which the caller must not modify afterwards (informer
// caches hold objects read-only, which is what the plugin passes in).
type source struct {
	object    string
	endpoints []*extdnsv1alpha1.Endpoint
	clusters  dnsendpoint.Clusters
}

// New returns an empty index for a plugin running in cluster (empty when it
// runs outside any member cluster), giving endpoints without a recordTTL the
// TTL defaultTTL.
func New(cluster string, defaultTTL uint32) *Index {
	x := &Index{
		cluster:    cluster,
		defaultTTL: defaultTTL,
		names:      map[string]*node{},
		served:     map[string]*Records{},
		objects:    map[string][]string{},
	}
	return x
}

// Lookup returns the records at name, a fully qualified lower-case name, and
// whether the name exists. A name exists when it has records or a name below
// it has (an empty non-terminal); records is nil for the latter.
func (x *Index) Lookup(name string) (records *Records, exists bool) {
	x.mu.RLock()
	records, exists = x.served[name]
	x.mu.RUnlock()
	return records, exists
}

// Names returns every name with records, and its records, sorted by name:
// a snapshot, taken under the lock and read after it, so that a zone
// transfer never holds up the writer.
func (x *Index) Names() []Named {
	x.mu.RLock()
	out := make([]Named, 0, x.size)
	for name, r := range x.served {
		if r != nil {
			out = append(out, Named{Name: name, Records: r})
		}
	}
	x.mu.RUnlock()
	slices.SortFunc(out, func(a, b Named) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Named is a name and its records.
type Named struct {
	Name    string
	Records *Records
}

// Len is the number of names with records.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.size
}

// Version changes whenever the records change, so that what a reader derives
// from them can be kept until then. It counts changes in this process only:
// it is not the zones' SOA serial, which the plugin derives from the
// DNSEndpoints themselves.
func (x *Index) Version() uint32 { return x.version.Load() }

// Set replaces what object (a "namespace/name" key) contributes with its
// endpoints, whose addresses clusters (the object's cluster table,
// dnsendpoint.ReadClusters) attributes to clusters. Endpoints or targets the
// index cannot serve are left out and reported in the error; the rest take
// effect all the same.
func (x *Index) Set(object string, endpoints []extdnsv1alpha1.Endpoint, clusters dnsendpoint.Clusters) error {
	byName := map[string][]*extdnsv1alpha1.Endpoint{}
	var errs []error
	for i := range endpoints {
		ep := &endpoints[i]
		name, err := normalize(ep.DNSName)
		if err != nil {
			errs = append(errs, fmt.Errorf("endpoint %d: %w", i, err))
			continue
		}
		byName[name] = append(byName[name], ep)
	}
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	slices.Sort(names)

	x.mu.Lock()
	defer x.mu.Unlock()
	for _, name := range x.objects[object] {
		if _, still := byName[name]; !still {
			x.removeSource(name, object)
		}
	}
	for _, name := range names {
		if err := x.setSource(name, source{object: object, endpoints: byName[name], clusters: clusters}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(names) == 0 {
		delete(x.objects, object)
	} else {
		x.objects[object] = names
	}
	x.version.Add(1)
	return errors.Join(errs...)
}

// Delete removes everything object contributed.
func (x *Index) Delete(object string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	names, ok := x.objects[object]
	if !ok {
		return
	}
	for _, name := range names {
		x.removeSource(name, object)
	}
	delete(x.objects, object)
	x.version.Add(1)
}

func (x *Index) setSource(name string, s source) error {
	n := x.names[name]
	if n == nil {
		n = &node{}
		x.names[name] = n
	}
	i, found := slices.BinarySearchFunc(n.sources, s.object, func(s source, key string) int {
		return strings.Compare(s.object, key)
	})
	if found {
		n.sources[i] = s
	} else {
		n.sources = slices.Insert(n.sources, i, s)
	}
	return x.rebuild(name, n)
}

func (x *Index) removeSource(name, object string) {
	n := x.names[name]
	if n == nil {
		return
	}
	n.sources = slices.DeleteFunc(n.sources, func(s source) bool { return s.object == object })
	_ = x.rebuild(name, n) // what remains was valid when it was added
}

// rebuild merges the sources of name again and keeps the counts of names
// below each ancestor, which tell an empty non-terminal (NODATA) from a name
// that does not exist (NXDOMAIN).
func (x *Index) rebuild(name string, n *node) error {
	had := n.records != nil
	var err error
	n.records, err = build(name, n.sources, x.cluster, x.defaultTTL)
	has := n.records != nil
	switch {
	case has && !had:
		x.size++
		x.adjustAncestors(name, +1)
	case had && !has:
		x.size--
		x.adjustAncestors(name, -1)
	}
	x.sync(name, n)
	return err
}

func (x *Index) adjustAncestors(name string, delta int) {
	for parent, ok := parentOf(name); ok; parent, ok = parentOf(parent) {
		p := x.names[parent]
		if p == nil {
			p = &node{}
			x.names[parent] = p
		}
		p.below += delta
		x.sync(parent, p)
	}
}

// sync shows a node's state to lookups and forgets a node that holds
// nothing.
func (x *Index) sync(name string, n *node) {
	if n.records != nil || n.below > 0 {
		x.served[name] = n.records
	} else {
		delete(x.served, name)
	}
	if n.records == nil && n.below == 0 && len(n.sources) == 0 {
		delete(x.names, name)
	}
}

// parentOf returns the name one label up ("b.c." for "a.b.c."), false at the
// root. Names are checked by normalize to hold no escaped dots.
func parentOf(name string) (string, bool) {
	if name == "." {
		return "", false
	}
	i := strings.IndexByte(name, '.')
	if i+1 == len(name) {
		return ".", true
	}
	return name[i+1:], true
}

// normalize turns a DNSEndpoint name into the index's form: lower case, fully
// qualified. Names with escapes (a dot or odd octet inside a label) are
// refused: kfed never writes them and they would need escape-aware label
// splitting everywhere.
func normalize(name string) (string, error) {
	if name == "" {
		return "", errors.New("empty DNS name")
	}
	if strings.ContainsRune(name, '\\') {
		return "", fmt.Errorf("DNS name %q has an escape", name)
	}
	fqdn := dns.Fqdn(strings.ToLower(name))
	if fqdn == "." {
		return "", errors.New("DNS name is the root")
	}
	if _, ok := dns.IsDomainName(fqdn); !ok || strings.Contains(fqdn, "..") {
		return "", fmt.Errorf("invalid DNS name %q", name)
	}
	return fqdn, nil
}
