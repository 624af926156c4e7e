package identity

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/controllers/mcs"
	"github.com/kfed-io/kfed/devenv/loopbackgw"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// leaver is the member the test unjoins.
const leaver = "cluster-3"

// memberObjects gives the leaver one object of every kind kfed writes in
// members, besides the bed's demo Service, Gateway and HTTPRoute: a
// federated Deployment's copy, a federated Ingress's copy, and an export
// of cluster-1's as its import (ServiceImport, EndpointSlice and derived
// Service).
func (b *bed) memberObjects(t *testing.T) {
	ctx := context.Background()
	class := loopbackgw.IngressClassName
	for _, o := range []client.Object{
		fedtest.FederatedDeployment("default", "web", 3, `{"clusters": {"*": {"weight": 1}}}`),
		&networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "site", Annotations: map[string]string{"kfed.io/federated": "true"}},
			Spec:       networkingv1.IngressSpec{IngressClassName: &class, Rules: []networkingv1.IngressRule{{Host: "www.kfed.test"}}},
		},
	} {
		if err := b.admin.Create(ctx, o); err != nil {
			t.Fatalf("creating %T: %v", o, err)
		}
	}
	// The export: cluster-1's members run no EndpointSlice controller, so
	// its slice is written here as that controller would.
	exporter := b.member(t, "cluster-1")
	for _, o := range []client.Object{
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
		},
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "hello-1", Labels: map[string]string{discoveryv1.LabelServiceName: "hello"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: new("http"), Port: new(int32(80)), Protocol: new(corev1.ProtocolTCP)}},
		},
		&mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"}},
	} {
		if err := exporter.Create(ctx, o); err != nil {
			t.Fatalf("creating %T in cluster-1: %v", o, err)
		}
	}
	m := b.member(t, leaver)
	want := []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}},
		&gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo-gw"}},
		&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"}},
		&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "site"}},
		&mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: mcs.DerivedName("hello")}},
	}
	framework.Eventually(t, time.Minute, func(ctx context.Context) error {
		for _, o := range want {
			if err := m.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				return fmt.Errorf("%T %s in %s: %w", o, o.GetName(), leaver, err)
			}
		}
		var imported discoveryv1.EndpointSliceList
		if err := m.List(ctx, &imported, client.MatchingLabels{discoveryv1.LabelManagedBy: mcs.ManagedBy}); err != nil {
			return err
		}
		if len(imported.Items) == 0 {
			return fmt.Errorf("no EndpointSlice of the import hello in %s", leaver)
		}
		return nil
	})
}

// member is a client of a member with the bed's administrator credentials.
func (b *bed) member(t *testing.T, name string) client.Client {
	t.Helper()
	return newClient(t, b.d.Cluster(name).Config)
}

// nothingOfKfedsIn looks through every kind the member serves for an object
// with kfed's federation label: after an unjoin there must be none, of any
// kind, whether kfed made it or a member's controller copied the label.
func (b *bed) nothingOfKfedsIn(t *testing.T, name string) {
	t.Helper()
	cfg := b.d.Cluster(name).Config
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := disc.ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var left []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			got, err := meta.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{LabelSelector: kfedv1alpha1.LabelFederation + "=dev"})
			if err != nil {
				t.Fatalf("listing %s in %s: %v", r.Name, name, err)
			}
			for _, o := range got.Items {
				left = append(left, r.Name+" "+o.Namespace+"/"+o.Name)
			}
		}
	}
	if len(left) > 0 {
		t.Errorf("kfed's objects still in unjoined %s: %s", name, strings.Join(left, ", "))
	}
}
