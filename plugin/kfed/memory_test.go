package kfed

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/plugin/kfed/index"
	"github.com/kfed-io/kfed/policy/tenancy"
	"github.com/kfed-io/kfed/test/oldlayout"
)

// BenchmarkMemoryPerName measures the live heap the plugin keeps per name
// for 10,000 Services (110,000 names): the DNSEndpoints as the informer's
// cache holds them (decoded from JSON as the API server sends them, then
// through the informer's transform, which parses them into their records:
// objects-B/name) and the index that serves those records (index-B/name).
// It reports bytes a name, not time; resident memory is hack/bench-dns.sh's.
func BenchmarkMemoryPerName(b *testing.B) {
	raw, err := benchJSON(10000)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		objects, all, names := memoryOf(b, raw, "dev")
		b.ReportMetric(float64(objects)/names, "objects-B/name")
		b.ReportMetric(float64(all-objects)/names, "index-B/name")
		b.ReportMetric(float64(all)/names, "B/name")
	}
}

// memoryOf is the live heap the plugin of federation keeps for the
// DNSEndpointList raw: the informer's objects (decoded, then transformed),
// and those with the index that serves them; and the names indexed.
func memoryOf(b *testing.B, raw []byte, federation string) (objects, all uint64, names float64) {
	b.Helper()
	scheme := k8sruntime.NewScheme()
	if err := extdnsv1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	before := liveHeap()
	obj, _, err := decoder.Decode(raw, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	decoded := obj.(*extdnsv1alpha1.DNSEndpointList)
	x := index.New("cluster-1", 30)
	transform := cacheEndpoint(x, tenancy.NewEndpoints(federation, nil))
	cached := make([]*cachedEndpoint, len(decoded.Items))
	for i := range decoded.Items {
		o, _ := transform(&decoded.Items[i])
		cached[i] = o.(*cachedEndpoint)
	}
	decoded = nil
	objects = liveHeap() - before
	for _, c := range cached {
		if err := errors.Join(c.err, x.SetObject(c.key, c.object)); err != nil {
			b.Fatal(err)
		}
	}
	all = liveHeap() - before
	runtime.KeepAlive(cached)
	runtime.KeepAlive(x)
	runtime.KeepAlive(raw) // counted in before: it must stay live to the end
	return objects, all, float64(x.Len())
}

// benchJSON is the JSON of a list of the DNSEndpoints of services
// Services, as the API server sends it.
func benchJSON(services int) ([]byte, error) {
	list := extdnsv1alpha1.DNSEndpointList{TypeMeta: metav1.TypeMeta{APIVersion: "externaldns.k8s.io/v1alpha1", Kind: "DNSEndpointList"}}
	for i := range services {
		// In the layout the services controller writes (ADR 0003).
		list.Items = append(list.Items, extdnsv1alpha1.DNSEndpoint{
			TypeMeta: metav1.TypeMeta{APIVersion: "externaldns.k8s.io/v1alpha1", Kind: "DNSEndpoint"},
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("svc-%d", i), Namespace: "bench", ResourceVersion: fmt.Sprint(1000 + i),
				UID: "0b6e2a4c-1d7e-4b7a-9a8e-3f6f0c2b9d1e", Generation: 1,
				Labels:      map[string]string{"app.kubernetes.io/managed-by": "kfed", "kfed.io/federation": "bench"},
				Annotations: map[string]string{"kfed.io/origin": "bench/svc"},
			},
			Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: syntheticService(fmt.Sprintf("svc-%d", i))},
		})
		if err := oldlayout.Upgrade(&list.Items[i]); err != nil {
			return nil, err
		}
	}
	return json.Marshal(list)
}

// liveHeap is the heap in use after full collections: two, since what
// sync.Pools hold (encoding/json keeps its buffers there) is freed only by
// the second.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
