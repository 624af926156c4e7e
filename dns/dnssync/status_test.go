package dnssync

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

// A failed sync leaves its error on the DNSEndpoints it did not publish
// (for their per-provider conditions), and a later success clears it.
func TestMarkPublishedKeepsTheErrorUntilTheGenerationIsPublished(t *testing.T) {
	s := runtime.NewScheme()
	if err := extdnsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	pending := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 2}}
	current := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", Generation: 1},
		Status: extdnsv1alpha1.DNSEndpointStatus{Publishers: []extdnsv1alpha1.PublisherStatus{{Provider: "memory", ObservedGeneration: 1}}}}
	fed := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&extdnsv1alpha1.DNSEndpoint{}).WithObjects(pending, current).Build()
	c := newTestController(newMemProvider(false, nil), nil)
	c.Fed = fed
	ctx := context.Background()
	read := func(name string) extdnsv1alpha1.PublisherStatus {
		t.Helper()
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, &ep); err != nil {
			t.Fatal(err)
		}
		if len(ep.Status.Publishers) != 1 {
			t.Fatalf("%s: publishers %+v", name, ep.Status.Publishers)
		}
		return ep.Status.Publishers[0]
	}
	list := func() []extdnsv1alpha1.DNSEndpoint {
		var l extdnsv1alpha1.DNSEndpointList
		if err := fed.List(ctx, &l); err != nil {
			t.Fatal(err)
		}
		return l.Items
	}

	if _, written := c.markPublished(ctx, list(), nil, nil, errors.New("zone kfed.test refused the batch")); !written {
		t.Fatal("statuses not written")
	}
	if p := read("web"); p.ObservedGeneration != 0 || !strings.Contains(p.Error, "refused the batch") {
		t.Errorf("web after a failed sync: %+v, want the error and no generation", p)
	}
	if p := read("db"); p.ObservedGeneration != 1 || p.Error != "" {
		t.Errorf("db, published before, after a failed sync: %+v, want generation 1 and no error", p)
	}
	c.markPublished(ctx, list(), nil, nil, nil)
	if p := read("web"); p.ObservedGeneration != 2 || p.Error != "" {
		t.Errorf("web after a sync: %+v, want generation 2 and no error", p)
	}
}

func TestStatusErrorIsBounded(t *testing.T) {
	if got := statusError(errors.New(strings.Repeat("x", 5000))); len(got) > maxStatusError+len("…") {
		t.Errorf("status error of %d bytes", len(got))
	}
}
