package services

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
)

// finalize removes what kfed made for svc — shards it created, its
// DNSEndpoint — lets go of adopted shards, and drops the finalizer.
func (c *Controller) finalize(ctx context.Context, svc *corev1.Service) error {
	if !controllerutil.ContainsFinalizer(svc, kfedv1alpha1.FinalizerService) {
		return nil
	}
	key := client.ObjectKeyFromObject(svc)
	if err := c.deleteCopies(ctx, key); err != nil {
		return err
	}
	// Publisher.Delete reads from the API server, not the cache: a
	// DNSEndpoint written just before the Service's deletion may not be in
	// the cache yet, and the finalizer must not go while it exists (it was
	// left behind for the garbage collector, minutes later, under a control
	// plane restart). The serial marker gets the Service's UID (ADR 0004).
	if _, err := c.publisher().Delete(ctx, key, "", key.String()+" "+string(svc.UID)); err != nil {
		return err
	}
	patch := client.MergeFrom(svc.DeepCopy())
	controllerutil.RemoveFinalizer(svc, kfedv1alpha1.FinalizerService)
	if !kfedv1alpha1.IsFederated(svc) && svc.DeletionTimestamp == nil {
		// No longer federated: take back the global hostname and our conditions.
		svc.Status.LoadBalancer.Ingress = slices.DeleteFunc(svc.Status.LoadBalancer.Ingress,
			func(i corev1.LoadBalancerIngress) bool {
				return i.Hostname != "" && strings.HasSuffix(i.Hostname, "."+c.Domain)
			})
		svc.Status.Conditions = slices.DeleteFunc(svc.Status.Conditions,
			func(c metav1.Condition) bool { return strings.HasPrefix(c.Type, "kfed.io/") })
		if err := c.Fed.Status().Patch(ctx, svc, patch); err != nil {
			return err
		}
		patch = client.MergeFrom(svc.DeepCopy())
		controllerutil.RemoveFinalizer(svc, kfedv1alpha1.FinalizerService)
	}
	if err := c.Fed.Patch(ctx, svc, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer: %w", err)
	}
	return nil
}

// copyWrite is what writing one of decideCopies' actions did, for the
// metrics, the Events and the records to read afterwards.
type copyWrite struct {
	action copyAction
	// ops are what was done to the shard, as kfed_shard_operations_total
	// counts them: adopt, create, update, delete, release.
	ops []string
	// err is a read or write that failed, to be retried with backoff;
	// problem says why, for the Placed condition, when the member refused
	// the write.
	err     error
	problem *problem
}

// writeCopies applies decideCopies' actions to the Ready members' shards
// of the Service key, side by side (registry.EachMember), and says what
// each did, in the actions' order.
func (c *Controller) writeCopies(ctx context.Context, key types.NamespacedName, actions []copyAction) []copyWrite {
	out := make([]copyWrite, len(actions))
	registry.EachMember(len(actions), func(i int) { out[i] = c.writeAction(ctx, key, actions[i]) })
	return out
}

// writeAction applies one of decideCopies' actions: it deletes the shard of
// a member no longer placed, or writes a placed member's (copies.WriteCopy;
// a member that refuses it gives a problem for the Placed condition).
func (c *Controller) writeAction(ctx context.Context, key types.NamespacedName, a copyAction) copyWrite {
	w := copyWrite{action: a}
	m := a.read.member
	switch {
	case !a.placed:
		var op string
		op, w.err = c.deleteCopy(ctx, m, key)
		if op != "" {
			w.ops = []string{op}
		}
		return w
	case a.read.err != nil:
		w.err = a.read.err
		return w
	case a.want == nil:
		return w
	}
	if a.adopt {
		w.ops = append(w.ops, "adopt")
	}
	var cur client.Object
	if a.read.cur != nil {
		cur = a.read.cur
	}
	changed, err := copies.WriteCopy(ctx, m, cur, a.want)
	switch {
	case errors.Is(err, copies.ErrNotCached):
		w.err = err
	case err != nil:
		what := "shard"
		if cur != nil {
			what = "shard update"
		}
		// WriteCopy names the cluster and the object; the condition says
		// them its own way.
		reason := cmp.Or(errors.Unwrap(err), err)
		w.err, w.problem = err, &problem{m.Name, reasonShardRejected, fmt.Sprintf("cluster %s rejected the %s: %v", m.Name, what, reason)}
	case cur == nil:
		w.ops = append(w.ops, "create")
	case changed:
		w.ops = append(w.ops, "update")
	}
	return w
}

// countWrites counts what one reconcile's writes did to the shards.
func countWrites(m *Metrics, ws []copyWrite) {
	for _, w := range ws {
		for _, op := range w.ops {
			m.copyOp(w.action.read.member.Name, op)
		}
	}
}

// writeErrors joins the writes that failed, in the actions' order.
func writeErrors(ws []copyWrite) error {
	var errs []error
	for _, w := range ws {
		if w.err != nil {
			errs = append(errs, w.err)
		}
	}
	return errors.Join(errs...)
}

// deleteCopies deletes kfed-created shards of key in every Ready member,
// side by side, and lets go of adopted ones.
func (c *Controller) deleteCopies(ctx context.Context, key types.NamespacedName) error {
	ws := c.writeCopies(ctx, key, removeCopies(c.Members.Ready()))
	countWrites(c.Metrics, ws)
	return writeErrors(ws)
}

// deleteCopy deletes the shard of key in m if kfed created it ("delete"),
// and lets go of it if kfed adopted it ("release"). Anything else is left
// alone ("").
func (c *Controller) deleteCopy(ctx context.Context, m registry.Member, key types.NamespacedName) (string, error) {
	var cur corev1.Service
	if err := m.Client.Get(ctx, key, &cur); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	switch copies.Classify(&cur, key.String(), c.Federation) {
	case copies.Ours:
		if err := m.Client.Delete(ctx, &cur, client.Preconditions{UID: &cur.UID}); err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("deleting shard in %s: %w", m.Name, err)
		}
		return "delete", nil
	case copies.Adopted:
		if err := copies.LetGo(ctx, m.Client, &cur); err != nil {
			return "", fmt.Errorf("releasing adopted shard in %s: %w", m.Name, err)
		}
		return "release", nil
	}
	return "", nil
}
