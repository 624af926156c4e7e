package framework

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Apply creates the objects of the YAML manifests at paths (relative to the
// repository root) in the named cluster, skipping kinds in skip and objects
// that already exist.
func (f *Federation) Apply(cluster string, paths []string, skip ...string) {
	f.t.Helper()
	c := f.Client(cluster)
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(RepoRoot(f.t), p))
		if err != nil {
			f.t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				f.t.Fatalf("%s: %v", p, err)
			}
			if len(u.Object) == 0 || slices.Contains(skip, u.GetKind()) {
				continue
			}
			if err := c.Create(context.Background(), &u); err != nil && !apierrors.IsAlreadyExists(err) {
				f.t.Fatalf("%s: creating %s %s: %v", p, u.GetKind(), u.GetName(), err)
			}
		}
	}
}

// Token returns a bearer token of ServiceAccount namespace/name in cluster.
func (f *Federation) Token(cluster, namespace, name string) string {
	f.t.Helper()
	tr, err := f.Clientset(cluster).CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}},
		metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("token of %s/%s in %s: %v", namespace, name, cluster, err)
	}
	return tr.Status.Token
}
