package kfed

import (
	"strings"
	"testing"

	"github.com/miekg/dns"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/plugin/kfed/index"
	"github.com/kfed-io/kfed/policy/tenancy"
	"github.com/kfed-io/kfed/test/oldlayout"
)

func TestCacheKeepsTheKeyVersionAndRecordsOfADNSEndpoint(t *testing.T) {
	obj := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: "demo", UID: "u-1", ResourceVersion: "42",
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...the whole object...}"},
		},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: demoEndpoints()},
	}
	if err := oldlayout.Upgrade(obj); err != nil {
		t.Fatal(err)
	}
	x := index.New("cluster-1", 30)
	transform := cacheEndpoint(x, tenancy.NewEndpoints("dev", nil))
	got, err := transform(obj)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := got.(*cachedEndpoint)
	if !ok {
		t.Fatalf("cached %T, want *cachedEndpoint", got)
	}
	again, _ := transform(c)
	tomb := cache.DeletedFinalStateUnknown{Key: "default/demo", Obj: c}
	tombAgain, _ := transform(tomb)
	key, keyErr := cache.MetaNamespaceKeyFunc(c)
	m, metaErr := meta.Accessor(c)
	tests := []struct {
		name string
		ok   bool
	}{
		{"the informer's key is namespace/name", keyErr == nil && key == "default/demo" && c.key == key},
		{"the resourceVersion is kept for the serial", metaErr == nil && m.GetResourceVersion() == "42" && c.resourceVersion == "42"},
		{"every name is parsed once, into the index's records", c.object.Err() == nil && c.err == nil && c.object.Len() == demoNames()},
		{"a cached object is not transformed again", again == any(c)},
		{"a tombstone passes through", tombAgain == any(tomb)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Errorf("cached %+v (key %q, %v; meta %v)", c, key, keyErr, metaErr)
			}
		})
	}
	if err := x.SetObject(c.key, c.object); err != nil {
		t.Fatal(err)
	}
	if r, _ := x.Lookup(global); r == nil {
		t.Errorf("%s not served from the cached records", global)
	}
}

// demoNames is the number of names demoEndpoints has records at.
func demoNames() int {
	names := map[string]bool{}
	for _, ep := range demoEndpoints() {
		names[ep.DNSName] = true
	}
	return len(names)
}

// cached is obj as the informer hands it to the watcher's handlers: through
// the transform, a tombstone's object too (the cache holds transformed
// objects, and a tombstone carries one of them).
func cached(x *index.Index, obj any) any {
	transform := cacheEndpoint(x, tenancy.NewEndpoints("dev", nil))
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		tomb.Obj, _ = transform(tomb.Obj)
		return tomb
	}
	c, _ := transform(obj)
	return c
}

func TestCacheLeavesOutWhatTheNamespaceMayNotPublish(t *testing.T) {
	intruder := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "intruder", Name: "x", ResourceVersion: "43"},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{
			{DNSName: "demo.default.dev.svc.kfed.test", RecordType: "A", Targets: []string{"198.51.100.66"}},
			{DNSName: "www.kfed.test", RecordType: "A", Targets: []string{"198.51.100.67"}},
			{DNSName: "x.intruder.dev.svc.kfed.test", RecordType: "A", Targets: []string{"198.51.100.68"}},
		}},
	}
	owner := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo", ResourceVersion: "42"},
		Spec:       extdnsv1alpha1.DNSEndpointSpec{Endpoints: demoEndpoints()},
	}
	if err := oldlayout.Upgrade(owner); err != nil {
		t.Fatal(err)
	}
	x := index.New("cluster-1", 30)
	transform := cacheEndpoint(x, tenancy.NewEndpoints("dev", []string{"kfed-system"}))
	for _, obj := range []*extdnsv1alpha1.DNSEndpoint{owner, intruder} {
		got, err := transform(obj)
		if err != nil {
			t.Fatal(err)
		}
		c := got.(*cachedEndpoint)
		_ = x.SetObject(c.key, c.object)
		if obj == intruder && len(c.refused) != 2 {
			t.Errorf("refused %v, want the two names of others", c.refused)
		}
	}
	tests := []struct {
		name   string
		lookup string
		want   bool
	}{
		{"the owner's name keeps only the owner's addresses", global, true},
		{"another namespace's name is not served from the intruder", "www.kfed.test.", false},
		{"the intruder's own name is served", "x.intruder.dev.svc.kfed.test.", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := x.Lookup(tt.lookup)
			if (r != nil) != tt.want {
				t.Fatalf("%s served: %v, want %v", tt.lookup, r != nil, tt.want)
			}
			if r != nil {
				for _, rr := range r.AppendAll(nil, dns.TypeA) {
					if strings.Contains(rr.String(), "198.51.100.66") && tt.lookup == global {
						t.Errorf("%s answers the intruder's address: %s", global, rr)
					}
				}
			}
		})
	}
}
