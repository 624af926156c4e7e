// Package index keeps the DNS records of a federation's DNSEndpoints in
// memory, by name, for the kfed CoreDNS plugin.
//
// The index is rebuilt piecewise: when one DNSEndpoint changes, only the names
// it touches are merged again, so that a federation with many Services pays
// per change, never per query. A name's addresses are kept packed, a few
// bytes each, and made into resource records for each answer; its other
// records (CNAME, SRV, TXT) are built once and shared by every answer that
// carries them. Nothing here builds messages, and nothing a lookup returns
// may be modified.
package index

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/internal/geo"
)

// MaxChain bounds the CNAMEs of the index's names followed in one answer,
// by the plugin and by kfed explain: a longer chain is left to the
// client's resolver to follow.
const MaxChain = 8

// Index is the record sets of one federation's names, seen from one cluster.
// It is safe for concurrent use: any number of lookups run beside one writer.
//
// It keeps no DNSEndpoint: each object is parsed once (Parse) into the
// packed records of its names, all in one string, which the index serves as
// they are when, as almost always, one object alone has records at a name.
// So a name is held once, and a cache of the DNSEndpoints need keep no more
// than their keys. No key of the index's maps outlives the string it points
// into (a name's key is the name of the Records it maps to; the others are
// copies), so that an object replaced or deleted is garbage at once.
type Index struct {
	cluster    string
	defaultTTL uint32

	mu sync.RWMutex
	// names is what lookups read: the records of every name that has
	// records.
	names map[string]*Records
	// below counts, for each name with names with records below it, how
	// many, which tells an empty non-terminal (NODATA) from a name that does
	// not exist (NXDOMAIN). Its keys are copies of the ancestors' names and
	// its counts are changed in place: assigning to a map replaces the key
	// it holds with the one given, and a name is a slice of its object's
	// string, which a key would keep alive after the object is gone.
	below map[string]*int32
	// merged holds, for the few names that more than one object has records
	// at, each object's own records, by object key; names holds their merge.
	merged  map[string][]*Records
	objects map[string]*Object // object key → what it contributes
	size    int                // names with records

	version    atomic.Uint32
	derived    derivedCache
	clusterIDs clusterIDs // Parse's, which runs outside mu
}

// New returns an empty index for a plugin running in cluster (empty when it
// runs outside any member cluster), giving endpoints without a recordTTL the
// TTL defaultTTL.
func New(cluster string, defaultTTL uint32) *Index {
	x := &Index{
		cluster:    cluster,
		defaultTTL: defaultTTL,
		names:      map[string]*Records{},
		below:      map[string]*int32{},
		merged:     map[string][]*Records{},
		objects:    map[string]*Object{},
	}
	x.clusterIDs.own = cluster
	return x
}

// Lookup returns the records at name, a fully qualified lower-case name, and
// whether the name exists. A name exists when it has records or a name below
// it has (an empty non-terminal); records is nil for the latter.
func (x *Index) Lookup(name string) (records *Records, exists bool) {
	x.mu.RLock()
	records, exists = x.names[name]
	if !exists {
		_, exists = x.below[name]
	}
	x.mu.RUnlock()
	return records, exists
}

// Inside is the vantage of a client inside the index's own cluster; for an
// index of no cluster, every cluster is ordered by weight.
func (x *Index) Inside() Vantage { return Vantage{places: x.clusterIDs.table.Load()} }

// At is the vantage of a client at p.
func (x *Index) At(p geo.Point) Vantage {
	return Vantage{places: x.clusterIDs.table.Load(), at: geo.Vector(p), located: true}
}

// SetRTTs makes rtts the round-trip times from the index's own cluster to
// the clusters they name (those it does not name are not measured), for
// ordering clusters within a tier (proximity.InsideKey). It publishes a new
// snapshot only when that changes what the index knew: the checkers publish
// RTTs in coarse buckets, so this is rare.
func (x *Index) SetRTTs(rtts map[string]time.Duration) { x.clusterIDs.setRTTs(rtts) }

// Names returns every name with records, and its records, sorted by name:
// a snapshot, taken under the lock and read after it, so that a zone
// transfer never holds up the writer.
func (x *Index) Names() []Named {
	x.mu.RLock()
	out := make([]Named, 0, x.size)
	for name, r := range x.names {
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
// effect all the same. It is Parse, then SetObject.
func (x *Index) Set(object string, endpoints []extdnsv1alpha1.Endpoint, clusters dnsendpoint.Clusters) error {
	return x.SetObject(object, x.Parse(endpoints, clusters))
}

// Parse builds the records of endpoints, whose addresses clusters attributes
// to clusters, for SetObject. It reads nothing of the index but its
// settings, and takes no lock: an informer's transform may call it, so that
// the DNSEndpoint need not be kept once parsed. Nothing of endpoints or
// clusters is kept: the object's one string is new.
func (x *Index) Parse(endpoints []extdnsv1alpha1.Endpoint, clusters dnsendpoint.Clusters) *Object {
	return x.ParseRouted(endpoints, clusters, false)
}

// ParseRouted is Parse for an object whose clusters are ordered by distance
// for clients outside the clusters when byDistance (a Service routed by
// proximity, dnsendpoint.ByDistance), and by weight alone there otherwise.
func (x *Index) ParseRouted(endpoints []extdnsv1alpha1.Endpoint, clusters dnsendpoint.Clusters, byDistance bool) *Object {
	x.clusterIDs.learnPlaces(clusters)
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
	// Each name and its packed records, back to back in one string: the
	// object's names cost no allocation each.
	datas := make([]string, len(names))
	size, n := 0, 0
	for i, name := range names {
		data, err := build(name, byName[name], clusters, x.cluster, x.defaultTTL, &x.clusterIDs, byDistance)
		if err != nil {
			errs = append(errs, err)
		}
		if data != "" {
			datas[i] = data
			size += len(name) + len(data)
			n++
		}
	}
	var blob strings.Builder
	blob.Grow(size) // exactly: the Builder's string is its buffer
	for i, name := range names {
		if datas[i] != "" {
			blob.WriteString(name)
			blob.WriteString(datas[i])
		}
	}
	all := blob.String()
	o := &Object{records: make([]Records, 0, n), err: errors.Join(errs...)}
	for i, name := range names {
		if data := datas[i]; data != "" {
			o.records = append(o.records, Records{s: all[:len(name)+len(data)], n: int32(len(name)), owner: o})
			all = all[len(name)+len(data):]
		}
	}
	return o
}

// SetObject replaces what object (a "namespace/name" key) contributes with
// o, and returns o.Err() with any conflict with other objects' records.
func (x *Index) SetObject(object string, o *Object) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	o.key = object
	var errs []error
	if old := x.objects[object]; old != nil && old != o {
		for _, r := range old.records {
			if name := r.name(); !o.has(name) {
				x.remove(name, object)
			}
		}
	}
	for i := range o.records {
		r := &o.records[i]
		if err := x.put(r.name(), r); err != nil {
			errs = append(errs, err)
		}
	}
	if len(o.records) == 0 {
		delete(x.objects, object)
	} else {
		x.objects[object] = o
	}
	x.version.Add(1)
	x.derived.forget()
	return errors.Join(o.err, errors.Join(errs...))
}

// Delete removes everything object contributed.
func (x *Index) Delete(object string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	o, ok := x.objects[object]
	if !ok {
		return
	}
	for _, r := range o.records {
		x.remove(r.name(), object)
	}
	delete(x.objects, object)
	x.version.Add(1)
	x.derived.forget()
}

// put makes r, one object's records, the records at name, merged with other
// objects' there.
func (x *Index) put(name string, r *Records) error {
	if parts, ok := x.merged[name]; ok {
		i, found := slices.BinarySearchFunc(parts, r.owner.key, byOwner)
		if found {
			parts[i] = r
		} else {
			parts = slices.Insert(parts, i, r)
		}
		x.merged[name] = parts
		return x.merge(name, parts)
	}
	cur := x.names[name]
	switch {
	case cur == nil:
		x.setName(r)
		x.size++
		x.adjustAncestors(name, +1)
	case cur.owner.key == r.owner.key:
		x.setName(r)
	default:
		parts := []*Records{cur, r}
		slices.SortFunc(parts, func(a, b *Records) int { return strings.Compare(a.owner.key, b.owner.key) })
		x.merged[strings.Clone(name)] = parts
		return x.merge(name, parts)
	}
	return nil
}

// remove takes what object has at name away.
func (x *Index) remove(name, object string) {
	if parts, ok := x.merged[name]; ok {
		parts = slices.DeleteFunc(parts, func(r *Records) bool { return r.owner.key == object })
		if len(parts) == 1 {
			delete(x.merged, name)
			x.setName(parts[0])
			return
		}
		x.merged[strings.Clone(name)] = parts // name is the removed object's
		_ = x.merge(name, parts)              // what remains was merged before
		return
	}
	if cur := x.names[name]; cur == nil || cur.owner.key != object {
		return
	}
	delete(x.names, name)
	x.size--
	x.adjustAncestors(name, -1)
}

func byOwner(r *Records, key string) int { return strings.Compare(r.owner.key, key) }

// merge serves the merge of parts, the records of several objects, at name.
func (x *Index) merge(name string, parts []*Records) error {
	r, err := merge(name, parts, x.cluster, x.defaultTTL, &x.clusterIDs)
	if r == nil { // every part has records; kept should a merge have none
		x.names[strings.Clone(name)] = nil
		return err
	}
	x.setName(r)
	return err
}

// adjustAncestors keeps the counts of names below each ancestor of name.
func (x *Index) adjustAncestors(name string, delta int32) {
	for parent, ok := parentOf(name); ok; parent, ok = parentOf(parent) {
		switch n := x.below[parent]; {
		case n == nil: // a new count; delta > 0
			n = new(int32)
			*n = delta
			x.below[strings.Clone(parent)] = n
		case *n+delta <= 0:
			delete(x.below, parent)
		default:
			*n += delta
		}
	}
}

// setName maps r's name to r. The key is r's own name, a slice of the string r
// is in, which lives as long as r does: assigning to a map replaces the key
// it holds, so no key outlives the records it maps to.
func (x *Index) setName(r *Records) {
	x.names[r.name()] = r
}

// derivedCache keeps what readers derive from a name's records and others
// (an SRV answer's additional section), for the index version it was
// computed at: the names asked for since the last change, no more.
type derivedCache struct {
	mu      sync.Mutex
	version uint32
	rrs     map[*Records][]dns.RR
}

// forget drops everything kept: the index changed, and what was derived
// from it may hold records of objects that are gone.
func (d *derivedCache) forget() {
	d.mu.Lock()
	clear(d.rrs)
	d.mu.Unlock()
}

// Derived returns what SetDerived stored for r at version, the index's
// Version when the caller began, and whether it did.
func (x *Index) Derived(r *Records, version uint32) ([]dns.RR, bool) {
	d := &x.derived
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.version != version {
		return nil, false
	}
	rrs, ok := d.rrs[r]
	return rrs, ok
}

// SetDerived stores rrs, derived from r and the index at version, for
// readers that ask again before the index changes. Callers must not modify
// rrs afterwards.
func (x *Index) SetDerived(r *Records, version uint32, rrs []dns.RR) {
	d := &x.derived
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.version != version {
		if version != x.Version() {
			return // stale already
		}
		clear(d.rrs)
		d.version = version
	}
	if d.rrs == nil {
		d.rrs = map[*Records][]dns.RR{}
	}
	d.rrs[r] = rrs
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
