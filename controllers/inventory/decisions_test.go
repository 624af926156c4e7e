package inventory

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/config/deploymentconfig"
	"github.com/kfed-io/kfed/config/serviceconfig"
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
		{name: "the selector's clusters", annotations: map[string]string{kfedv1alpha1.AnnotationClusterSelector: "kfed.io/region=us-east1"},
			want: []string{"kfed-system/c1", "kfed-system/c2"}},
		{name: "a named decision's clusters, recorded on the object", annotations: map[string]string{kfedv1alpha1.AnnotationPlacementDecision: "pick"},
			decision: []string{"c3", "c1", "c3"}, want: []string{"kfed-system/c1", "fleet/c3"}, wantDecided: "pick=c1,c3"},
		{name: "a missing decision places nowhere", annotations: map[string]string{kfedv1alpha1.AnnotationPlacementDecision: "pick"},
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
			if got := svc.Annotations[kfedv1alpha1.AnnotationPlacementDecided]; got != tt.wantDecided {
				t.Errorf("recorded %q, want %q", got, tt.wantDecided)
			}
		})
	}
}

// A placement its controller refuses is refused by its decision too: the
// Service and Deployment controllers freeze such an object where it is
// placed, and its PlacementDecision stays as it was, with a Warning, rather
// than list every cluster as if the selector were not there.
func TestABadPlacementKeepsTheDecisionAsItIs(t *testing.T) {
	tests := []struct {
		name        string
		kind        string
		annotations map[string]string
		parse       func(map[string]string) error // the controller's reading
	}{
		{name: "a Service's selector that does not parse", kind: "service",
			annotations: map[string]string{kfedv1alpha1.AnnotationClusterSelector: "kfed.io/region in (us-east1"},
			parse:       func(a map[string]string) error { _, err := serviceconfig.Parse(a); return err }},
		{name: "a Service's cluster list naming no cluster", kind: "service",
			annotations: map[string]string{kfedv1alpha1.AnnotationClusters: " , "},
			parse:       func(a map[string]string) error { _, err := serviceconfig.Parse(a); return err }},
		{name: "a Service's other annotation the controller refuses", kind: "service",
			annotations: map[string]string{kfedv1alpha1.AnnotationTTL: "soon"},
			parse:       func(a map[string]string) error { _, err := serviceconfig.Parse(a); return err }},
		{name: "a Deployment's selector that does not parse", kind: "deployment",
			annotations: map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"clusters":{"*":{"weight":1}}}`,
				kfedv1alpha1.AnnotationClusterSelector: "!!"},
			parse: func(a map[string]string) error { _, err := deploymentconfig.Parse(a); return err }},
		{name: "a Deployment's preferences that do not parse", kind: "deployment",
			annotations: map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: `{"clusters":`},
			parse:       func(a map[string]string) error { _, err := deploymentconfig.Parse(a); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.parse(tt.annotations); err == nil {
				t.Fatalf("the controller accepts %v; the row tests nothing", tt.annotations)
			}
			s := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kfedv1alpha1.AddToScheme, inventoryv1alpha1.AddToScheme} {
				if err := add(s); err != nil {
					t.Fatal(err)
				}
			}
			ann := map[string]string{"kfed.io/federated": "true"}
			maps.Copy(ann, tt.annotations)
			meta := metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: ann, UID: "uid-web"}
			var obj client.Object = &corev1.Service{ObjectMeta: meta}
			if tt.kind == "deployment" {
				obj = &appsv1.Deployment{ObjectMeta: meta}
			}
			was := &inventoryv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: DecisionName(tt.kind, "web")},
				Decisions: []inventoryv1alpha1.ClusterDecision{{ClusterProfileRef: inventoryv1alpha1.ClusterProfileReference{Namespace: "kfed-system", Name: "c1"}}}}
			if err := controllerutil.SetControllerReference(obj, was, s); err != nil {
				t.Fatal(err)
			}
			c := func(name string) *kfedv1alpha1.Cluster {
				return &kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kfedv1alpha1.ClusterSpec{Region: "us-east1"}}
			}
			fed := fake.NewClientBuilder().WithScheme(s).WithObjects(obj, was, c("c1"), c("c2"), c("c3")).Build()
			rec := events.NewFakeRecorder(10)
			d := &Decisions{Fed: fed, Recorder: rec, Kind: tt.kind, ProfileNamespace: "kfed-system"}
			ctx := context.Background()
			if _, err := d.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}); err != nil {
				t.Fatal(err)
			}
			var pd inventoryv1alpha1.PlacementDecision
			if err := fed.Get(ctx, client.ObjectKeyFromObject(was), &pd); err != nil {
				t.Fatal(err)
			}
			if got := decidedClusters(&pd); !slices.Equal(got, []string{"c1"}) {
				t.Errorf("decision lists %v, want it kept as it was, [c1]", got)
			}
			select {
			case e := <-rec.Events:
				if !strings.Contains(e, "Warning InvalidPlacement") {
					t.Errorf("event %q, want a Warning InvalidPlacement", e)
				}
			default:
				t.Error("no event, want a Warning InvalidPlacement")
			}
		})
	}
}

// A control plane of its own (an API server and etcd) runs no garbage
// collector: the decision of a Service deleted and made again must pass
// to the new one, and that of a Service gone must go with it.
func TestADecisionOutlivesNoObjectOfItsName(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kfedv1alpha1.AddToScheme, inventoryv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	decision := func(labels map[string]string, ownerKind, ownerName, uid string) *inventoryv1alpha1.PlacementDecision {
		yes := true
		// The fake client sets no creation time; an API server does.
		return &inventoryv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: DecisionName("service", "web"), Labels: labels,
			CreationTimestamp: metav1.Now(),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "v1", Kind: ownerKind, Name: ownerName, UID: types.UID(uid), Controller: &yes}}}}
	}
	kfeds := map[string]string{kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "new", Annotations: map[string]string{kfedv1alpha1.AnnotationFederated: "true"}}}
	tests := []struct {
		name     string
		service  *corev1.Service
		existing *inventoryv1alpha1.PlacementDecision
		// owner is the decision's controller afterwards, "" when it is gone.
		owner   types.UID
		wantErr bool
	}{
		{"an earlier Service's decision passes to the new one", svc, decision(kfeds, "Service", "web", "old"), "new", false},
		{"a decision kfed did not write is left alone", svc, decision(nil, "Service", "web", "old"), "old", true},
		{"a decision of another kind's object is left alone", svc, decision(kfeds, "Deployment", "web", "old"), "old", true},
		{"the decision of a Service gone goes", nil, decision(kfeds, "Service", "web", "old"), "", false},
		{"a decision kfed did not write stays when the Service goes", nil, decision(nil, "Service", "web", "old"), "old", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{tt.existing}
			if tt.service != nil {
				objs = append(objs, tt.service.DeepCopy())
			}
			fed := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
			d := &Decisions{Fed: fed, Kind: "service", ProfileNamespace: "kfed-system", Recorder: events.NewFakeRecorder(10)}
			_, err := d.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "shop", Name: "web"}})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Reconcile: %v, want an error %v", err, tt.wantErr)
			}
			var pd inventoryv1alpha1.PlacementDecision
			err = fed.Get(context.Background(), client.ObjectKeyFromObject(tt.existing), &pd)
			switch {
			case tt.owner == "" && !apierrors.IsNotFound(err):
				t.Errorf("the decision is still there (%v), want it gone", err)
			case tt.owner != "" && err != nil:
				t.Fatalf("the decision: %v", err)
			case tt.owner != "":
				if ref := metav1.GetControllerOf(&pd); ref == nil || ref.UID != tt.owner {
					t.Errorf("the decision's controller is %+v, want UID %s", ref, tt.owner)
				}
			}
		})
	}
}
