package devenv

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// InstallCRDs creates (or updates) every CRD in the YAML files of fsys and
// waits until the API server's discovery lists every served version of
// them, as clients need it, with controller-runtime's envtest installer.
func InstallCRDs(ctx context.Context, cfg *rest.Config, fsys fs.FS) error {
	files, err := fs.Glob(fsys, "*.yaml")
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs found (%v)", err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return fmt.Errorf("reading %s: %w", f, err)
		}
		crds = append(crds, crd)
	}
	done := make(chan error, 1)
	go func() {
		done <- installCRDs(cfg, crds, 30*time.Second)
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("installing CRDs: %w", err)
		}
		return nil
	case <-ctx.Done():
		// envtest takes no context; the installer gives up by itself at
		// its MaxTime.
		return ctx.Err()
	}
}
