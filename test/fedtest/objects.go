package fedtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/framework"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FederatedService is a federated LoadBalancer Service with one port.
func FederatedService(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: new(kfedv1alpha1.LoadBalancerClassGlobal),
			Selector:          map[string]string{"app": name},
			Ports:             []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

// ServiceCondition returns the Service's condition typ, or nil.
func ServiceCondition(ctx context.Context, c client.Client, key client.ObjectKey, typ string) (*metav1.Condition, error) {
	var svc corev1.Service
	if err := c.Get(ctx, key, &svc); err != nil {
		return nil, err
	}
	return meta.FindStatusCondition(svc.Status.Conditions, typ), nil
}

// WantEvent checks that the control plane has an Event of reason about obj.
func WantEvent(ctx context.Context, f *framework.Federation, obj client.Object, reason string) error {
	evs, err := f.Clientset("federation").EventsV1().Events(obj.GetNamespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, e := range evs.Items {
		if e.Regarding.Name == obj.GetName() && e.Reason == reason {
			return nil
		}
	}
	return fmt.Errorf("no %s event for %s among %d", reason, obj.GetName(), len(evs.Items))
}

// Sorted returns a sorted copy of s.
func Sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// WantServiceCondition waits until the Service has condition typ with
// status and a message holding msgHas.
func WantServiceCondition(t *testing.T, c client.Client, key client.ObjectKey, typ, status, msgHas string) {
	t.Helper()
	framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
		cond, err := ServiceCondition(ctx, c, key, typ)
		if err != nil {
			return err
		}
		if cond == nil || string(cond.Status) != status || !strings.Contains(cond.Message, msgHas) {
			return fmt.Errorf("%s = %+v, want %s with %q", typ, cond, status, msgHas)
		}
		return nil
	})
}

// ClusterCondition returns the status of the Cluster name's condition cond.
func ClusterCondition(ctx context.Context, c client.Client, name, cond string) (string, error) {
	var cl kfedv1alpha1.Cluster
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &cl); err != nil {
		return "", err
	}
	if got := meta.FindStatusCondition(cl.Status.Conditions, cond); got != nil {
		return string(got.Status), nil
	}
	return "", nil
}

// WantCondition waits until the Cluster name's condition cond is want.
func WantCondition(t testing.TB, fed client.Client, name, cond, want string, within time.Duration) {
	t.Helper()
	framework.Eventually(t, within, func(ctx context.Context) error {
		got, err := ClusterCondition(ctx, fed, name, cond)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("cluster %s %s=%q, want %q", name, cond, got, want)
		}
		return nil
	})
}

// MemberNames are the members of a three-member test federation.
var MemberNames = []string{"cluster-1", "cluster-2", "cluster-3"}

// FederatedDeployment is a control-plane Deployment of replicas opted in
// with preferences.
func FederatedDeployment(ns, name string, replicas int32, preferences string) *appsv1.Deployment {
	d := Deployment(ns, name, name, "", replicas)
	d.Annotations = map[string]string{kfedv1alpha1.AnnotationReplicaPreferences: preferences}
	return d
}

// CopyReplicas returns the spec.replicas of name's copy in each member, -1
// where there is none.
func CopyReplicas(ctx context.Context, f *framework.Federation, ns, name string) ([]int32, error) {
	var out []int32
	for _, m := range MemberNames {
		var d appsv1.Deployment
		err := f.Client(m).Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d)
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, -1)
		case err != nil:
			return nil, err
		default:
			out = append(out, *d.Spec.Replicas)
		}
	}
	return out, nil
}

// TableOf reads the cluster table of a Service's DNSEndpoint.
func TableOf(ctx context.Context, fed client.Client, key client.ObjectKey) (dnsendpoint.Clusters, error) {
	var ep extdnsv1alpha1.DNSEndpoint
	if err := fed.Get(ctx, key, &ep); err != nil {
		return nil, err
	}
	return dnsendpoint.ReadClusters(&ep)
}

// WeightsOf reads the weight of each cluster in a Service's DNSEndpoint.
func WeightsOf(ctx context.Context, fed client.Client, key client.ObjectKey) (map[string]int, error) {
	table, err := TableOf(ctx, fed, key)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for name, c := range table {
		out[name] = c.Weight
	}
	return out, nil
}

// LoadsOf reads the load of each cluster with one in a Service's
// DNSEndpoint.
func LoadsOf(ctx context.Context, fed client.Client, key client.ObjectKey) (map[string]float64, error) {
	table, err := TableOf(ctx, fed, key)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, c := range table {
		if c.Load != nil {
			out[name] = *c.Load
		}
	}
	return out, nil
}

// WantWeights waits until the Service's DNSEndpoint weighs the clusters so.
func WantWeights(t testing.TB, f *framework.Federation, key client.ObjectKey, want map[string]int, within time.Duration) {
	t.Helper()
	framework.Eventually(t, within, func(ctx context.Context) error {
		got, err := WeightsOf(ctx, f.Client("federation"), key)
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("DNSEndpoint %s weighs %v, want %v", key, got, want)
		}
		return nil
	})
}

// CopiesAre returns an error unless name's copies have want replicas (-1:
// no copy), in member order, or as a multiset over the members when
// anyOrder.
func CopiesAre(ctx context.Context, f *framework.Federation, ns, name string, want []int32, anyOrder bool) error {
	got, err := CopyReplicas(ctx, f, ns, name)
	if err != nil {
		return err
	}
	g, w := slices.Clone(got), slices.Clone(want)
	if anyOrder {
		slices.Sort(g)
		slices.Sort(w)
	}
	if !slices.Equal(g, w) {
		return fmt.Errorf("copies of %s have replicas %v, want %v (any order: %v)", name, got, want, anyOrder)
	}
	return nil
}

// WantReadyLayout waits until name's copies run want replicas (as a
// multiset over the members, or exactly in member order) and the control
// plane counts total ready.
func WantReadyLayout(t testing.TB, f *framework.Federation, key client.ObjectKey, want []int32, anyOrder bool, total int32, within time.Duration) {
	t.Helper()
	framework.Eventually(t, within, func(ctx context.Context) error {
		if err := CopiesAre(ctx, f, key.Namespace, key.Name, want, anyOrder); err != nil {
			return err
		}
		var d appsv1.Deployment
		if err := f.Client("federation").Get(ctx, key, &d); err != nil {
			return err
		}
		if d.Status.ReadyReplicas != total {
			return fmt.Errorf("control plane counts %d ready, want %d", d.Status.ReadyReplicas, total)
		}
		return nil
	})
}

// ZoneB and ZoneC are the zones of a member over two zones of us-east1.
const (
	ZoneB = "us-east1-b"
	ZoneC = "us-east1-c"
)

// Deployment is a Deployment of app with replicas, its pods labelled with
// app and the target's name, pinned to zone when one is given.
func Deployment(ns, name, app, zone string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": app, "target": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: app + ":1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("100m"),
					}},
				}}},
			},
		},
	}
	if zone != "" {
		d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: zone}
	}
	return d
}

// BalancerTarget is a Balancer target scaling the Deployment deployment.
func BalancerTarget(name, deployment string) kfedv1alpha1.BalancerTarget {
	return kfedv1alpha1.BalancerTarget{Name: name, ScaleTargetRef: kfedv1alpha1.CrossVersionObjectReference{
		APIVersion: "apps/v1", Kind: "Deployment", Name: deployment}}
}

// NewBalancer is a Balancer of replicas over targets with policy.
func NewBalancer(ns, name, app string, replicas int32, policy kfedv1alpha1.BalancerPolicy, targets ...kfedv1alpha1.BalancerTarget) *kfedv1alpha1.Balancer {
	return &kfedv1alpha1.Balancer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kfedv1alpha1.BalancerSpec{
			Replicas: replicas, Targets: targets, Policy: policy,
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
}

// PriorityPolicy is the priority policy over targets in order.
func PriorityPolicy(order ...string) kfedv1alpha1.BalancerPolicy {
	return kfedv1alpha1.BalancerPolicy{PolicyName: kfedv1alpha1.PolicyPriority,
		Priorities: &kfedv1alpha1.PriorityPolicy{TargetOrder: order}}
}

// ReplicasOf returns the spec.replicas of each named Deployment.
func ReplicasOf(ctx context.Context, c client.Client, ns string, names ...string) ([]int32, error) {
	var out []int32
	for _, n := range names {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &d); err != nil {
			return nil, err
		}
		out = append(out, *d.Spec.Replicas)
	}
	return out, nil
}

// WantReplicas waits until the named Deployments' spec.replicas are want.
func WantReplicas(t testing.TB, c client.Client, ns string, names []string, want []int32, within time.Duration) {
	t.Helper()
	framework.Eventually(t, within, func(ctx context.Context) error {
		got, err := ReplicasOf(ctx, c, ns, names...)
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("%v have replicas %v, want %v", names, got, want)
		}
		return nil
	})
}

// WantBalancerCondition waits until the Balancer has condition typ with
// status and reason.
func WantBalancerCondition(t testing.TB, c client.Client, key client.ObjectKey, typ, status, reason string, within time.Duration) {
	t.Helper()
	framework.Eventually(t, within, func(ctx context.Context) error {
		var b kfedv1alpha1.Balancer
		if err := c.Get(ctx, key, &b); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(b.Status.Conditions, typ)
		if cond == nil || string(cond.Status) != status || cond.Reason != reason || cond.ObservedGeneration != b.Generation {
			return fmt.Errorf("Balancer %s condition %s = %+v, want %s %s for generation %d", key, typ, cond, status, reason, b.Generation)
		}
		return nil
	})
}

// WantClusterEvent waits for an Event of reason about obj in cluster.
func WantClusterEvent(t testing.TB, f *framework.Federation, cluster string, obj client.Object, typ, reason string) {
	t.Helper()
	framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
		evs, err := f.Clientset(cluster).CoreV1().Events(obj.GetNamespace()).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Balancer" && e.InvolvedObject.Name == obj.GetName() && e.Reason == reason && e.Type == typ {
				return nil
			}
		}
		return fmt.Errorf("no %s Event %s for Balancer %s among %d", typ, reason, obj.GetName(), len(evs.Items))
	})
}

// Create creates objs, failing the test on an error.
func Create(t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DeleteServicesAtEnd deletes the federated Services keys name when t ends
// and waits until they and their DNSEndpoints are gone (their finalizer has
// deleted their shards by then): tests that share a bed run one after
// another, and no later one sees them.
func DeleteServicesAtEnd(t *testing.T, f *framework.Federation, keys ...client.ObjectKey) {
	t.Helper()
	objs := make([]client.Object, len(keys))
	for i, k := range keys {
		objs[i] = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
	}
	DeleteFederatedAtEnd(t, f, objs...)
}

// DeleteFederatedAtEnd deletes the federated objects objs (Services,
// Deployments) from the control plane when t ends and waits until they and
// the DNSEndpoints of their names are gone.
func DeleteFederatedAtEnd(t *testing.T, f *framework.Federation, objs ...client.Object) {
	t.Helper()
	fed := f.Client("federation")
	DeleteAtEndWaiting(t, fed, func(ctx context.Context) error {
		for _, o := range objs {
			if err := fed.Get(ctx, client.ObjectKeyFromObject(o), &extdnsv1alpha1.DNSEndpoint{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("DNSEndpoint %s/%s is still there (%v)", o.GetNamespace(), o.GetName(), err)
			}
		}
		return nil
	}, objs...)
}

// DeleteAtEnd deletes objs through c when t ends and waits until they are
// gone (their finalizers done: register it after starting what removes
// them, as cleanups run last first). Tests that share a bed delete what a
// later one could count or serve.
func DeleteAtEnd(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	DeleteAtEndWaiting(t, c, nil, objs...)
}

// DeleteAtEndWaiting is DeleteAtEnd that also waits, once objs are gone,
// until gone (if set) is nil: what their deletion takes away with them.
func DeleteAtEndWaiting(t *testing.T, c client.Client, gone func(context.Context) error, objs ...client.Object) {
	t.Helper()
	t.Cleanup(func() {
		for _, o := range objs {
			if err := c.Delete(context.Background(), o); client.IgnoreNotFound(err) != nil {
				t.Errorf("deleting %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
			}
		}
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
			for _, o := range objs {
				if err := c.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object)); !apierrors.IsNotFound(err) {
					return fmt.Errorf("%T %s/%s is still there (%v)", o, o.GetNamespace(), o.GetName(), err)
				}
			}
			if gone != nil {
				return gone(ctx)
			}
			return nil
		})
	})
}

// RevokeTokens makes ServiceAccount namespace/name in member again, so that
// every token of the old one stops working, and returns once old (a config
// holding such a token) is refused: the API server caches a token's
// authentication for ten seconds.
func RevokeTokens(t testing.TB, member client.Client, namespace, name string, old *rest.Config) {
	t.Helper()
	ctx := context.Background()
	sa := func() *corev1.ServiceAccount {
		return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	}
	if err := member.Delete(ctx, sa()); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error { return member.Create(ctx, sa()) })
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		c, err := client.New(old, client.Options{})
		if err != nil {
			return err
		}
		if err := c.List(ctx, &corev1.ServiceList{}, client.InNamespace("default")); !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("the old token still works: %v", err)
		}
		return nil
	})
}
