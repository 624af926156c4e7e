package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/internal/buildinfo"
)

// leaseName is the controller's leader-election Lease.
const leaseName = "kfed-controller"

// versionWriter writes kfedv1alpha1.AnnotationControllerVersion on the Lease once its replica
// leads. A merge patch carries no resourceVersion, so it never conflicts
// with the leader elector's renewals; the elector's next update keeps it.
type versionWriter struct {
	c         client.Client
	log       logr.Logger
	namespace string
	version   string
}

// NeedLeaderElection is true: only the leader may say its version.
func (w *versionWriter) NeedLeaderElection() bool { return true }

func (w *versionWriter) Start(ctx context.Context) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{kfedv1alpha1.AnnotationControllerVersion: w.version}}})
	if err != nil {
		return err
	}
	lease := &coordinationv1.Lease{}
	lease.Namespace, lease.Name = w.namespace, leaseName
	// The Lease exists once this replica leads; retry a failed write (the
	// API server restarting) until it lands or the manager stops.
	logged := false
	err = wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		err := w.c.Patch(ctx, lease, client.RawPatch(types.MergePatchType, patch))
		if err != nil && !logged && ctx.Err() == nil {
			// Once: an older chart's RBAC without patch on leases would
			// otherwise fill the log every 2 s.
			w.log.Error(err, "writing the controller's version on its Lease; retrying")
			logged = true
		}
		return err == nil, nil
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("writing the controller's version on its Lease: %w", err)
	}
	return nil
}

func newVersionWriter(c client.Client, log logr.Logger, namespace string) *versionWriter {
	return &versionWriter{c: c, log: log, namespace: namespace, version: buildinfo.Get().Version}
}
