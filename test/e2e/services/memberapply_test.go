package services

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/test/framework"
)

// kfed writes shards and Deployment copies with server-side apply: a label the user drops from
// the federated Service goes from its shards, what the member's own users
// and controllers set stays, a shard an older kfed wrote with updates is
// taken over whole on the first apply, and a reconcile that changes nothing
// writes nothing.
func TestMemberObjectsAreWrittenWithServerSideApply(t *testing.T) {
	// The controller starts once the older kfed's shard and its federated
	// Service are in place: before, it would delete a shard whose
	// federated Service does not exist.
	f := framework.Start(t, framework.Members(1), framework.LoadBalancer())
	f.JoinAll()
	ctx := context.Background()
	fed, member := f.Client("federation"), f.Client("cluster-1")

	// A shard as kfed wrote it before it used apply: created by an update
	// of the controller's default field manager.
	old := fedtest.FederatedService("default", "old")
	old.Labels = map[string]string{"team": "shop", "tier": "front"}
	old.Spec.LoadBalancerClass = nil
	copies.Mark(old, "default/old", "fed")
	if err := member.Create(ctx, old, client.FieldOwner("kfed-controller")); err != nil {
		t.Fatal(err)
	}
	clusterIP := old.Spec.ClusterIP
	addMemberLabel(t, member, client.ObjectKeyFromObject(old))

	fedOld := fedtest.FederatedService("default", "old")
	fedOld.Labels = map[string]string{"team": "shop"}
	fresh := fedtest.FederatedService("default", "fresh")
	fresh.Labels = map[string]string{"team": "shop", "tier": "front"}
	for _, svc := range []*corev1.Service{fedOld, fresh} {
		if err := fed.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}
	f.StartController(manager.Options{})
	waitShardLabels(t, member, client.ObjectKeyFromObject(fresh), "team=shop,tier=front")
	addMemberLabel(t, member, client.ObjectKeyFromObject(fresh))

	t.Run("a shard an older kfed wrote loses the label the user dropped", func(t *testing.T) {
		waitShardLabels(t, member, client.ObjectKeyFromObject(old), "team=shop,tier=,member-only=x")
		var got corev1.Service
		if err := member.Get(ctx, client.ObjectKeyFromObject(old), &got); err != nil {
			t.Fatal(err)
		}
		if got.UID != old.UID {
			t.Fatal("the older kfed's shard was replaced, not taken over")
		}
		if got.Spec.ClusterIP != clusterIP {
			t.Errorf("cluster IP %s after the takeover, want %s kept", got.Spec.ClusterIP, clusterIP)
		}
		for _, e := range got.ManagedFields {
			if e.Manager == "kfed-controller" {
				t.Errorf("the older kfed's field manager still owns fields: %s", e.FieldsV1.Raw)
			}
		}
	})

	t.Run("a shard kfed applied loses the label and port the user dropped", func(t *testing.T) {
		patchService(t, fed, client.ObjectKeyFromObject(fresh), func(s *corev1.Service) {
			delete(s.Labels, "tier")
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "admin", Port: 9090, TargetPort: intstr.FromInt32(9090)})
		})
		framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
			var got corev1.Service
			if err := member.Get(ctx, client.ObjectKeyFromObject(fresh), &got); err != nil {
				return err
			}
			if len(got.Spec.Ports) != 2 {
				return fmt.Errorf("shard ports %v, want http and admin", got.Spec.Ports)
			}
			return nil
		})
		waitShardLabels(t, member, client.ObjectKeyFromObject(fresh), "team=shop,tier=,member-only=x")
		patchService(t, fed, client.ObjectKeyFromObject(fresh), func(s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[:1] })
		framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
			var got corev1.Service
			if err := member.Get(ctx, client.ObjectKeyFromObject(fresh), &got); err != nil {
				return err
			}
			if len(got.Spec.Ports) != 1 || got.Spec.Ports[0].Name != "http" {
				return fmt.Errorf("shard ports %v, want http alone", got.Spec.Ports)
			}
			return nil
		})
	})

	t.Run("a Deployment copy loses the annotation the user dropped and keeps the member's", func(t *testing.T) {
		d := fedtest.FederatedDeployment("default", "web", 2, `{"clusters": {"*": {"weight": 1}}}`)
		d.Annotations["team"], d.Annotations["note"] = "shop", "drop me"
		if err := fed.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(d)
		copyAnnotations := func(want func(map[string]string) error) {
			t.Helper()
			framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
				var c appsv1.Deployment
				if err := member.Get(ctx, key, &c); err != nil {
					return err
				}
				return want(c.Annotations)
			})
		}
		copyAnnotations(func(a map[string]string) error {
			if a["note"] != "drop me" {
				return fmt.Errorf("copy annotations %v, want note", a)
			}
			return nil
		})
		framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
			var c appsv1.Deployment
			if err := member.Get(ctx, key, &c); err != nil {
				return err
			}
			c.Annotations["member-only"] = "x"
			return member.Update(ctx, &c, client.FieldOwner("member-user"))
		})
		framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
			var cur appsv1.Deployment
			if err := fed.Get(ctx, key, &cur); err != nil {
				return err
			}
			delete(cur.Annotations, "note")
			return fed.Update(ctx, &cur)
		})
		copyAnnotations(func(a map[string]string) error {
			if _, ok := a["note"]; ok || a["member-only"] != "x" || a["team"] != "shop" {
				return fmt.Errorf("copy annotations %v, want team and member-only without note", a)
			}
			return nil
		})
	})

	t.Run("a copy the member's cache has not seen is created with one apply, and a Service already there is not taken over", func(t *testing.T) {
		m := registry.Member{Name: "cluster-1", Client: member, Reader: member}
		want := func(ns, name string) *corev1.Service {
			s := fedtest.FederatedService(ns, name)
			s.Labels = map[string]string{"team": "shop"}
			// Of another federation: this one's controller would delete a
			// copy whose federated Service does not exist.
			copies.Mark(s, ns+"/"+name, "elsewhere")
			return s
		}
		// The cache says absent; the member holds the user's own.
		users := fedtest.FederatedService("default", "users")
		users.Labels = map[string]string{"owner": "user"}
		if err := member.Create(ctx, users); err != nil {
			t.Fatal(err)
		}
		if _, err := copies.WriteCopy(ctx, m, nil, want("default", "users")); !errors.Is(err, copies.ErrNotCached) {
			t.Errorf("writing over a Service the cache has not seen: %v, want ErrNotCached", err)
		}
		var got corev1.Service
		if err := member.Get(ctx, client.ObjectKeyFromObject(users), &got); err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != users.ResourceVersion || got.Labels["team"] != "" {
			t.Errorf("the user's Service was written: resourceVersion %s → %s, labels %v", users.ResourceVersion, got.ResourceVersion, got.Labels)
		}

		// Absent, in a namespace the member does not have yet: created, all
		// of it kfed's by apply, so that a later apply can remove a field.
		for _, ns := range []string{"default", "new-ns"} {
			w := want(ns, "made")
			if changed, err := copies.WriteCopy(ctx, m, nil, w); err != nil || !changed {
				t.Fatalf("creating the copy in %s: changed %v, %v", ns, changed, err)
			}
			if err := member.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != w.ResourceVersion || got.Labels["team"] != "shop" {
				t.Errorf("copy in %s: resourceVersion %s (written %s), labels %v", ns, got.ResourceVersion, w.ResourceVersion, got.Labels)
			}
			for _, e := range got.ManagedFields {
				if e.Manager == copies.FieldManager && e.Operation != metav1.ManagedFieldsOperationApply {
					t.Errorf("copy in %s: field manager %s holds fields by %s, want by Apply alone", ns, e.Manager, e.Operation)
				}
			}
			w = want(ns, "made")
			w.Labels = nil
			if _, err := copies.WriteCopy(ctx, m, &got, w); err != nil {
				t.Fatal(err)
			}
			if err := member.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
				t.Fatal(err)
			}
			if _, ok := got.Labels["team"]; ok {
				t.Errorf("copy in %s keeps the label kfed no longer applies: %v", ns, got.Labels)
			}
		}
	})

	t.Run("a DNSEndpoint the cache has not seen is created with one apply, and a user's of the same name is not touched", func(t *testing.T) {
		// Of another federation, which this one's controller leaves alone.
		p := publish.Publisher{Client: fed, Federation: "elsewhere", Namespace: "kfed-system"}
		owner := fedtest.FederatedService("default", "endpoints")
		owner.Annotations = nil
		if err := fed.Create(ctx, owner); err != nil {
			t.Fatal(err)
		}
		rec := func(name, addr string) publish.Record {
			return publish.Record{Key: types.NamespacedName{Namespace: "default", Name: name}, Owner: owner,
				Endpoints: publish.AddressEndpoints(name+".default.elsewhere.svc.kfed.test", []netip.Addr{netip.MustParseAddr(addr)}, 30)}
		}
		users := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "users", Labels: map[string]string{"team": "shop"}}}
		if err := fed.Create(ctx, users); err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.Write(ctx, nil, rec("users", "127.9.0.1")); err == nil {
			t.Error("a user's DNSEndpoint the cache has not seen was written over")
		}
		var got extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(ctx, client.ObjectKeyFromObject(users), &got); err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != users.ResourceVersion || len(got.Spec.Endpoints) != 0 {
			t.Errorf("the user's DNSEndpoint was written: resourceVersion %s → %s, endpoints %v", users.ResourceVersion, got.ResourceVersion, got.Spec.Endpoints)
		}

		// kfed's own, written while the cache has not seen it (cur nil
		// both times): created, then updated in place.
		for i, tt := range []struct {
			addr string
			op   publish.Op
		}{{"127.9.0.1", publish.Created}, {"127.9.0.2", publish.Updated}} {
			written, op, err := p.Write(ctx, nil, rec("ours", tt.addr))
			if err != nil || op != tt.op {
				t.Fatalf("write %d: %q, %v; want %q", i, op, err, tt.op)
			}
			if err := fed.Get(ctx, client.ObjectKeyFromObject(written), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Spec.Endpoints) != 1 || !slices.Equal(got.Spec.Endpoints[0].Targets, []string{tt.addr}) {
				t.Errorf("write %d: endpoints %v, want %s", i, got.Spec.Endpoints, tt.addr)
			}
		}
	})

	t.Run("a reconcile that changes nothing writes nothing", func(t *testing.T) {
		key := client.ObjectKeyFromObject(fresh)
		var before corev1.Service
		if err := member.Get(ctx, key, &before); err != nil {
			t.Fatal(err)
		}
		// A new TTL makes kfed reconcile the Service (and rewrite its
		// records) but asks nothing new of its shard.
		patchService(t, fed, key, func(s *corev1.Service) {
			s.Annotations = map[string]string{kfedv1alpha1.AnnotationTTL: "45"}
		})
		framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
			var ep extdnsv1alpha1.DNSEndpoint
			if err := fed.Get(ctx, key, &ep); err != nil {
				return err
			}
			if len(ep.Spec.Endpoints) == 0 || ep.Spec.Endpoints[0].RecordTTL != 45 {
				return fmt.Errorf("records not yet at TTL 45")
			}
			return nil
		})
		var after corev1.Service
		if err := member.Get(ctx, key, &after); err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != before.ResourceVersion {
			t.Errorf("the shard was written (resourceVersion %s → %s) though nothing it holds changed", before.ResourceVersion, after.ResourceVersion)
		}
	})
}

// addMemberLabel puts a label on a member's Service as one of its own users
// would, with another field manager.
func addMemberLabel(t *testing.T, member client.Client, key client.ObjectKey) {
	t.Helper()
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		var s corev1.Service
		if err := member.Get(ctx, key, &s); err != nil {
			return err
		}
		s.Labels["member-only"] = "x"
		return member.Update(ctx, &s, client.FieldOwner("member-user"))
	})

}

func patchService(t *testing.T, c client.Client, key client.ObjectKey, mutate func(*corev1.Service)) {
	t.Helper()
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		var s corev1.Service
		if err := c.Get(ctx, key, &s); err != nil {
			return err
		}
		mutate(&s)
		return c.Update(ctx, &s)
	})
}

// waitShardLabels waits until the shard's labels are as want says,
// "k=v,k2=" with an empty value for a label that must be absent.
func waitShardLabels(t *testing.T, member client.Client, key client.ObjectKey, want string) {
	t.Helper()
	labels, err := metav1.ParseToLabelSelector(want)
	if err != nil {
		t.Fatal(err)
	}
	var last error
	err = wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		var s corev1.Service
		if err := member.Get(ctx, key, &s); err != nil {
			return false, nil
		}
		last = shardLabelsAre(&s, labels.MatchLabels, want)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("after 20s: %v", last)
	}
}

func shardLabelsAre(s *corev1.Service, labels map[string]string, want string) error {
	for k, v := range labels {
		if got, ok := s.Labels[k]; v == "" && ok || v != "" && got != v {
			return fmt.Errorf("shard labels %v, want %s", s.Labels, want)
		}
	}
	if s.Labels[kfedv1alpha1.LabelFederation] != "fed" {
		return fmt.Errorf("shard labels %v lack kfed's", s.Labels)
	}
	return nil
}
