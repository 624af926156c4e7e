package services

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/test/framework"
)

// TestRejectedShardUpdateKeepsTheClustersRecords: a member that refuses to
// update a shard (here an admission policy freezing Services) is retried and
// reported, and its endpoint stays in DNS meanwhile: one failed write must not
// make the records flap.
func rejectedShardUpdateKeepsTheClustersRecords(t *testing.T, f *framework.Federation) {
	ctx := context.Background()
	fed := f.Client("federation")
	svc := fedtest.FederatedService("default", "steady")
	key := client.ObjectKeyFromObject(svc)
	fedtest.DeleteServicesAtEnd(t, f, key)
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	global := "steady.default.fed.svc.example.com"
	both := []string{global + " A [cluster-1] lb(cluster-1)", global + " A [cluster-2] lb(cluster-2)"}
	for _, w := range both {
		wantRecordsInclude(t, f, key, w)
	}

	// cluster-2 now refuses every update of a Service (status aside).
	member := f.Client("cluster-2")
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-services"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "Services are frozen in this cluster"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-services"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "freeze-services",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := member.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// cluster-2 takes updates again before the Service goes (cleanups run
	// last first) and before the next test on the bed.
	t.Cleanup(func() {
		for _, o := range []client.Object{binding, policy} {
			if err := member.Delete(context.Background(), o); err != nil {
				t.Errorf("deleting %s: %v", o.GetName(), err)
			}
		}
	})
	framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
		var s corev1.Service
		if err := member.Get(ctx, key, &s); err != nil {
			return err
		}
		patch := client.MergeFrom(s.DeepCopy())
		metav1.SetMetaDataLabel(&s.ObjectMeta, "probe", time.Now().Format("150405.000000"))
		if err := member.Patch(ctx, &s, patch); err == nil || !strings.Contains(err.Error(), "frozen") {
			return fmt.Errorf("policy not in force yet (%v)", err)
		}
		return nil
	})

	// A change that every shard must take: cluster-2 refuses it.
	patch := client.MergeFrom(svc.DeepCopy())
	metav1.SetMetaDataLabel(&svc.ObjectMeta, "tier", "web")
	if err := fed.Patch(ctx, svc, patch); err != nil {
		t.Fatal(err)
	}
	fedtest.WantServiceCondition(t, fed, key, kfedv1alpha1.ConditionPlaced, "False", "cluster cluster-2 rejected the shard update")
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error { return fedtest.WantEvent(ctx, f, svc, "ShardRejected") })
	// Several retries later, cluster-2's records are still there.
	time.Sleep(2 * time.Second)
	got, err := records(ctx, f, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range both {
		if !slices.Contains(got, w) {
			t.Errorf("records lost %q while cluster-2 refused an update:\n%s", w, strings.Join(got, "\n"))
		}
	}
}
