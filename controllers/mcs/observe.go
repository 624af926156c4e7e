package mcs

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	aboutv1alpha1 "github.com/kfed-io/kfed/api/about/v1alpha1"
	"github.com/kfed-io/kfed/clusters/registry"
)

// member is what one member holds of a name.
type member struct {
	registry.Member
	id      string
	export  Export
	imp     *mcsv1beta1.ServiceImport
	derived *corev1.Service
	slices  []discoveryv1.EndpointSlice
}

// observe reads, from the members' caches, what each of the Ready members
// serving the MCS API holds of key.
func observe(ctx context.Context, ready []registry.Member, key types.NamespacedName) ([]*member, error) {
	var out []*member
	for _, m := range ready {
		if !servesMCS(m) {
			continue
		}
		st := &member{Member: m, id: ClusterID(ctx, m)}
		st.export.Cluster = st.id
		if err := observeMember(ctx, key, st); err != nil {
			return nil, fmt.Errorf("cluster %s: %w", m.Name, err)
		}
		out = append(out, st)
	}
	return out, nil
}

func observeMember(ctx context.Context, key types.NamespacedName, st *member) error {
	get := func(obj client.Object) (bool, error) {
		err := st.Client.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	se := &mcsv1beta1.ServiceExport{}
	if ok, err := get(se); err != nil {
		return fmt.Errorf("reading ServiceExport %s: %w", key, err)
	} else if ok {
		st.export.Export = se
	}
	si := &mcsv1beta1.ServiceImport{}
	if ok, err := get(si); err != nil {
		return fmt.Errorf("reading ServiceImport %s: %w", key, err)
	} else if ok {
		st.imp = si
	}
	svc := &corev1.Service{}
	if ok, err := get(svc); err != nil {
		return fmt.Errorf("reading Service %s: %w", key, err)
	} else if ok {
		st.export.Service = svc
	}
	derived := &corev1.Service{}
	if err := st.Client.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: DerivedName(key.Name)}, derived); err == nil {
		st.derived = derived
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading Service %s/%s: %w", key.Namespace, DerivedName(key.Name), err)
	}
	if !st.Watches(&discoveryv1.EndpointSlice{}) {
		return nil
	}
	var ours, theirs discoveryv1.EndpointSliceList
	if err := st.Client.List(ctx, &ours, client.InNamespace(key.Namespace),
		client.MatchingLabels{mcsv1beta1.LabelServiceName: key.Name, discoveryv1.LabelManagedBy: ManagedBy}); err != nil {
		return fmt.Errorf("listing EndpointSlices of import %s: %w", key, err)
	}
	st.slices = ours.Items
	if st.export.Export == nil || st.export.Service == nil {
		return nil
	}
	if err := st.Client.List(ctx, &theirs, client.InNamespace(key.Namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: key.Name}); err != nil {
		return fmt.Errorf("listing EndpointSlices of Service %s: %w", key, err)
	}
	for _, s := range theirs.Items {
		if s.Labels[discoveryv1.LabelManagedBy] != ManagedBy {
			st.export.Slices = append(st.export.Slices, s)
		}
	}
	return nil
}

// servesMCS reports whether kfed watches ServiceExports and ServiceImports
// in m: reading a kind it does not watch would start an informer that
// never syncs.
func servesMCS(m registry.Member) bool {
	return m.Watches(&mcsv1beta1.ServiceExport{}) && m.Watches(&mcsv1beta1.ServiceImport{})
}

// ClusterID is member m's cluster ID: the value of its ClusterProperty
// cluster.clusterset.k8s.io (KEP-2149), which kfed join writes, or the
// member's name when it has none or one that is not a DNS label.
func ClusterID(ctx context.Context, m registry.Member) string {
	cp := &aboutv1alpha1.ClusterProperty{}
	if !m.Watches(cp) || m.Client.Get(ctx, client.ObjectKey{Name: aboutv1alpha1.ClusterIDProperty}, cp) != nil ||
		len(validation.IsDNS1123Label(cp.Spec.Value)) > 0 {
		return m.Name
	}
	return cp.Spec.Value
}
