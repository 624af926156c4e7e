package mcs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	aboutv1alpha1 "github.com/kfed-io/kfed/api/about/v1alpha1"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// Controller turns the ServiceExports of every member into ServiceImports,
// derived Services and EndpointSlices in every member, and sets the
// exports' conditions. It has no object in the control plane: a request
// is the namespace and name of an export.
type Controller struct {
	Members *registry.Registry
	// Federation marks what kfed writes in members.
	Federation string
	Logger     logr.Logger
	// Workers is how many names are reconciled at once; 8 when zero, as
	// for federated Services: a reconcile waits on members' API servers.
	Workers int

	// Fed is the federation's control plane (reading from the manager's
	// cache), where the exports of Services of type LoadBalancer publish
	// the federation's names, as a federated Service does; nil publishes
	// none. Live reads its API server (publish.Publisher).
	Fed  client.Client
	Live client.Reader
	// Domain is the D of S.N.F.svc.D; Namespace is kfed's, where the
	// checkers report (kfedv1alpha1.DefaultNamespace when empty).
	Domain, Namespace string
	// Freshness is how long a checker's heartbeat counts
	// (publish.DefaultFreshness when zero).
	Freshness time.Duration
	// Resolver resolves a load balancer's hostname; the system's when nil.
	Resolver publish.Resolver
	// Tenancy is the rule every published name is checked against: an
	// export in namespace N publishes only N's names.
	Tenancy tenancy.Endpoints
	// Clock tells the time; the real one when nil at SetupWithManager.
	Clock clock.PassiveClock

	events *registry.Channel[client.Object]
}

// SetupWithManager registers the controller and its watches in every
// member: ServiceExports, ServiceImports, Services, EndpointSlices and the
// cluster ID. A member that does not serve the MCS API is left out.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	var err error
	if c.events, err = registry.NewChannel[client.Object](mgr); err != nil {
		return err
	}
	c.Members.WatchOptional(&mcsv1beta1.ServiceExport{}, c.send(ownKey))
	c.Members.WatchOptional(&mcsv1beta1.ServiceImport{}, c.send(ownKey))
	c.Members.WatchOptional(&discoveryv1.EndpointSlice{}, c.sendIfExported(sliceKey))
	c.Members.WatchOptional(&aboutv1alpha1.ClusterProperty{}, func(string, client.Object) { c.sendAll(context.Background()) })
	c.Members.Watch(&corev1.Service{}, c.sendIfExported(serviceKey))
	// Each import's ServiceImport, EndpointSlices and derived Service.
	c.Members.Writes(
		registry.MemberKind{List: &mcsv1beta1.ServiceImportList{}},
		registry.MemberKind{List: &discoveryv1.EndpointSliceList{}, Labels: map[string]string{discoveryv1.LabelManagedBy: ManagedBy}},
		registry.MemberKind{List: &corev1.ServiceList{}, Labels: map[string]string{kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy}},
	)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("mcs").
		WatchesRawSource(registry.ChannelSource(c.events, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(source.Channel(c.Members.Changes(), handler.EnqueueRequestsFromMapFunc(c.all))).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(c.Workers, 8)})
	if c.Fed != nil {
		// The exports' DNSEndpoints, and the checkers' verdicts on them.
		b = b.Watches(&extdnsv1alpha1.DNSEndpoint{}, handler.EnqueueRequestsFromMapFunc(c.ownDNSEndpoint))
		if err := mgr.Add(&publish.HealthWatch{
			Cache: mgr.GetCache(), Federation: c.Federation, Freshness: c.Freshness, Clock: c.Clock,
			Enqueue: c.enqueueEndpoint, All: c.sendAll,
		}); err != nil {
			return err
		}
	}
	return b.Complete(c)
}

// The name an event of each kind is about.
func ownKey(obj client.Object) (types.NamespacedName, bool) {
	return client.ObjectKeyFromObject(obj), true
}

func serviceKey(obj client.Object) (types.NamespacedName, bool) {
	if isOurs(obj) {
		return types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetLabels()[mcsv1beta1.LabelServiceName]}, true
	}
	return client.ObjectKeyFromObject(obj), true
}

func sliceKey(obj client.Object) (types.NamespacedName, bool) {
	l := obj.GetLabels()
	if l[discoveryv1.LabelManagedBy] == ManagedBy {
		return types.NamespacedName{Namespace: obj.GetNamespace(), Name: l[mcsv1beta1.LabelServiceName]}, true
	}
	name, ok := l[discoveryv1.LabelServiceName]
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}, ok
}

func (c *Controller) send(key func(client.Object) (types.NamespacedName, bool)) registry.ObjectHandler {
	return func(_ string, obj client.Object) {
		if k, ok := key(obj); ok {
			c.events.Send(stub(k))
		}
	}
}

// sendIfExported is send for kinds every Service has (Services and their
// EndpointSlices): only a name some Ready member exports or imports is
// reconciled, not every Service of every member.
func (c *Controller) sendIfExported(key func(client.Object) (types.NamespacedName, bool)) registry.ObjectHandler {
	return func(_ string, obj client.Object) {
		k, ok := key(obj)
		if !ok {
			return
		}
		ctx := context.Background()
		for _, m := range c.Members.Ready() {
			if !servesMCS(m) {
				continue
			}
			if m.Client.Get(ctx, k, &mcsv1beta1.ServiceExport{}) == nil || m.Client.Get(ctx, k, &mcsv1beta1.ServiceImport{}) == nil {
				c.events.Send(stub(k))
				return
			}
		}
	}
}

func stub(k types.NamespacedName) client.Object {
	return &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
}

// sendAll reconciles every name: a cluster ID changed.
func (c *Controller) sendAll(ctx context.Context) {
	for _, r := range c.all(ctx, nil) {
		c.events.Send(stub(r.NamespacedName))
	}
}

// all is every name exported or imported in a Ready member: the members
// changed, and a name whose export went while its member was away must
// lose its imports.
func (c *Controller) all(ctx context.Context, _ client.Object) []ctrl.Request {
	seen := map[types.NamespacedName]bool{}
	var reqs []ctrl.Request
	for _, m := range c.Members.Ready() {
		if !servesMCS(m) {
			continue
		}
		var exports mcsv1beta1.ServiceExportList
		var imports mcsv1beta1.ServiceImportList
		if m.Client.List(ctx, &exports, client.UnsafeDisableDeepCopy) != nil ||
			m.Client.List(ctx, &imports, client.UnsafeDisableDeepCopy) != nil {
			continue
		}
		keys := make([]types.NamespacedName, 0, len(exports.Items)+len(imports.Items))
		for i := range exports.Items {
			keys = append(keys, client.ObjectKeyFromObject(&exports.Items[i]))
		}
		for i := range imports.Items {
			keys = append(keys, client.ObjectKeyFromObject(&imports.Items[i]))
		}
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				reqs = append(reqs, ctrl.Request{NamespacedName: k})
			}
		}
	}
	return reqs
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

// Reconcile observes every member's export and import of a name, decides
// the import and the federation's names of its LoadBalancer exports,
// writes the import to every member and the names to the control plane,
// and reports on every export.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.NamespacedName
	members, err := observe(ctx, c.Members.Ready(), key)
	if err != nil {
		return ctrl.Result{}, err
	}
	exports := make([]Export, 0, len(members))
	for _, m := range members {
		exports = append(exports, m.export)
	}
	d := Decide(exports)
	global, err := c.observeGlobal(ctx, key, members, d)
	if err != nil {
		return ctrl.Result{}, err
	}
	markHealth(d.Import, members, global)
	outcome := write(ctx, c.Logger, c.Federation, key, members, d)
	cond, again, gerr := c.writeGlobal(ctx, key, global)
	err = report(ctx, c.Logger, members, d, outcome, global, cond)
	return ctrl.Result{RequeueAfter: again}, errors.Join(outcome.err(), gerr, err)
}

// noNamespaceRetry is when a name whose namespace the control plane lacks
// is looked at again: kfed does not watch the control plane's namespaces.
const noNamespaceRetry = time.Minute

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
