package mcs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
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

// member is what one member holds of a name.
type member struct {
	registry.Member
	id      string
	export  Export
	imp     *mcsv1beta1.ServiceImport
	derived *corev1.Service
	slices  []discoveryv1.EndpointSlice
}

// Reconcile observes every member's export and import of a name, decides
// the import and the federation's names of its LoadBalancer exports,
// writes the import to every member and the names to the control plane,
// and reports on every export.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.NamespacedName
	members, err := c.observe(ctx, key)
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
	outcome := c.write(ctx, key, members, d)
	cond, again, gerr := c.writeGlobal(ctx, key, global)
	err = c.report(ctx, members, d, outcome, global, cond)
	return ctrl.Result{RequeueAfter: again}, errors.Join(outcome.err(), gerr, err)
}

// observe reads, from the members' caches, what each Ready member serving
// the MCS API holds of key.
func (c *Controller) observe(ctx context.Context, key types.NamespacedName) ([]*member, error) {
	var out []*member
	for _, m := range c.Members.Ready() {
		if !servesMCS(m) {
			continue
		}
		st := &member{Member: m, id: ClusterID(ctx, m)}
		st.export.Cluster = st.id
		if err := c.observeMember(ctx, key, st); err != nil {
			return nil, fmt.Errorf("cluster %s: %w", m.Name, err)
		}
		out = append(out, st)
	}
	return out, nil
}

func (c *Controller) observeMember(ctx context.Context, key types.NamespacedName, st *member) error {
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

// clusterList is a sorted, comma-separated list of cluster IDs.
func clusterList(ids []string) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return strings.Join(ids, ", ")
}
