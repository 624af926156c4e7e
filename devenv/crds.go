package devenv

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// InstallCRDs creates (or updates) every CRD in the YAML files of fsys and
// waits until the API server serves them.
func InstallCRDs(ctx context.Context, cfg *rest.Config, fsys fs.FS) error {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	files, err := fs.Glob(fsys, "*.yaml")
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs found (%v)", err)
	}
	var names []string
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			return fmt.Errorf("reading %s: %w", f, err)
		}
		var cur apiextensionsv1.CustomResourceDefinition
		switch err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &cur); {
		case apierrors.IsNotFound(err):
			err = c.Create(ctx, &crd)
			if err != nil {
				return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
			}
		case err != nil:
			return err
		default:
			crd.ResourceVersion = cur.ResourceVersion
			if err := c.Update(ctx, &crd); err != nil {
				return fmt.Errorf("updating CRD %s: %w", crd.Name, err)
			}
		}
		names = append(names, crd.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, name := range names {
		err := poll(ctx, 100*time.Millisecond, nil, func(ctx context.Context) error {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
				return err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("CRD %s not established", name)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
