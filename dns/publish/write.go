package publish

import (
	"context"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
)

// Record is what one federated object's DNSEndpoint should hold.
type Record struct {
	// Key is where the DNSEndpoint is.
	Key types.NamespacedName
	// Owner is the federated object. In Key's namespace it is the
	// DNSEndpoint's controller (an owner reference), and a DNSEndpoint
	// there is kfed's when it carries kfed's managed-by label; elsewhere
	// Origin names it.
	Owner client.Object
	// Origin, for a DNSEndpoint outside its object's namespace, is
	// kfedv1alpha1.AnnotationHostnamesOf's value.
	Origin string
	// Endpoints are the records (Endpoints, AddressEndpoints); Clusters
	// the cluster table (dnsendpoint.SetClusters).
	Endpoints []extdnsv1alpha1.Endpoint
	Clusters  []dnsendpoint.Cluster
	// Annotations are the rest kfed says on the DNSEndpoint: the health
	// checkers' settings, a failover state, the routing.
	Annotations map[string]string
}

// Publisher writes and deletes one federation's DNSEndpoints in the
// control plane: every publisher of federated objects (Services, Gateways
// and Ingresses, exported Services) writes through it.
type Publisher struct {
	// Client writes, and reads from the cache.
	Client client.Client
	// Live reads the API server itself, where a cache that lags could hide
	// a DNSEndpoint that exists; Client when nil.
	Live       client.Reader
	Federation string
	// Namespace is kfed's, where the federation's serial marker is.
	Namespace string
}

// Op says what Write did.
type Op string

const (
	Unchanged Op = ""
	Created   Op = "create"
	Updated   Op = "update"
)

// managedBy is the field that says a DNSEndpoint is kfed's: whoever set it
// with an update was kfed, before it wrote DNSEndpoints with apply.
var managedBy = fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", "labels", kfedv1alpha1.LabelManagedBy))

// Write brings r's DNSEndpoint in line with server-side apply, as kfed
// writes member objects (copies.Apply): the API server removes what kfed
// set before and no longer sets (a health setting dropped from the object,
// a failover state), keeps what others set, and a DNSEndpoint that already
// holds r costs no request. cur is the DNSEndpoint as the cache has it, nil
// when absent; a DNSEndpoint at r.Key that is not r's (not kfed's, or
// another object's) is never touched. It returns the DNSEndpoint as it now
// is (cur when unchanged).
func (p Publisher) Write(ctx context.Context, cur *extdnsv1alpha1.DNSEndpoint, r Record) (*extdnsv1alpha1.DNSEndpoint, Op, error) {
	want, err := p.desired(r)
	if err != nil {
		return nil, Unchanged, err
	}
	if cur == nil {
		// The cache may not have seen a DNSEndpoint made a moment ago, or
		// a user's of the same name: an apply would take either over. Only
		// a conflict says there is one, to read.
		switch err := copies.ApplyNew(ctx, p.Client, want); {
		case err == nil:
			return want, Created, nil
		case !apierrors.IsConflict(err):
			return nil, Unchanged, fmt.Errorf("writing DNSEndpoint %s: %w", r.Key, err)
		}
		var live extdnsv1alpha1.DNSEndpoint
		switch err := p.live().Get(ctx, r.Key, &live); {
		case err == nil:
			cur = &live
		case !apierrors.IsNotFound(err):
			return nil, Unchanged, fmt.Errorf("reading DNSEndpoint %s: %w", r.Key, err)
		}
	}
	op := Created
	if cur != nil {
		if !owns(cur, r.Origin) {
			return cur, Unchanged, fmt.Errorf("DNSEndpoint %s exists and is not kfed's for this object; not touched", r.Key)
		}
		if err := copies.UpgradeOwnershipBy(ctx, p.live(), p.Client, cur, managedBy); err != nil {
			return cur, Unchanged, fmt.Errorf("DNSEndpoint %s: %w", r.Key, err)
		}
		op = Updated
	}
	changed, err := copies.Apply(ctx, p.Client, cur, want)
	if err != nil {
		return cur, Unchanged, fmt.Errorf("writing DNSEndpoint %s: %w", r.Key, err)
	}
	if !changed {
		return cur, Unchanged, nil
	}
	return want, op, nil
}

// desired is the DNSEndpoint r says.
func (p Publisher) desired(r Record) (*extdnsv1alpha1.DNSEndpoint, error) {
	want := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Name: r.Key.Name, Namespace: r.Key.Namespace,
			Labels:      dnsendpoint.Selector(p.Federation),
			Annotations: maps.Clone(r.Annotations),
		},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: r.Endpoints},
	}
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	dnsendpoint.SetClusters(want, r.Clusters)
	if r.Origin != "" {
		want.Annotations[kfedv1alpha1.AnnotationHostnamesOf] = r.Origin
	} else if err := controllerutil.SetControllerReference(r.Owner, want, p.Client.Scheme()); err != nil {
		return nil, err
	}
	return want, nil
}

// owns reports whether ep is kfed's DNSEndpoint for the object origin
// names ("" for one in its object's namespace, kfed's by its label).
func owns(ep *extdnsv1alpha1.DNSEndpoint, origin string) bool {
	if origin != "" {
		return ep.Annotations[kfedv1alpha1.AnnotationHostnamesOf] == origin
	}
	return ep.Labels[kfedv1alpha1.LabelManagedBy] == kfedv1alpha1.ManagedBy
}

func (p Publisher) live() client.Reader {
	if p.Live != nil {
		return p.Live
	}
	return p.Client
}

// Delete deletes the DNSEndpoint key if it is kfed's for the object origin
// names ("" for one in its object's namespace), read from the API server:
// one written just before its object's deletion may not be in the cache
// yet, and the caller's finalizer must not go while it exists. Then it
// writes mark on the serial marker (MarkDeletion), or, when mark is empty
// and a DNSEndpoint went, the DNSEndpoint's key and UID. It reports
// whether it deleted one.
func (p Publisher) Delete(ctx context.Context, key types.NamespacedName, origin, mark string) (bool, error) {
	var ep extdnsv1alpha1.DNSEndpoint
	deleted := false
	switch err := p.live().Get(ctx, key, &ep); {
	case err == nil && owns(&ep, origin):
		if err := p.Client.Delete(ctx, &ep); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("deleting DNSEndpoint %s: %w", key, err)
		}
		deleted = true
		if mark == "" {
			mark = key.String() + " " + string(ep.UID)
		}
	case err != nil && !apierrors.IsNotFound(err):
		return false, fmt.Errorf("reading DNSEndpoint %s: %w", key, err)
	}
	if mark == "" {
		return deleted, nil
	}
	// Before the caller forgets the deletion, so that a crash in between
	// retries it.
	return deleted, MarkDeletion(ctx, p.Client, p.Namespace, p.Federation, mark)
}

// MarkDeletion writes value (what was deleted, with its UID) on
// federation's serial marker in namespace, kfed's, creating the marker if
// it is missing (ADR 0004), so that every CoreDNS replica's SOA serial
// moves past the deletion. Every writer that deletes one of the
// federation's DNSEndpoints calls it before it forgets the deletion;
// writing the same value again changes nothing.
func MarkDeletion(ctx context.Context, fed client.Client, namespace, federation, value string) error {
	key := client.ObjectKey{Namespace: namespace, Name: dnsendpoint.SerialMarker(federation)}
	var marker extdnsv1alpha1.DNSEndpoint
	err := fed.Get(ctx, key, &marker)
	if apierrors.IsNotFound(err) {
		marker = extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name,
			Labels:      dnsendpoint.Selector(federation),
			Annotations: map[string]string{dnsendpoint.AnnotationLastDeleted: value},
		}}
		switch err := fed.Create(ctx, &marker); {
		case err == nil, apierrors.IsAlreadyExists(err):
		case apierrors.IsNotFound(err):
			// No kfed namespace yet (no member ever joined): a deletion
			// must not hang on the marker; the serials agree again at the
			// next write.
		default:
			return fmt.Errorf("creating the serial marker %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the serial marker %s: %w", key, err)
	}
	if marker.Annotations[dnsendpoint.AnnotationLastDeleted] == value {
		return nil
	}
	patch := client.MergeFrom(marker.DeepCopy())
	if marker.Annotations == nil {
		marker.Annotations = map[string]string{}
	}
	marker.Annotations[dnsendpoint.AnnotationLastDeleted] = value
	if err := fed.Patch(ctx, &marker, patch); err != nil {
		return fmt.Errorf("writing the serial marker %s: %w", key, err)
	}
	return nil
}
