package services

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/dns/publish"
)

// writeEndpoint writes the Service's DNSEndpoint (publish.Publisher.Write);
// cur is the published one, nil when there is none. It returns the
// DNSEndpoint as it now is.
func (c *Controller) writeEndpoint(ctx context.Context, svc *corev1.Service, cur *extdnsv1alpha1.DNSEndpoint, d decision) (*extdnsv1alpha1.DNSEndpoint, error) {
	annotations := maps.Clone(d.health)
	if annotations == nil {
		annotations = map[string]string{}
	}
	if d.failover != "" {
		annotations[dnsendpoint.AnnotationFailover] = d.failover
	}
	if d.proximity {
		annotations[dnsendpoint.AnnotationRouting] = dnsendpoint.RoutingProximity
	}
	written, op, err := c.publisher().Write(ctx, cur, publish.Record{
		Key: client.ObjectKeyFromObject(svc), Owner: svc,
		Endpoints: d.endpoints, Clusters: d.clusters, Annotations: annotations,
	})
	if op != publish.Unchanged {
		c.Metrics.endpoint(string(op))
	}
	return written, err
}

// publisher writes the Services' DNSEndpoints.
func (c *Controller) publisher() publish.Publisher {
	return publish.Publisher{Client: c.Fed, Live: c.Live, Federation: c.Federation, Namespace: c.namespace()}
}

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

// sweepEndpoint deletes kfed's DNSEndpoint of a Service that is gone. A
// DNSEndpoint outlives its Service when the write of it reaches the API
// server after the Service's finalizer went: a reconcile's apply that timed
// out while the control plane was frozen, and landed once it thawed, after
// the Service was finalized. Its creation brings its owner's key here (the
// controller owns DNSEndpoints), and so does the start of every
// controller. The cache may not have seen a Service made a moment ago, so
// the API server says whether it is gone.
func (c *Controller) sweepEndpoint(ctx context.Context, key types.NamespacedName) error {
	var ep extdnsv1alpha1.DNSEndpoint
	if err := c.Fed.Get(ctx, key, &ep); err != nil {
		return client.IgnoreNotFound(err)
	}
	owner := metav1.GetControllerOf(&ep)
	if ep.Labels[kfedv1alpha1.LabelManagedBy] != kfedv1alpha1.ManagedBy || ep.Labels[kfedv1alpha1.LabelFederation] != c.Federation ||
		owner == nil || owner.APIVersion != "v1" || owner.Kind != "Service" || owner.Name != key.Name {
		return nil // not a Service's of this federation: a Gateway's, an export's, someone else's
	}
	switch err := c.live().Get(ctx, key, &corev1.Service{}); {
	case err == nil:
		return nil // there: its own reconcile follows
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading Service %s: %w", key, err)
	}
	_, err := c.publisher().Delete(ctx, key, "", "")
	return err
}

// live reads the control plane's API server.
func (c *Controller) live() client.Reader {
	if c.Live != nil {
		return c.Live
	}
	return c.Fed
}

// writeCopies applies decideCopies' actions to the Ready members' shards,
// side by side (registry.EachMember), and returns what each placed
// member's shard gave (gave), a shard whose write failed
// publish.WriteFailed. The error joins the writes that failed, in the
// actions' order, to be retried with backoff.
func (c *Controller) writeCopies(ctx context.Context, svc *corev1.Service, actions []copyAction) (map[string]memberCopy, error) {
	type result struct {
		copy    *memberCopy // nil for a member not placed
		created bool
		err     error
	}
	results := make([]result, len(actions))
	registry.EachMember(len(actions), func(i int) {
		mc, created, err := c.writeAction(ctx, svc, actions[i])
		results[i] = result{mc, created, err}
	})
	members := map[string]memberCopy{}
	var (
		errs    []error
		created []string
	)
	for i, r := range results {
		name := actions[i].read.member.Name
		if r.copy != nil {
			members[name] = *r.copy
		}
		if r.created {
			created = append(created, name)
		}
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	c.shardsCreated(svc, created)
	return members, errors.Join(errs...)
}

// writeAction applies one of decideCopies' actions: it deletes the shard of
// a member no longer placed (no copy), or writes a placed member's, and
// says whether it created one.
func (c *Controller) writeAction(ctx context.Context, svc *corev1.Service, a copyAction) (*memberCopy, bool, error) {
	m := a.read.member
	switch {
	case !a.placed:
		return nil, false, c.deleteCopy(ctx, m, client.ObjectKeyFromObject(svc))
	case a.read.err != nil:
		return &memberCopy{outcome: publish.WriteFailed}, false, a.read.err
	case a.want == nil:
		mc := gave(a)
		return &mc, false, nil
	}
	if a.adopt {
		c.Metrics.copyOp(m.Name, "adopt")
		c.clusterEvent(svc, m.Name, corev1.EventTypeNormal, "ShardAdopted", "adopted the matching Service already in cluster %s", m.Name)
	}
	if p, err := c.writeCopy(ctx, m, a.read.cur, a.want); err != nil {
		return &memberCopy{outcome: publish.WriteFailed, problem: p}, false, err
	}
	created := a.read.cur == nil
	if created {
		c.Metrics.copyOp(m.Name, "create")
	}
	mc := gave(a)
	return &mc, created, nil
}

// writeCopy writes want, the shard, to member m (copies.WriteCopy); cur
// is the shard the cache holds, nil when none. A member that refuses it
// gives a problem for the Placed condition.
func (c *Controller) writeCopy(ctx context.Context, m registry.Member, cur, want *corev1.Service) (*problem, error) {
	var curObj client.Object
	if cur != nil {
		curObj = cur
	}
	changed, err := copies.WriteCopy(ctx, m, curObj, want)
	if errors.Is(err, copies.ErrNotCached) {
		return nil, err
	}
	if err != nil {
		what := "shard"
		if cur != nil {
			what = "shard update"
		}
		// WriteCopy names the cluster and the object; the condition says
		// them its own way.
		reason := cmp.Or(errors.Unwrap(err), err)
		return &problem{m.Name, reasonShardRejected, fmt.Sprintf("cluster %s rejected the %s: %v", m.Name, what, reason)}, err
	}
	if changed && cur != nil {
		c.Metrics.copyOp(m.Name, "update")
	}
	return nil, nil
}

// deleteCopies deletes kfed-created shards of key in every Ready member,
// side by side.
func (c *Controller) deleteCopies(ctx context.Context, key types.NamespacedName) error {
	ready := c.Members.Ready()
	errs := make([]error, len(ready))
	registry.EachMember(len(ready), func(i int) { errs[i] = c.deleteCopy(ctx, ready[i], key) })
	return errors.Join(errs...)
}

// deleteCopy deletes the shard of key in m if kfed created it, and lets go
// of it if kfed adopted it. Anything else is left alone.
func (c *Controller) deleteCopy(ctx context.Context, m registry.Member, key types.NamespacedName) error {
	var cur corev1.Service
	if err := m.Client.Get(ctx, key, &cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	switch copies.Classify(&cur, key.String(), c.Federation) {
	case copies.Ours:
		if err := m.Client.Delete(ctx, &cur, client.Preconditions{UID: &cur.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting shard in %s: %w", m.Name, err)
		}
		c.Metrics.copyOp(m.Name, "delete")
	case copies.Adopted:
		if err := copies.LetGo(ctx, m.Client, &cur); err != nil {
			return fmt.Errorf("releasing adopted shard in %s: %w", m.Name, err)
		}
		c.Metrics.copyOp(m.Name, "release")
	}
	return nil
}
