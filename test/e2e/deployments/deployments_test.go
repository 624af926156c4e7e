package deployments

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/controllers/deployments"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/test/framework"
)

// wantCopies waits until name's copies have want replicas, in member
// order, or as a multiset when anyOrder.
func wantCopies(t testing.TB, f *framework.Federation, ns, name string, want []int32, anyOrder bool, within time.Duration) {
	t.Helper()
	framework.Eventually(t, within, func(ctx context.Context) error {
		return fedtest.CopiesAre(ctx, f, ns, name, want, anyOrder)
	})
}

// wantCopiesStill checks once that the copies have not moved: what a wrong
// reconcile would have written by now. The read itself may take a while on
// a loaded machine; only what it returns is judged.
func wantCopiesStill(t testing.TB, f *framework.Federation, ns, name string, want []int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := fedtest.CopiesAre(ctx, f, ns, name, want, false); err != nil {
		t.Fatal(err)
	}
}

// wantDeploymentCondition waits for the control-plane Deployment's kfed
// condition.
func wantDeploymentCondition(t testing.TB, c client.Client, key client.ObjectKey, typ appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason string, within time.Duration) {
	t.Helper()
	framework.Eventually(t, within, func(ctx context.Context) error {
		var d appsv1.Deployment
		if err := c.Get(ctx, key, &d); err != nil {
			return err
		}
		for _, cond := range d.Status.Conditions {
			if cond.Type == typ {
				if cond.Status != status || cond.Reason != reason {
					return fmt.Errorf("Deployment %s condition %s = %s %s: %s, want %s %s", key, typ, cond.Status, cond.Reason, cond.Message, status, reason)
				}
				return nil
			}
		}
		return fmt.Errorf("Deployment %s has no condition %s: %+v", key, typ, d.Status.Conditions)
	})
}

// wantDeploymentEvent waits for an Event of reason about Deployment key in
// the control plane.
func wantDeploymentEvent(t testing.TB, f *framework.Federation, key client.ObjectKey, typ, reason string) {
	t.Helper()
	framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
		evs, err := f.Clientset("federation").EventsV1().Events(key.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == "Deployment" && e.Regarding.Name == key.Name && e.Reason == reason && e.Type == typ {
				return nil
			}
		}
		return fmt.Errorf("no %s Event %s for Deployment %s among %d", typ, reason, key, len(evs.Items))
	})
}

func kubectl(t testing.TB, f *framework.Federation, args ...string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(framework.BinDir(t), "kubectl"),
		append([]string{"--kubeconfig", f.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// federatedDeployment (TestFederatedDeployment) runs the federated
// Deployment's user journey on three members with their own controller
// managers, schedulers and KWOK nodes: plan, copy, sum the status, follow
// changed preferences, recreate a copy deleted by hand, refuse bad
// preferences and foreign Deployments, and delete with and without
// orphaning; it unjoins cluster-3 last and joins it again at its end.
func federatedDeployment(t *testing.T, f *framework.Federation) {
	startController(t, f, manager.Options{})
	fed := f.Client("federation")
	for _, m := range fedtest.MemberNames {
		fedtest.WantCondition(t, fed, m, kfedv1alpha1.ClusterReady, "True", 30*time.Second)
	}
	const ns = "shop"
	deleteDeploymentsAtEnd(t, f, ns, "quota")
	fedtest.Create(t, fed, framework.Namespace(ns))
	web := fedtest.FederatedDeployment(ns, "web", 50, `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`)
	key := client.ObjectKeyFromObject(web)

	t.Run("50 replicas with equal weights run as 16, 17 and 17 and the control plane shows them ready", func(t *testing.T) {
		fedtest.Create(t, fed, web)
		wantCopies(t, f, ns, "web", []int32{16, 17, 17}, true, 30*time.Second)
		for _, m := range fedtest.MemberNames {
			var d appsv1.Deployment
			if err := f.Client(m).Get(context.Background(), key, &d); err != nil {
				t.Fatal(err)
			}
			if d.Labels[kfedv1alpha1.LabelManagedBy] != "kfed" || d.Labels[kfedv1alpha1.LabelFederation] != "fed" ||
				d.Annotations[kfedv1alpha1.AnnotationOrigin] != "shop/web" {
				t.Errorf("copy in %s has labels %v and annotations %v, want kfed's marks", m, d.Labels, d.Annotations)
			}
		}
		framework.Eventually(t, 90*time.Second, func(ctx context.Context) error {
			var d appsv1.Deployment
			if err := fed.Get(ctx, key, &d); err != nil {
				return err
			}
			st := d.Status
			if st.Replicas != 50 || st.ReadyReplicas != 50 || st.AvailableReplicas != 50 || st.UpdatedReplicas != 50 || st.ObservedGeneration != d.Generation {
				return fmt.Errorf("control-plane status %+v, want 50 of everything at generation %d", st, d.Generation)
			}
			return nil
		})
		wantDeploymentCondition(t, fed, key, kfedv1alpha1.DeploymentSynced, corev1.ConditionTrue, deployments.ReasonSynced, 10*time.Second)
		out := kubectl(t, f, "--context", "federation", "get", "deploy", "-n", ns, "web", "--no-headers")
		if fields := strings.Fields(out); len(fields) < 4 || fields[1] != "50/50" || fields[2] != "50" || fields[3] != "50" {
			t.Errorf("kubectl get deploy: %q, want READY 50/50, UP-TO-DATE 50, AVAILABLE 50", out)
		}
		wantDeploymentEvent(t, f, key, corev1.EventTypeNormal, "CopyCreated")
		if out := kubectl(t, f, "--context", "federation", "describe", "deploy", "-n", ns, "web"); !strings.Contains(out, "cluster-1") {
			t.Errorf("kubectl describe does not show the clusters:\n%s", out)
		}
	})

	svc := fedtest.FederatedService(ns, "web")
	fedtest.DeleteServicesAtEnd(t, f, client.ObjectKeyFromObject(svc))
	t.Run("the Service selecting it weighs each cluster by its ready replicas", func(t *testing.T) {
		fedtest.Create(t, fed, svc)
		wantWeightsAreReady(t, f, ns, "web", 60*time.Second)
	})

	t.Run("changed preferences move the copies: a heavy weight on cluster-1 takes all (scenario 5)", func(t *testing.T) {
		setPreferences(t, fed, key, `{"rebalance": true, "clusters": {"cluster-1": {"weight": 1000000}, "cluster-2": {"weight": 1}, "cluster-3": {"weight": 1}}}`)
		wantCopies(t, f, ns, "web", []int32{50, 0, 0}, false, 30*time.Second)
		fedtest.WantWeights(t, f, client.ObjectKeyFromObject(svc), map[string]int{"cluster-1": 50, "cluster-2": 0, "cluster-3": 0}, 60*time.Second)
	})

	t.Run("a cap on cluster-3 with equal weights plans 16, 17, 17 with cluster-3 at most 20 (scenario 4)", func(t *testing.T) {
		setPreferences(t, fed, key, `{"rebalance": true, "clusters": {"*": {"weight": 1}, "cluster-3": {"maxReplicas": 20, "weight": 1}}}`)
		wantCopies(t, f, ns, "web", []int32{16, 17, 17}, true, 30*time.Second)
	})

	t.Run("without rebalance running replicas stay where they are and new ones go to the others (scenario 7)", func(t *testing.T) {
		setPreferences(t, fed, key, `{"rebalance": true, "clusters": {"cluster-1": {"weight": 1}}}`)
		wantCopies(t, f, ns, "web", []int32{50, 0, 0}, false, 30*time.Second)
		setPreferences(t, fed, key, `{"rebalance": false, "clusters": {"*": {"weight": 1}}}`)
		time.Sleep(2 * time.Second) // give a wrong reconcile the chance to move them
		wantCopiesStill(t, f, ns, "web", []int32{50, 0, 0})
		scale(t, fed, key, 80)
		wantCopies(t, f, ns, "web", []int32{50, 15, 15}, false, 30*time.Second)
		scale(t, fed, key, 50)
		setPreferences(t, fed, key, `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`)
		wantCopies(t, f, ns, "web", []int32{16, 17, 17}, true, 30*time.Second)
	})

	t.Run("a ReplicaSet made for it in the control plane is warned about", func(t *testing.T) {
		var d appsv1.Deployment
		if err := fed.Get(context.Background(), key, &d); err != nil {
			t.Fatal(err)
		}
		// What a Deployment controller running in the control plane would make.
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-5d4f8c", OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(&d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
			Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(0)), Selector: d.Spec.Selector, Template: d.Spec.Template},
		}
		fedtest.Create(t, fed, rs)
		wantDeploymentCondition(t, fed, key, kfedv1alpha1.DeploymentControlPlaneWorkloads, corev1.ConditionTrue, deployments.ReasonDeploymentCtrl, 20*time.Second)
		wantDeploymentEvent(t, f, key, corev1.EventTypeWarning, deployments.ReasonDeploymentCtrl)
		if err := fed.Delete(context.Background(), rs); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
			if err := fed.Get(ctx, key, &d); err != nil {
				return err
			}
			for _, c := range d.Status.Conditions {
				if c.Type == kfedv1alpha1.DeploymentControlPlaneWorkloads {
					return fmt.Errorf("condition %s still there", c.Type)
				}
			}
			return nil
		})
	})

	t.Run("a copy deleted by hand is made again", func(t *testing.T) {
		before, err := fedtest.CopyReplicas(context.Background(), f, ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Client("cluster-2").Delete(context.Background(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}); err != nil {
			t.Fatal(err)
		}
		wantCopies(t, f, ns, "web", before, false, 30*time.Second)
	})

	t.Run("bad preferences are reported and the copies keep their replicas", func(t *testing.T) {
		before, err := fedtest.CopyReplicas(context.Background(), f, ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		setPreferences(t, fed, key, `{"clusters": {"*": {"weight": 1, "maxReplica": 3}}}`)
		wantDeploymentCondition(t, fed, key, kfedv1alpha1.DeploymentSynced, corev1.ConditionFalse, deployments.ReasonInvalidPreferences, 20*time.Second)
		wantDeploymentEvent(t, f, key, corev1.EventTypeWarning, deployments.ReasonInvalidPreferences)
		scale(t, fed, key, 30)
		time.Sleep(2 * time.Second) // give a wrong reconcile the chance to write
		wantCopiesStill(t, f, ns, "web", before)
		setPreferences(t, fed, key, `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`)
		wantCopies(t, f, ns, "web", []int32{10, 10, 10}, false, 30*time.Second)
		wantDeploymentCondition(t, fed, key, kfedv1alpha1.DeploymentSynced, corev1.ConditionTrue, deployments.ReasonSynced, 20*time.Second)
	})

	t.Run("a member Deployment kfed did not make is a conflict until the user lets kfed adopt it", func(t *testing.T) {
		mine := fedtest.Deployment(ns, "api", "api", "", 7)
		fedtest.Create(t, f.Client("cluster-2"), mine)
		api := fedtest.FederatedDeployment(ns, "api", 4, `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`)
		fedtest.Create(t, fed, api)
		apiKey := client.ObjectKeyFromObject(api)
		wantDeploymentCondition(t, fed, apiKey, kfedv1alpha1.DeploymentSynced, corev1.ConditionFalse, deployments.ReasonMemberConflict, 20*time.Second)
		wantDeploymentEvent(t, f, apiKey, corev1.EventTypeWarning, deployments.ReasonMemberConflict)
		wantCopies(t, f, ns, "api", []int32{2, 7, 2}, false, 20*time.Second)

		patchAnnotation(t, fed, apiKey, kfedv1alpha1.AnnotationAdoptExisting, "true")
		wantCopies(t, f, ns, "api", []int32{1, 2, 1}, true, 20*time.Second)
		wantDeploymentCondition(t, fed, apiKey, kfedv1alpha1.DeploymentSynced, corev1.ConditionTrue, deployments.ReasonSynced, 20*time.Second)

		// Deleting it lets go of the adopted one, and deletes those kfed made.
		before, err := fedtest.CopyReplicas(context.Background(), f, ns, "api")
		if err != nil {
			t.Fatal(err)
		}
		if err := fed.Delete(context.Background(), api); err != nil {
			t.Fatal(err)
		}
		wantCopies(t, f, ns, "api", []int32{-1, before[1], -1}, false, 30*time.Second)
		var adopted appsv1.Deployment
		if err := f.Client("cluster-2").Get(context.Background(), apiKey, &adopted); err != nil {
			t.Fatal(err)
		}
		if _, ok := adopted.Labels[kfedv1alpha1.LabelFederation]; ok {
			t.Errorf("the adopted Deployment still carries kfed's labels: %v", adopted.Labels)
		}
	})

	t.Run("a member that refuses the copy is retried and its share runs elsewhere meanwhile", func(t *testing.T) {
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: "quota", Name: "no-deployments"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/deployments.apps": resource.MustParse("0")}},
		}
		fedtest.Create(t, f.Client("cluster-2"), framework.Namespace("quota"), quota)
		// The API server enforces a quota once the member's quota controller
		// has set its status: before that, a copy would get in (seen under
		// load in make test).
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			var q corev1.ResourceQuota
			if err := f.Client("cluster-2").Get(ctx, client.ObjectKeyFromObject(quota), &q); err != nil {
				return err
			}
			if _, ok := q.Status.Hard["count/deployments.apps"]; !ok {
				return errors.New("the quota controller has not counted the quota yet")
			}
			return nil
		})
		fedtest.Create(t, fed, framework.Namespace("quota"))
		cache := fedtest.FederatedDeployment("quota", "cache", 6, `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`)
		fedtest.Create(t, fed, cache)
		cacheKey := client.ObjectKeyFromObject(cache)
		wantCopies(t, f, "quota", "cache", []int32{3, -1, 3}, false, 30*time.Second)
		wantDeploymentCondition(t, fed, cacheKey, kfedv1alpha1.DeploymentSynced, corev1.ConditionFalse, deployments.ReasonMemberWriteFailed, 10*time.Second)
		wantDeploymentEvent(t, f, cacheKey, corev1.EventTypeWarning, deployments.ReasonMemberWriteFailed)
		if err := f.Client("cluster-2").Delete(context.Background(), quota); err != nil {
			t.Fatal(err)
		}
		wantCopies(t, f, "quota", "cache", []int32{2, 2, 2}, false, 60*time.Second)
		wantDeploymentCondition(t, fed, cacheKey, kfedv1alpha1.DeploymentSynced, corev1.ConditionTrue, deployments.ReasonSynced, 10*time.Second)
	})

	t.Run("kubectl delete --cascade=orphan leaves the copies running", func(t *testing.T) {
		kubectl(t, f, "--context", "federation", "delete", "deploy", "-n", ns, "web", "--cascade=orphan", "--wait=true", "--timeout=30s")
		wantCopiesStill(t, f, ns, "web", []int32{10, 10, 10})
		var d appsv1.Deployment
		if err := f.Client("cluster-1").Get(context.Background(), key, &d); err != nil {
			t.Fatal(err)
		}
		if _, ok := d.Annotations[kfedv1alpha1.AnnotationOrigin]; ok {
			t.Errorf("an orphaned copy still points at its origin: %v", d.Annotations)
		}
	})

	t.Run("kubectl delete deletes the copies", func(t *testing.T) {
		db := fedtest.FederatedDeployment(ns, "db", 3, `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`)
		fedtest.Create(t, fed, db)
		wantCopies(t, f, ns, "db", []int32{1, 1, 1}, false, 30*time.Second)
		kubectl(t, f, "--context", "federation", "delete", "deploy", "-n", ns, "db", "--wait=true", "--timeout=30s")
		wantCopies(t, f, ns, "db", []int32{-1, -1, -1}, false, 30*time.Second)
	})

	t.Run("unjoining a member deletes the copies kfed made there and plans their replicas on the others", func(t *testing.T) {
		batch := fedtest.FederatedDeployment(ns, "batch", 4, `{"rebalance": true, "clusters": {"*": {"weight": 1}}}`)
		fedtest.Create(t, fed, batch)
		wantCopies(t, f, ns, "batch", []int32{1, 1, 2}, true, 30*time.Second)
		rejoinAtEnd(t, f, "cluster-3")
		if err := fed.Delete(context.Background(), &kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster-3"}}); err != nil {
			t.Fatal(err)
		}
		wantCopies(t, f, ns, "batch", []int32{2, 2, -1}, false, 30*time.Second)
	})
}

// wantWeightsAreReady waits until the Service's DNSEndpoint weighs every
// member by the ready replicas of the Deployment's copy there, and every
// copy is fully ready.
func wantWeightsAreReady(t testing.TB, f *framework.Federation, ns, name string, within time.Duration) {
	t.Helper()
	framework.Eventually(t, within, func(ctx context.Context) error {
		got, err := fedtest.WeightsOf(ctx, f.Client("federation"), client.ObjectKey{Namespace: ns, Name: name})
		if err != nil {
			return err
		}
		want := map[string]int{}
		for _, m := range fedtest.MemberNames {
			var d appsv1.Deployment
			if err := f.Client(m).Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
				return err
			}
			if d.Status.ReadyReplicas != *d.Spec.Replicas {
				return fmt.Errorf("copy in %s has %d of %d ready", m, d.Status.ReadyReplicas, *d.Spec.Replicas)
			}
			want[m] = int(d.Status.ReadyReplicas)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("DNSEndpoint weighs %v, want the ready replicas %v", got, want)
		}
		return nil
	})
}

func patchAnnotation(t testing.TB, c client.Client, key client.ObjectKey, name, value string) {
	t.Helper()
	var d appsv1.Deployment
	if err := c.Get(context.Background(), key, &d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Annotations[name] = value
	if err := c.Patch(context.Background(), &d, patch); err != nil {
		t.Fatal(err)
	}
}

func setPreferences(t testing.TB, c client.Client, key client.ObjectKey, prefs string) {
	t.Helper()
	patchAnnotation(t, c, key, kfedv1alpha1.AnnotationReplicaPreferences, prefs)
}

func scale(t testing.TB, c client.Client, key client.ObjectKey, replicas int32) {
	t.Helper()
	var d appsv1.Deployment
	if err := c.Get(context.Background(), key, &d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = &replicas
	if err := c.Patch(context.Background(), &d, patch); err != nil {
		t.Fatal(err)
	}
}
