package devenv_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/framework"
)

// A bed's API servers start from the bootstrap objects the first bed's
// control plane wrote, and each is still a cluster of its own: the same
// default roles, working bindings, its own namespaces.
func TestAPIServersStartFromTheFirstOnesBootstrapObjects(t *testing.T) {
	seeds := t.TempDir()
	bin := framework.BinDir(t)
	start := func() *devenv.Env {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		env, err := devenv.Start(ctx, devenv.Options{Dir: t.TempDir(), BinDir: bin, SeedDir: seeds, Members: devenv.Members(1), APIServerProcs: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(env.Stop)
		return env
	}
	first := start()

	files, err := filepath.Glob(filepath.Join(seeds, "*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("seeds after the first bed: %v (%v), want one file", files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var kept struct {
		KVs []struct{ Key string } `json:"kvs"`
	}
	if err := json.Unmarshal(data, &kept); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range kept.KVs {
		keys = append(keys, kv.Key)
	}
	if !slices.Contains(keys, "clusterroles/admin") || !slices.Contains(keys, "clusterrolebindings/system:basic-user") {
		t.Errorf("the seed lacks the default roles: %v", keys)
	}
	for _, k := range keys {
		for _, own := range []string{"namespaces/", "services/", "leases/", "configmaps/", "ranges/", "secrets/", "ipaddresses/", "servicecidrs/"} {
			if strings.HasPrefix(k, own) {
				t.Errorf("the seed keeps %s, a cluster's own", k)
			}
		}
	}

	second := start()
	ctx := context.Background()
	roles := func(c *devenv.Cluster) sets.Set[string] {
		var list rbacv1.ClusterRoleList
		if err := clientFor(t, c).List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		names := sets.New[string]()
		for _, r := range list.Items {
			names.Insert(r.Name)
		}
		return names
	}
	want := roles(first.ControlPlane)
	admin := func(c *devenv.Cluster) types.UID {
		r := &rbacv1.ClusterRole{}
		if err := clientFor(t, c).Get(ctx, client.ObjectKey{Name: "admin"}, r); err != nil {
			t.Fatal(err)
		}
		return r.UID
	}
	seeded := admin(first.ControlPlane)
	uids := map[types.UID]string{}
	for _, c := range append([]*devenv.Cluster{first.ControlPlane, second.ControlPlane}, second.Members...) {
		cl := clientFor(t, c)
		if got := roles(c); !got.Equal(want) {
			t.Errorf("%s's ClusterRoles differ from a fresh server's: missing %v, more %v",
				c.Name, sets.List(want.Difference(got)), sets.List(got.Difference(want)))
		}
		if c.URL != first.ControlPlane.URL && admin(c) != seeded {
			t.Errorf("%s wrote its own admin ClusterRole: it did not start from the seed", c.Name)
		}
		// The seeded bindings decide: any authenticated user may ask what
		// it may do (system:basic-user).
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "someone", Groups: []string{"system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews", Verb: "create"},
		}}
		if err := cl.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		if !sar.Status.Allowed {
			t.Errorf("%s: an authenticated user may not review its own access: %+v", c.Name, sar.Status)
		}
		// Its own namespaces and Services, made by its own start.
		ns := &corev1.Namespace{}
		if err := cl.Get(ctx, client.ObjectKey{Name: "kube-system"}, ns); err != nil {
			t.Fatal(err)
		}
		if other, ok := uids[ns.UID]; ok {
			t.Errorf("%s's kube-system has the UID of %s's", c.Name, other)
		}
		uids[ns.UID] = c.Name
		if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &corev1.Service{}); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
}

func clientFor(t *testing.T, c *devenv.Cluster) client.Client {
	t.Helper()
	cl, err := client.New(c.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
