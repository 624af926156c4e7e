package inventory

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/placement"
)

func TestDecisionsListThePlacedClusters(t *testing.T) {
	joined := func(name, region string) *kfedv1alpha1.Cluster {
		return &kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kfedv1alpha1.ClusterSpec{
			Region: region, KubeconfigSecretRef: kfedv1alpha1.SecretKeyRef{Namespace: "kfed-system", Name: "s-" + name}}}
	}
	fromProfile := joined("c3", "europe-west1")
	fromProfile.Spec.ClusterProfileRef = &kfedv1alpha1.ObjectRef{Namespace: "fleet", Name: "c3"}
	tests := []struct {
		name        string
		annotations map[string]string
		decision    []string // clusters of PlacementDecision "pick", nil: none exists
		want        []string
		wantDecided string
	}{
		{name: "every cluster without placement annotations",
			want: []string{"kfed-system/c1", "kfed-system/c2", "fleet/c3"}},
		{name: "the selector's clusters", annotations: map[string]string{placement.AnnotationClusterSelector: "kfed.io/region=us-east1"},
			want: []string{"kfed-system/c1", "kfed-system/c2"}},
		{name: "a named decision's clusters, recorded on the object", annotations: map[string]string{placement.AnnotationPlacementDecision: "pick"},
			decision: []string{"c3", "c1", "c3"}, want: []string{"kfed-system/c1", "fleet/c3"}, wantDecided: "pick=c1,c3"},
		{name: "a missing decision places nowhere", annotations: map[string]string{placement.AnnotationPlacementDecision: "pick"},
			want: []string{}, wantDecided: "pick="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kfedv1alpha1.AddToScheme, inventoryv1alpha1.AddToScheme} {
				if err := add(s); err != nil {
					t.Fatal(err)
				}
			}
			ann := map[string]string{"kfed.io/federated": "true"}
			for k, v := range tt.annotations {
				ann[k] = v
			}
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: ann}}
			objs := []client.Object{svc, joined("c1", "us-east1"), joined("c2", "us-east1"), fromProfile}
			if tt.decision != nil {
				pd := &inventoryv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "pick"}}
				for _, c := range tt.decision {
					pd.Decisions = append(pd.Decisions, inventoryv1alpha1.ClusterDecision{ClusterProfileRef: inventoryv1alpha1.ClusterProfileReference{Name: c}})
				}
				objs = append(objs, pd)
			}
			fed := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
			d := &Decisions{Fed: fed, Kind: "service", ProfileNamespace: "kfed-system"}
			ctx := context.Background()
			if _, err := d.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(svc)}); err != nil {
				t.Fatal(err)
			}
			var pd inventoryv1alpha1.PlacementDecision
			if err := fed.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "service-web"}, &pd); err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, dec := range pd.Decisions {
				got = append(got, dec.ClusterProfileRef.Namespace+"/"+dec.ClusterProfileRef.Name)
			}
			if !slices.Equal(got, tt.want) || pd.SchedulerName != SchedulerName || !metav1.IsControlledBy(&pd, svc) {
				t.Errorf("decision %v (scheduler %q, owners %v), want %v by kfed, owned by the Service", got, pd.SchedulerName, pd.OwnerReferences, tt.want)
			}
			if err := fed.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
				t.Fatal(err)
			}
			if got := svc.Annotations[placement.AnnotationDecided]; got != tt.wantDecided {
				t.Errorf("recorded %q, want %q", got, tt.wantDecided)
			}
		})
	}
}
