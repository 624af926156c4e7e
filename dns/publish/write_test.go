package publish

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, extdnsv1alpha1.AddToScheme, kfedv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// countWrites counts the requests that change objects.
func countWrites(c client.WithWatch, n *int) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			*n++
			return c.Apply(ctx, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			*n++
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			*n++
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			*n++
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
}

// A DNSEndpoint is written once, a reconcile that changes nothing sends no
// request, and one of the same name that is not kfed's is never touched.
func TestWriteAppliesOnlyWhatChangedAndOnlyKfedsOwn(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1"}}
	rec := Record{
		Key: types.NamespacedName{Namespace: "shop", Name: "web"}, Owner: svc,
		Endpoints:   AddressEndpoints("web.shop.fed.svc.kfed.test", ips("127.1.0.1", "fd00::1"), 30),
		Clusters:    []dnsendpoint.Cluster{{Name: "c1", Region: "r", Addresses: ips("127.1.0.1", "fd00::1"), Weight: 1}},
		Annotations: map[string]string{"kfed.io/health-check": "tcp"},
	}
	writes := 0
	c := countWrites(fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(svc).Build(), &writes)
	p := Publisher{Client: c, Federation: "fed", Namespace: "kfed-system"}
	ctx := context.Background()

	got, op, err := p.Write(ctx, nil, rec)
	if err != nil || op != Created {
		t.Fatalf("first write: %v, %q", err, op)
	}
	if len(got.Spec.Endpoints) != 2 || got.Spec.Endpoints[0].RecordType != "A" || got.Spec.Endpoints[1].RecordType != "AAAA" {
		t.Errorf("endpoints %+v, want one A and one AAAA", got.Spec.Endpoints)
	}
	if got.Labels[kfedv1alpha1.LabelFederation] != "fed" || len(got.OwnerReferences) != 1 || got.Annotations[dnsendpoint.AnnotationClusters] == "" {
		t.Errorf("written %+v: want the federation's labels, the Service as owner and the cluster table", got.ObjectMeta)
	}
	writes = 0
	if _, op, err := p.Write(ctx, got, rec); err != nil || op != Unchanged || writes != 0 {
		t.Errorf("unchanged write: %v, %q, %d requests; want none", err, op, writes)
	}
	rec.Annotations = nil
	if got, op, err = p.Write(ctx, got, rec); err != nil || op != Updated {
		t.Fatalf("changed write: %v, %q", err, op)
	}
	if _, ok := got.Annotations["kfed.io/health-check"]; ok {
		t.Error("a health setting kfed no longer says stayed on the DNSEndpoint")
	}

	theirs := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", Labels: map[string]string{"team": "shop"}}}
	if err := c.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	writes = 0
	other := rec
	other.Key.Name = "api"
	// One the cache has not seen yet is the API server's to refuse: the
	// fake client does not keep an apply's resourceVersion precondition
	// (test/e2e/services covers it on a real one).
	if _, _, err := p.Write(ctx, theirs, other); err == nil || writes != 0 {
		t.Errorf("a DNSEndpoint kfed did not write: err %v, %d requests; want refused untouched", err, writes)
	}
}

// Delete removes kfed's DNSEndpoint for the object and marks the deletion;
// another object's, or one kfed did not write, stays.
func TestDeleteOnlyKfedsOwn(t *testing.T) {
	mine := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: "gateway.shop.front", UID: "e1",
		Labels: dnsendpoint.Selector("fed"), Annotations: map[string]string{kfedv1alpha1.AnnotationHostnamesOf: "Gateway shop/front"}}}
	theirs := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: map[string]string{"team": "shop"}}}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(mine, theirs).Build()
	p := Publisher{Client: c, Federation: "fed", Namespace: "kfed-system"}
	ctx := context.Background()
	tests := []struct {
		name        string
		key         types.NamespacedName
		origin      string
		wantDeleted bool
	}{
		{"another object's stays", client.ObjectKeyFromObject(mine), "Gateway shop/back", false},
		{"one kfed did not write stays", client.ObjectKeyFromObject(theirs), "", false},
		{"the object's own goes", client.ObjectKeyFromObject(mine), "Gateway shop/front", true},
	}
	for _, tt := range tests {
		deleted, err := p.Delete(ctx, tt.key, tt.origin, "")
		if err != nil || deleted != tt.wantDeleted {
			t.Errorf("%s: deleted %v, err %v", tt.name, deleted, err)
		}
		if err := c.Get(ctx, tt.key, &extdnsv1alpha1.DNSEndpoint{}); apierrors.IsNotFound(err) != tt.wantDeleted {
			t.Errorf("%s: after Delete, Get says %v", tt.name, err)
		}
	}
	var marker extdnsv1alpha1.DNSEndpoint
	if err := c.Get(ctx, types.NamespacedName{Namespace: "kfed-system", Name: dnsendpoint.SerialMarker("fed")}, &marker); err != nil {
		t.Fatal(err)
	}
	if got := marker.Annotations[dnsendpoint.AnnotationLastDeleted]; got != "kfed-system/gateway.shop.front e1" {
		t.Errorf("serial marker says %q, want the deleted DNSEndpoint and its UID", got)
	}
}
