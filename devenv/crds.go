package devenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

// crdInstallTime bounds an installation of CRDs and its wait for discovery.
const crdInstallTime = 30 * time.Second

// InstallCRDs creates (or updates) every CRD in the YAML files of fsys in
// cluster c and waits until the API server's discovery lists every served
// version of them, as clients need it, with controller-runtime's envtest
// installer. With Options.SeedDir, a set of CRDs a bed installed before is
// written into c's etcd prefix as that bed's API server stored it (see
// seed.go) when none of them is there yet.
func (e *Env) InstallCRDs(ctx context.Context, c *Cluster, fsys fs.FS) error {
	crds, digest, err := readCRDs(fsys)
	if err != nil {
		return err
	}
	path, err := e.seedPath("crds " + digest)
	if err != nil {
		return err
	}
	planted := false
	if s := readSeed(path); s != nil {
		if planted, err = e.plantCRDs(ctx, c, s); err != nil {
			return err
		}
	}
	err = withContext(ctx, func() error {
		if planted {
			return waitForCRDs(c.Config, crds, crdInstallTime)
		}
		return installCRDs(c.Config, crds, crdInstallTime)
	})
	if err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	if path == "" || planted {
		return nil
	}
	return e.keepCRDs(ctx, c, crds, path)
}

// InstallCRDsIn installs the CRDs of fsys in every cluster of where, side by
// side.
func (e *Env) InstallCRDsIn(ctx context.Context, fsys fs.FS, where ...*Cluster) error {
	errs := make([]error, len(where))
	var wg sync.WaitGroup
	for i, c := range where {
		wg.Go(func() {
			if err := e.InstallCRDs(ctx, c, fsys); err != nil {
				errs[i] = fmt.Errorf("%s: %w", c.Name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// readCRDs reads the CRDs in the YAML files of fsys, with a digest of the
// files.
func readCRDs(fsys fs.FS) ([]*apiextensionsv1.CustomResourceDefinition, string, error) {
	files, err := fs.Glob(fsys, "*.yaml")
	if err != nil || len(files) == 0 {
		return nil, "", fmt.Errorf("no CRDs found (%v)", err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	h := sha256.New()
	for _, f := range files { // fs.Glob sorts them
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, "", err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, "", fmt.Errorf("reading %s: %w", f, err)
		}
		crds = append(crds, crd)
		fmt.Fprintf(h, "%s\n%d\n%s", f, len(data), data)
	}
	return crds, hex.EncodeToString(h.Sum(nil)), nil
}

// withContext runs f, which takes no context (envtest's installer gives up
// by itself at its MaxTime), and returns early when ctx ends.
func withContext(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// crdKey is CRD name's etcd key under a cluster's prefix.
func crdKey(name string) string {
	return "apiextensions.k8s.io/customresourcedefinitions/" + name
}

// plantCRDs writes the CRD seed s under c's prefix when none of its CRDs is
// there, in one transaction; false when one is (the installer then updates
// what differs).
func (e *Env) plantCRDs(ctx context.Context, c *Cluster, s *seed) (bool, error) {
	cli, err := e.etcdClient()
	if err != nil {
		return false, err
	}
	prefix := "/kfed/" + c.Name + "/"
	var ifs []clientv3.Cmp
	var puts []clientv3.Op
	for _, kv := range s.KVs {
		ifs = append(ifs, clientv3.Compare(clientv3.CreateRevision(prefix+kv.Key), "=", 0))
		puts = append(puts, clientv3.OpPut(prefix+kv.Key, string(kv.Value)))
	}
	resp, err := cli.Txn(ctx).If(ifs...).Then(puts...).Commit()
	if err != nil {
		return false, fmt.Errorf("seeding CRDs in %s: %w", c.Name, err)
	}
	return resp.Succeeded, nil
}

// keepCRDs writes the CRD seed of crds, installed in c, to path once the
// API server has named and established them all, so that the clusters
// seeded from it have no status left to write.
func (e *Env) keepCRDs(ctx context.Context, c *Cluster, crds []*apiextensionsv1.CustomResourceDefinition, path string) error {
	client, err := apiextensionsclient.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdInstallTime, true, func(ctx context.Context) (bool, error) {
		for _, want := range crds {
			got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if !crdSettled(got) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the CRDs of %s to settle: %w", c.Name, err)
	}
	cli, err := e.etcdClient()
	if err != nil {
		return err
	}
	prefix := "/kfed/" + c.Name + "/"
	s := seed{Format: seedFormat}
	for _, crd := range crds {
		resp, err := cli.Get(ctx, prefix+crdKey(crd.Name))
		if err != nil {
			return fmt.Errorf("reading CRD %s in etcd: %w", crd.Name, err)
		}
		if len(resp.Kvs) != 1 {
			return fmt.Errorf("CRD %s is not in etcd under %s", crd.Name, prefix)
		}
		s.KVs = append(s.KVs, seedKey{Key: crdKey(crd.Name), Value: resp.Kvs[0].Value})
	}
	return keepSeedFile(path, s)
}

// crdSettled reports whether the API server's controllers wrote every
// condition they write for crd: names accepted, established and, for a
// group under k8s.io, the API approval's.
func crdSettled(crd *apiextensionsv1.CustomResourceDefinition) bool {
	has := func(t apiextensionsv1.CustomResourceDefinitionConditionType, needTrue bool) bool {
		for _, cond := range crd.Status.Conditions {
			if cond.Type == t {
				return !needTrue || cond.Status == apiextensionsv1.ConditionTrue
			}
		}
		return false
	}
	settled := has(apiextensionsv1.NamesAccepted, true) && has(apiextensionsv1.Established, true)
	if g := crd.Spec.Group; g == "k8s.io" || strings.HasSuffix(g, ".k8s.io") {
		settled = settled && has(apiextensionsv1.KubernetesAPIApprovalPolicyConformant, false)
	}
	return settled
}
