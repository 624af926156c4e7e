package mcs

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
)

// noNamespaceRetry is when a name whose namespace the control plane lacks
// is looked at again: kfed does not watch the control plane's namespaces.
const noNamespaceRetry = time.Minute

// globalState is what one reconcile learned and decided of a name's
// federation names.
type globalState struct {
	decision globalDecision
	// exporters are the cluster IDs of the exports the condition is for:
	// the valid exports of LoadBalancer Services.
	exporters map[string]bool
	// published is kfed's DNSEndpoint for the exports, nil when none;
	// taken is true when a DNSEndpoint of the name is not the exports'
	// (a federated Service's of the same name, or a user's).
	published *extdnsv1alpha1.DNSEndpoint
	taken     bool
}

// observeGlobal reads what the federation's names of key depend on, and
// decides them (decideGlobal); nil without a control plane.
func (c *Controller) observeGlobal(ctx context.Context, key types.NamespacedName, members []*member, d Decision) (*globalState, error) {
	if c.Fed == nil {
		return nil, nil
	}
	st := &globalState{exporters: map[string]bool{}}
	in := globalInput{
		names: publish.NewNames(c.Federation, c.Domain, key.Namespace, key.Name), key: key,
		joined: map[string]*kfedv1alpha1.Cluster{}, ready: map[string]bool{}, now: c.Clock.Now(),
	}
	var cur extdnsv1alpha1.DNSEndpoint
	switch err := c.Fed.Get(ctx, key, &cur); {
	case err == nil && cur.Annotations[kfedv1alpha1.AnnotationHostnamesOf] == Origin(key):
		in.published, st.published = &cur, &cur
	case err == nil:
		st.taken = true
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading DNSEndpoint %s: %w", key, err)
	}
	if d.Import != nil && d.Import.Spec.Type == mcsv1beta1.ClusterSetIP {
		for _, m := range members {
			if e := m.export; e.Export != nil && e.Service != nil && e.Service.Spec.Type == corev1.ServiceTypeLoadBalancer && !headless(e.Service) {
				if _, bad := invalid(e); !bad {
					st.exporters[m.id] = true
					in.exports = append(in.exports, c.lbExport(ctx, m))
				}
			}
		}
	}
	if len(in.exports) == 0 && in.published == nil {
		return st, nil // nothing published, nothing to publish
	}
	var all kfedv1alpha1.ClusterList
	if err := c.Fed.List(ctx, &all); err != nil {
		return nil, fmt.Errorf("reading the federation's clusters: %w", err)
	}
	for i := range all.Items {
		if all.Items[i].DeletionTimestamp == nil {
			in.joined[all.Items[i].Name] = &all.Items[i]
		}
	}
	for _, m := range c.Members.Ready() {
		in.ready[m.Name] = true
	}
	var err error
	if in.health, err = publish.ReadHealth(ctx, c.Fed, c.Federation, in.now, c.Freshness); err != nil {
		return nil, err
	}
	st.decision = decideGlobal(in)
	return st, nil
}

// lbExport is a member's export of a LoadBalancer Service as a cluster
// row: its load balancer's addresses (publish.ServiceRow), weighed by its
// ready endpoints.
func (c *Controller) lbExport(ctx context.Context, m *member) lbExport {
	row, err := publish.ServiceRow(ctx, c.Resolver, m.Member, m.export.Service)
	row.Location, row.Weight = m.Location, readyEndpoints(m.export.Slices)
	e := lbExport{export: m.export, row: row, outcome: publish.Serving}
	switch {
	case err != nil:
		e.outcome = publish.Unresolved
	case len(row.Addresses) == 0 && row.Hostname == "":
		e.outcome = publish.Waiting
	}
	return e
}

// markHealth takes the clusters the global name leaves out, found down or
// drained, out of the import's EndpointSlices: their load balancers'
// endpoints are written not ready (EndpointsIn).
func markHealth(imp *Import, members []*member, st *globalState) {
	if imp == nil || st == nil || st.decision.healthy == nil {
		return
	}
	name := map[string]string{}
	for _, m := range members {
		name[m.id] = m.Name
	}
	for i := range imp.Sources {
		healthy, judged := st.decision.healthy[name[imp.Sources[i].Cluster]]
		imp.Sources[i].Unhealthy = judged && !healthy
	}
}

// writeGlobal writes, or deletes, the exports' DNSEndpoint in the control
// plane (publish.Publisher), and returns the condition the exports get
// (nil for none) and when to look again (0 for when something changes).
func (c *Controller) writeGlobal(ctx context.Context, key types.NamespacedName, st *globalState) (*metav1.Condition, time.Duration, error) {
	if st == nil {
		return nil, 0, nil
	}
	d := st.decision
	switch {
	case len(st.exporters) > 0 && st.taken:
		cond := globalCondition(metav1.ConditionFalse, ReasonNameTaken, fmt.Sprintf(
			"the control plane's DNSEndpoint %s is not this export's (a federated Service %s, or someone else's): the federation's names are its", key, key))
		return &cond, 0, nil
	case d.keep:
		return &d.condition, 0, nil
	case !d.publish:
		if st.published != nil {
			_, err := c.publisher().Delete(ctx, key, Origin(key), "")
			return nil, 0, err
		}
		return nil, 0, nil
	}
	if c.Tenancy.Federation() != "" {
		for _, e := range d.endpoints {
			if err := c.Tenancy.Check(key.Namespace, e.DNSName); err != nil {
				cond := globalCondition(metav1.ConditionFalse, ReasonNotPublished, err.Error())
				return &cond, 0, nil
			}
		}
	}
	_, _, err := c.publisher().Write(ctx, st.published, publish.Record{
		Key: key, Origin: Origin(key), Endpoints: d.endpoints, Clusters: d.clusters, Annotations: d.annotations,
	})
	switch {
	case apierrors.IsNotFound(err):
		cond := globalCondition(metav1.ConditionFalse, ReasonNoNamespace, fmt.Sprintf(
			"the control plane has no namespace %s: kfed does not make one, and publishes the federation's names once it exists", key.Namespace))
		return &cond, noNamespaceRetry, nil
	case err != nil:
		cond := globalCondition(metav1.ConditionFalse, ReasonNotPublished, err.Error())
		return &cond, 0, err
	}
	return &d.condition, d.due, nil
}

func (c *Controller) publisher() publish.Publisher {
	return publish.Publisher{Client: c.Fed, Live: c.Live, Federation: c.Federation, Namespace: c.namespace()}
}

func (c *Controller) namespace() string {
	if c.Namespace != "" {
		return c.Namespace
	}
	return kfedv1alpha1.DefaultNamespace
}

// ownDNSEndpoint maps a DNSEndpoint of the control plane to the name it
// publishes, when it is an export's: one that lingers after its exports
// went (the cache lagged the write) is deleted.
func (c *Controller) ownDNSEndpoint(_ context.Context, obj client.Object) []ctrl.Request {
	key := client.ObjectKeyFromObject(obj)
	if obj.GetAnnotations()[kfedv1alpha1.AnnotationHostnamesOf] != Origin(key) {
		return nil
	}
	return []ctrl.Request{{NamespacedName: key}}
}

// enqueueEndpoint reconciles the name whose DNSEndpoint key a checker's
// verdict is about, when that DNSEndpoint is an export's.
func (c *Controller) enqueueEndpoint(key types.NamespacedName) {
	var ep extdnsv1alpha1.DNSEndpoint
	if c.Fed.Get(context.Background(), key, &ep) == nil && ep.Annotations[kfedv1alpha1.AnnotationHostnamesOf] == Origin(key) {
		c.events.Send(stub(key))
	}
}
