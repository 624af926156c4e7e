package devenv_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/deploy/crds"
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
		// The server's bootstrap controller creates it after /readyz, once
		// it runs: a second or so under load.
		framework.Eventually(t, 20*time.Second, func(ctx context.Context) error {
			return cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &corev1.Service{})
		})
	}
}

// A set of CRDs one cluster installed is written into the next cluster's
// etcd as the first stored it, established, and served there; a cluster that
// has one of them already gets the set installed as before.
func TestCRDsComeFromTheFirstInstallation(t *testing.T) {
	seeds := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := devenv.Start(ctx, devenv.Options{Dir: t.TempDir(), BinDir: framework.BinDir(t), SeedDir: seeds, Members: devenv.Members(2), APIServerProcs: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	first, seeded, fallback := env.ControlPlane, env.Members[0], env.Members[1]

	// fallback has the About API's CRD before the set comes.
	about := fstest.MapFS{}
	for name, f := range crds.Member().(fstest.MapFS) {
		if strings.HasPrefix(name, "about.k8s.io") {
			about[name] = f
		}
	}
	if err := env.InstallCRDs(ctx, fallback, about); err != nil {
		t.Fatal(err)
	}
	const property = "clusterproperties.about.k8s.io"
	own := crdUID(ctx, t, fallback, property)
	before, _ := filepath.Glob(filepath.Join(seeds, "crds-*.json"))

	for _, c := range []*devenv.Cluster{first, seeded, fallback} {
		if err := env.InstallCRDs(ctx, c, crds.Member()); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if c == first {
			if files, _ := filepath.Glob(filepath.Join(seeds, "crds-*.json")); len(files) != len(before)+1 {
				t.Fatalf("CRD seeds after the first installation: %v, want one more than %v", files, before)
			}
		}
	}
	if got, want := crdUID(ctx, t, seeded, property), crdUID(ctx, t, first, property); got != want {
		t.Errorf("%s's CRD has UID %s, want the seed's %s: it was installed anew", seeded.Name, got, want)
	}
	if got := crdUID(ctx, t, fallback, property); got != own {
		t.Errorf("%s's own CRD was replaced: UID %s, was %s", fallback.Name, got, own)
	}
	for _, c := range []*devenv.Cluster{seeded, fallback} {
		cr := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "about.k8s.io/v1alpha1", "kind": "ClusterProperty",
			"metadata": map[string]any{"name": "cluster.clusterset.k8s.io"},
			"spec":     map[string]any{"value": c.Name},
		}}
		if err := clientFor(t, c).Create(ctx, cr); err != nil {
			t.Errorf("%s does not serve the seeded CRD: %v", c.Name, err)
		}
	}
}

func crdUID(ctx context.Context, t *testing.T, c *devenv.Cluster, name string) types.UID {
	t.Helper()
	cs, err := apiextensionsclient.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	crd, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return crd.UID
}

func clientFor(t *testing.T, c *devenv.Cluster) client.Client {
	t.Helper()
	cl, err := client.New(c.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
