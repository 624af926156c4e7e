package services

import (
	"context"
	"fmt"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/test/framework"
)

func badInputIsReportedAndChangesNothing(t *testing.T, f *framework.Federation) {
	ctx := context.Background()
	fed := f.Client("federation")
	// The Services of cluster-2's own users, "clash" and the released
	// "twin", go after the federated ones (cleanups run last first).
	deleteMemberServicesAtEnd(t, f.Client("cluster-2"), client.ObjectKey{Namespace: "default", Name: "clash"},
		client.ObjectKey{Namespace: "default", Name: "twin"})
	fedtest.DeleteServicesAtEnd(t, f, client.ObjectKey{Namespace: "default", Name: "ext"}, client.ObjectKey{Namespace: "default", Name: "placed"},
		client.ObjectKey{Namespace: "default", Name: "clash"})

	t.Run("ExternalName Service is refused with a condition and an Event", func(t *testing.T) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "default", Annotations: map[string]string{kfedv1alpha1.AnnotationFederated: "true"}},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.org"},
		}
		if err := fed.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(svc)
		fedtest.WantServiceCondition(t, fed, key, kfedv1alpha1.ConditionValid, "False", "ExternalName cannot be federated")
		framework.Eventually(t, 10*time.Second, func(ctx context.Context) error { return fedtest.WantEvent(ctx, f, svc, "InvalidSpec") })
		if err := f.Client("cluster-1").Get(ctx, key, &corev1.Service{}); !apierrors.IsNotFound(err) {
			t.Errorf("shard created for an ExternalName Service: %v", err)
		}
		if err := fed.Get(ctx, key, &extdnsv1alpha1.DNSEndpoint{}); !apierrors.IsNotFound(err) {
			t.Errorf("DNSEndpoint written for an ExternalName Service: %v", err)
		}
	})

	t.Run("placement naming an unknown cluster warns and places on the known one", func(t *testing.T) {
		svc := fedtest.FederatedService("default", "placed")
		svc.Annotations = map[string]string{kfedv1alpha1.AnnotationClusters: "cluster-1,cluster-9"}
		if err := fed.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(svc)
		fedtest.WantServiceCondition(t, fed, key, kfedv1alpha1.ConditionPlaced, "False", "not joined: cluster-9")
		wantRecords(t, f, key, []string{
			"cluster-1.placed.default.fed.svc.example.com A [cluster-1] lb(cluster-1)",
			"placed.default.fed.svc.example.com A [cluster-1] lb(cluster-1)",
			"placed.default.fed.svc.us-east1.example.com A [cluster-1] lb(cluster-1)",
			"placed.default.fed.svc.us-east1-b.us-east1.example.com A [cluster-1] lb(cluster-1)",
			"placed.default.fed.svc.us-east1-c.us-east1.example.com CNAME placed.default.fed.svc.us-east1.example.com",
			"_http._tcp.placed.default.fed.svc.example.com SRV 0 1 8080 cluster-1.placed.default.fed.svc.example.com.",
		})
		if err := f.Client("cluster-2").Get(ctx, key, &corev1.Service{}); !apierrors.IsNotFound(err) {
			t.Errorf("shard in cluster-2, which the placement leaves out: %v", err)
		}
	})

	t.Run("a different Service already in a member is left alone", func(t *testing.T) {
		theirs := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "clash", Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": "other"},
				Ports: []corev1.ServicePort{{Port: 9090, TargetPort: intstr.FromInt32(9090)}}},
		}
		if err := f.Client("cluster-2").Create(ctx, theirs); err != nil {
			t.Fatal(err)
		}
		svc := fedtest.FederatedService("default", "clash")
		if err := fed.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(svc)
		fedtest.WantServiceCondition(t, fed, key, kfedv1alpha1.ConditionPlaced, "False", "kfed did not create and that differs")
		framework.Eventually(t, 10*time.Second, func(ctx context.Context) error { return fedtest.WantEvent(ctx, f, svc, "ShardConflict") })
		var got corev1.Service
		if err := f.Client("cluster-2").Get(ctx, key, &got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.Type != corev1.ServiceTypeClusterIP || got.Spec.Ports[0].Port != 9090 || got.Labels[kfedv1alpha1.LabelFederation] != "" {
			t.Errorf("kfed changed a Service it does not own: %+v %v", got.Spec, got.Labels)
		}
		// The other cluster still serves it.
		wantRecordsInclude(t, f, key, "clash.default.fed.svc.example.com A [cluster-1] lb(cluster-1)")
	})

	t.Run("a matching Service already in a member is adopted, and released on delete", func(t *testing.T) {
		svc := fedtest.FederatedService("default", "twin")
		theirs := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "twin", Namespace: "default", Labels: map[string]string{"team": "a"}},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: svc.Spec.Selector, Ports: svc.Spec.Ports},
		}
		if err := f.Client("cluster-2").Create(ctx, theirs); err != nil {
			t.Fatal(err)
		}
		if err := fed.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(svc)
		wantRecordsInclude(t, f, key, "twin.default.fed.svc.example.com A [cluster-2] lb(cluster-2)")
		var got corev1.Service
		if err := f.Client("cluster-2").Get(ctx, key, &got); err != nil {
			t.Fatal(err)
		}
		if got.Annotations[kfedv1alpha1.AnnotationAdopted] != "true" || got.UID != theirs.UID {
			t.Fatalf("not adopted in place: uid %s (was %s), annotations %v", got.UID, theirs.UID, got.Annotations)
		}
		if err := fed.Delete(ctx, svc); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
			if err := fed.Get(ctx, key, &corev1.Service{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("federated Service still there: %v", err)
			}
			var after corev1.Service
			if err := f.Client("cluster-2").Get(ctx, key, &after); err != nil {
				return fmt.Errorf("adopted Service was deleted: %v", err)
			}
			if after.Annotations[kfedv1alpha1.AnnotationAdopted] != "" || after.Labels[kfedv1alpha1.LabelFederation] != "" {
				return fmt.Errorf("still marked as kfed's: %v %v", after.Labels, after.Annotations)
			}
			if err := f.Client("cluster-1").Get(ctx, key, &corev1.Service{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the shard kfed created in cluster-1 is still there: %v", err)
			}
			return nil
		})
	})
}

func wantRecordsInclude(t *testing.T, f *framework.Federation, key client.ObjectKey, want string) {
	t.Helper()
	framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
		got, err := records(ctx, f, key)
		if err != nil {
			return err
		}
		for _, l := range got {
			if l == want {
				return nil
			}
		}
		return fmt.Errorf("records lack %q: %v", want, got)
	})
}
