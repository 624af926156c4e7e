package mcs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kfed-io/kfed/clusters/copies"
)

// errNoNamespace: the member has no namespace of the import's. kfed does
// not create it (namespace sameness: a namespace is its owners' to make in
// each cluster), and the name is not imported there until it exists.
var errNoNamespace = errors.New("the namespace does not exist")

// outcome is what writing an import did, per member (cluster ID).
type outcome struct {
	imported  []string
	noNS      []string
	foreign   []string
	failed    map[string]error
	unexposed bool
}

func (o *outcome) err() error {
	var errs []error
	for _, err := range o.failed {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ready is the Ready condition of an export of the name, valid or not.
func (o *outcome) ready(valid bool) metav1.Condition {
	c := metav1.Condition{Type: string(mcsv1beta1.ServiceExportConditionReady)}
	switch {
	case !valid:
		c.Status, c.Reason = metav1.ConditionFalse, string(mcsv1beta1.ServiceExportReasonFailed)
		c.Message = "the export is not valid: this cluster's Service is not exported"
	case o.unexposed:
		c.Status, c.Reason = metav1.ConditionFalse, string(mcsv1beta1.ServiceExportReasonFailed)
		c.Message = "no export of the name is valid: nothing is imported"
	case len(o.failed) > 0:
		var ids []string
		for id := range o.failed {
			ids = append(ids, id)
		}
		c.Status, c.Reason = metav1.ConditionFalse, string(mcsv1beta1.ServiceExportReasonPending)
		c.Message = "importing in clusters " + clusterList(ids) + " failed; kfed retries"
	default:
		c.Status, c.Reason = metav1.ConditionTrue, string(mcsv1beta1.ServiceExportReasonExported)
		var what []string
		what = append(what, "imported in clusters "+clusterList(o.imported))
		if len(o.noNS) > 0 {
			what = append(what, "not in clusters "+clusterList(o.noNS)+", which have no namespace of its name")
		}
		if len(o.foreign) > 0 {
			what = append(what, "not in clusters "+clusterList(o.foreign)+", where an object kfed did not make holds its name")
		}
		c.Message = strings.Join(what, "; ")
	}
	return c
}

// clusterList is a sorted, comma-separated list of cluster IDs.
func clusterList(ids []string) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return strings.Join(ids, ", ")
}

// write makes every member hold what d says of key: the import, its
// derived Service and EndpointSlices, or none of them. It writes them as
// kfed of federation, and logs to log a member it leaves to an object kfed
// did not make.
func write(ctx context.Context, log logr.Logger, federation string, key types.NamespacedName, members []*member, d Decision) *outcome {
	o := &outcome{failed: map[string]error{}, unexposed: d.Import == nil}
	for _, m := range members {
		if d.Import == nil {
			if err := remove(ctx, key, m); err != nil {
				o.failed[m.id] = err
			}
			continue
		}
		switch err := writeMember(ctx, federation, key, m, d.Import); {
		case err == nil:
			o.imported = append(o.imported, m.id)
		case errors.Is(err, errNoNamespace):
			o.noNS = append(o.noNS, m.id)
		case errors.Is(err, errForeign):
			o.foreign = append(o.foreign, m.id)
			log.Info("not importing over an object kfed did not make", "cluster", m.Name, "name", key, "why", err.Error())
		default:
			o.failed[m.id] = err
		}
	}
	return o
}

// errForeign: the member holds an object of the import's names that kfed
// did not make; it is left alone.
var errForeign = errors.New("an object kfed did not make holds the name")

// writeMember writes imp to one member: for a ClusterSetIP import its
// derived Service first, whose cluster IPs the import then carries.
func writeMember(ctx context.Context, federation string, key types.NamespacedName, m *member, imp *Import) error {
	if m.imp != nil && !isOurs(m.imp) {
		return fmt.Errorf("cluster %s, ServiceImport %s: %w", m.Name, key, errForeign)
	}
	var ips []string
	var families []corev1.IPFamily
	if imp.Spec.Type == mcsv1beta1.ClusterSetIP {
		if m.derived != nil && !isOurs(m.derived) {
			return fmt.Errorf("cluster %s, Service %s/%s: %w", m.Name, key.Namespace, DerivedName(key.Name), errForeign)
		}
		svc := derivedService(federation, key, imp)
		have, err := apply(ctx, m, m.derived, svc)
		if err != nil {
			return err
		}
		ips, families = have.Spec.ClusterIPs, have.Spec.IPFamilies
	} else if m.derived != nil && isOurs(m.derived) {
		// The import turned headless.
		if err := deleteObject(ctx, m, m.derived); err != nil {
			return err
		}
	}
	si := serviceImport(federation, key, imp, ips, families)
	status := si.Status
	have, err := apply(ctx, m, m.imp, si)
	if err != nil {
		return err
	}
	if !slices.Equal(have.Status.Clusters, status.Clusters) {
		patch := client.MergeFrom(have.DeepCopy())
		have.Status.Clusters = status.Clusters
		if err := m.Client.Status().Patch(ctx, have, patch); err != nil {
			return fmt.Errorf("cluster %s, status of ServiceImport %s: %w", m.Name, key, err)
		}
	}
	return writeSlices(ctx, federation, key, m, imp, have)
}

// writeSlices writes the import's EndpointSlices and deletes those of
// sources that are gone.
func writeSlices(ctx context.Context, federation string, key types.NamespacedName, m *member, imp *Import, owner *mcsv1beta1.ServiceImport) error {
	want := endpointSlices(federation, key, imp, m.id, owner)
	var errs []error
	for _, s := range want {
		var cur *discoveryv1.EndpointSlice
		if i := slices.IndexFunc(m.slices, func(h discoveryv1.EndpointSlice) bool { return h.Name == s.Name }); i >= 0 {
			cur = &m.slices[i]
		}
		if _, err := apply(ctx, m, cur, s); err != nil {
			errs = append(errs, err)
		}
	}
	for i := range m.slices {
		if !slices.ContainsFunc(want, func(w *discoveryv1.EndpointSlice) bool { return w.Name == m.slices[i].Name }) {
			errs = append(errs, deleteObject(ctx, m, &m.slices[i]))
		}
	}
	return errors.Join(errs...)
}

// apply writes want with copies.Apply (server-side apply as kfed) and
// returns the object as the member now has it: want as written, or cur
// when it already held want.
func apply[T client.Object](ctx context.Context, m *member, cur, want T) (T, error) {
	var none T
	var curObj client.Object
	if !isNil(cur) {
		curObj = cur
	}
	changed, err := copies.Apply(ctx, m.Client, curObj, want)
	if apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return none, fmt.Errorf("cluster %s, namespace %s: %w", m.Name, want.GetNamespace(), errNoNamespace)
	}
	if err != nil {
		return none, fmt.Errorf("cluster %s refused %T %s/%s: %w", m.Name, want, want.GetNamespace(), want.GetName(), err)
	}
	if changed || isNil(cur) {
		return want, nil
	}
	return cur, nil
}

func isNil[T client.Object](o T) bool {
	var zero T
	return any(o) == any(zero)
}

// remove deletes what kfed wrote in a member for a name no longer
// exported: its import, derived Service and EndpointSlices (these are
// owned by the import too, so a member's garbage collector would remove
// them; kfed does not wait for it).
func remove(ctx context.Context, key types.NamespacedName, m *member) error {
	var errs []error
	if m.imp != nil && isOurs(m.imp) {
		errs = append(errs, deleteObject(ctx, m, m.imp))
	}
	if m.derived != nil && isOurs(m.derived) {
		errs = append(errs, deleteObject(ctx, m, m.derived))
	}
	for i := range m.slices {
		errs = append(errs, deleteObject(ctx, m, &m.slices[i]))
	}
	return errors.Join(errs...)
}

func deleteObject(ctx context.Context, m *member, obj client.Object) error {
	if err := m.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cluster %s, deleting %T %s/%s: %w", m.Name, obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
