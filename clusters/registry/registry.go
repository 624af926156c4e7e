// Package registry holds a client and a synced cache for each Ready member
// cluster, as cluster-api's clustercache does: which kinds each controller
// watches and writes there, the events that carry member changes to the
// controllers (Channel), and a bounded fan-out over the members.
package registry

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/clusters/access"
	"github.com/kfed-io/kfed/internal/geo"
)

// Member is a Ready member cluster with a synced cache.
type Member struct {
	Name   string
	Region string
	Zones  []string
	Labels map[string]string
	// Location is where the member is (Cluster.Coordinates), nil when
	// unknown.
	Location *geo.Point
	// Client reads from the member's cache and writes to its API server.
	Client client.Client
	// Reader reads from the member's API server, for what its cache does
	// not hold (managedFields) or may not hold yet.
	Reader client.Reader

	// unwatched are the optional kinds (by Go type) not watched here.
	unwatched map[reflect.Type]bool
}

// Watches reports whether the member's cache watches obj's kind: false for
// a kind given to WatchOptional that the member does not serve or kfed may
// not read there. Reading an unwatched kind through Client would start an
// informer that never syncs.
func (m Member) Watches(obj client.Object) bool { return !m.unwatched[reflect.TypeOf(obj)] }

// ObjectHandler is told about every add, update and delete of a watched
// kind in any member; the registry calls it from informer goroutines.
type ObjectHandler func(member string, obj client.Object)

// Registry keeps one client and informer cache per Ready member cluster,
// started when its Cluster turns Ready and stopped when it turns Offline or
// goes away. Controllers that act on members ask it for clients and hear
// about member objects through Watch.
type Registry struct {
	// Fed reads Clusters and their Secrets in the control plane.
	Fed    client.Client
	Scheme *runtime.Scheme
	Logger logr.Logger
	// SyncTimeout bounds the wait for a new member's cache; 30 s when zero.
	SyncTimeout time.Duration
	// WrapTransport, if set, wraps every member client's transport (to count
	// requests, for example).
	WrapTransport transport.WrapperFunc
	// Access reaches the clusters taken from ClusterProfiles; nil when kfed
	// runs without an inventory.
	Access *access.Config

	mu      sync.Mutex
	members map[string]*running
	watches []watch
	written []MemberKind
	changes []chan event.GenericEvent
	// drained are the Clusters, Ready or not, whose spec.drained was true
	// when last reconciled: a drain or undrain changes what every
	// publisher publishes, even for a member that cannot be reached.
	drained map[string]bool
}

type running struct {
	Member
	configHash string
	cancel     context.CancelFunc
	done       chan struct{}
}

type watch struct {
	obj      client.Object
	handler  ObjectHandler
	optional bool
}

// Watch makes h hear about objects of obj's kind in every member, current and
// future. Call it before the manager starts.
func (r *Registry) Watch(obj client.Object, h ObjectHandler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watches = append(r.watches, watch{obj: obj, handler: h})
}

// WatchOptional is Watch for a kind that a member may not serve (its CRD is
// not installed) or that kfed's identity there may not list and watch (the
// member's RBAC predates the feature). Such a member is not watched for it
// until its cache restarts, and serves everything else as before.
func (r *Registry) WatchOptional(obj client.Object, h ObjectHandler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watches = append(r.watches, watch{obj: obj, handler: h, optional: true})
}

// A MemberKind is a kind of object a controller writes in members. When a
// member leaves, MemberCleanup deletes (or lets go of) every object of the
// kind there that carries kfed's federation label and Labels.
type MemberKind struct {
	// List is the kind's list, such as &corev1.ServiceList{}.
	List client.ObjectList
	// Labels narrow the kind to kfed's own objects where the label of the
	// federation alone does not: a cluster's EndpointSlice controller
	// copies a Service's labels onto the slices it writes.
	Labels map[string]string
}

// Writes declares kinds a controller writes in members, so that the member
// cleanup removes them: each controller declares what it writes where it
// sets up, and no list elsewhere can forget one. Call it before the manager
// starts.
func (r *Registry) Writes(kinds ...MemberKind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.written = append(r.written, kinds...)
}

// Written are the kinds every controller writes in members, as declared by
// Writes.
func (r *Registry) Written() []MemberKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.written)
}

// Changes returns a new channel that receives an event each time the set of
// Ready members changes (a member's cache has synced, or stopped); a
// controller turns it into a watch source. Each caller gets its own channel,
// so several controllers can follow the members. Call it before the manager
// starts.
func (r *Registry) Changes() <-chan event.GenericEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan event.GenericEvent, 16)
	r.changes = append(r.changes, ch)
	return ch
}

// Ready returns the Ready members, sorted by name.
func (r *Registry) Ready() []Member {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Member, 0, len(r.members))
	for _, m := range r.members {
		out = append(out, m.Member)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// maxConcurrentStarts is how many members' caches may be starting at once.
const maxConcurrentStarts = 16

// SetupWithManager runs the registry as a controller of Clusters.
func (r *Registry) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(stopAll{r}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("cluster-registry").
		For(&kfedv1alpha1.Cluster{}).
		// A kubeconfig written into its Secret restarts the member with it,
		// whether or not its Cluster changes too: kfed join --renew marks
		// the Cluster, but that event may come before the cache has the
		// new Secret, and then only the Secret's own event reloads it.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(clusters.ClustersUsingSecret(mgr.GetClient()))).
		// Starting a member's cache waits for its first list (up to
		// SyncTimeout); one member that hangs must not hold back the
		// others. A Cluster is never reconciled twice at once.
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentStarts}).
		Complete(r)
}

// stopAll stops every member cache when the manager stops.
type stopAll struct{ r *Registry }

func (s stopAll) Start(ctx context.Context) error {
	<-ctx.Done()
	s.r.mu.Lock()
	names := make([]string, 0, len(s.r.members))
	for n := range s.r.members {
		names = append(names, n)
	}
	s.r.mu.Unlock()
	for _, n := range names {
		s.r.stop(n)
	}
	return nil
}

// Reconcile starts or stops the member of one Cluster.
func (r *Registry) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var c kfedv1alpha1.Cluster
	err := r.Fed.Get(ctx, req.NamespacedName, &c)
	if (err == nil || apierrors.IsNotFound(err)) && r.drainChanged(req.Name, err == nil && c.Spec.Drained) {
		defer r.notify()
	}
	if apierrors.IsNotFound(err) || (err == nil && (c.DeletionTimestamp != nil ||
		!meta.IsStatusConditionTrue(c.Status.Conditions, kfedv1alpha1.ClusterReady))) {
		if r.stop(req.Name) {
			r.notify()
		}
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	cfg, _, err := clusters.LoadMemberConfig(ctx, r.Fed, &c, r.Access)
	if err != nil {
		return ctrl.Result{}, err
	}
	hash := configHash(cfg)
	r.mu.Lock()
	cur, ok := r.members[c.Name]
	r.mu.Unlock()
	if ok && cur.configHash == hash {
		if placeChanged(cur.Member, &c) {
			region, zones := c.Location()
			r.mu.Lock()
			cur.Region, cur.Zones, cur.Labels, cur.Location = region, slices.Clone(zones), c.Labels, coordinates(&c)
			r.mu.Unlock()
			r.notify()
		}
		return ctrl.Result{}, nil
	}
	if ok {
		r.stop(c.Name) // its kubeconfig changed
	}
	if err := r.start(ctx, &c, cfg, hash); err != nil {
		return ctrl.Result{}, fmt.Errorf("starting cache of member %s: %w", c.Name, err)
	}
	r.notify()
	return ctrl.Result{}, nil
}

func (r *Registry) start(ctx context.Context, c *kfedv1alpha1.Cluster, cfg *rest.Config, hash string) error {
	if r.WrapTransport != nil {
		cfg = rest.CopyConfig(cfg)
		cfg.Wrap(r.WrapTransport)
	}
	cl, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = r.Scheme
		o.Logger = r.Logger.WithValues("member", c.Name)
		o.Cache = memberCacheOptions()
	})
	if err != nil {
		return err
	}
	r.mu.Lock()
	watches := slices.Clone(r.watches)
	r.mu.Unlock()
	unwatched := map[reflect.Type]bool{}
	for _, w := range watches {
		if w.optional {
			if why := CannotWatch(ctx, cl, w.obj); why != "" {
				r.Logger.Info("not watching an optional kind in this member", "member", c.Name,
					"kind", fmt.Sprintf("%T", w.obj), "why", why)
				unwatched[reflect.TypeOf(w.obj)] = true
				continue
			}
		}
		inf, err := cl.GetCache().GetInformer(ctx, w.obj)
		if err != nil {
			return err
		}
		name, h := c.Name, w.handler
		emit := func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if obj, ok := o.(client.Object); ok {
				h(name, obj)
			}
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    emit,
			UpdateFunc: func(_, o any) { emit(o) },
			DeleteFunc: emit,
		}); err != nil {
			return err
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := cl.Start(runCtx); err != nil {
			r.Logger.Error(err, "member cache stopped", "member", c.Name)
		}
	}()
	syncCtx, cancelSync := context.WithTimeout(ctx, cmp.Or(r.SyncTimeout, 30*time.Second))
	defer cancelSync()
	if !cl.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		<-done
		return fmt.Errorf("cache of member %s did not sync", c.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.members == nil {
		r.members = map[string]*running{}
	}
	region, zones := c.Location()
	r.members[c.Name] = &running{
		Member: Member{
			Name: c.Name, Region: region, Zones: slices.Clone(zones), Labels: c.Labels, Location: coordinates(c),
			Client: cl.GetClient(), Reader: cl.GetAPIReader(), unwatched: unwatched,
		},
		configHash: hash, cancel: cancel, done: done,
	}
	r.Logger.Info("member cache started", "member", c.Name)
	return nil
}

// CannotWatch says why cl cannot list and watch obj's kind, or "" if it can:
// the kind is not served, or kfed's RBAC does not allow it. An informer for
// such a kind would never sync, and hold up everything started with it.
func CannotWatch(ctx context.Context, cl cluster.Cluster, obj client.Object) string {
	gvk, err := cl.GetClient().GroupVersionKindFor(obj)
	if err != nil {
		return err.Error()
	}
	mapping, err := cl.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return "not served"
	}
	if err != nil {
		return err.Error()
	}
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: mapping.Resource.Group, Resource: mapping.Resource.Resource,
			},
		}}
		if err := cl.GetClient().Create(ctx, review); err != nil {
			return "checking access: " + err.Error()
		}
		if !review.Status.Allowed {
			return verb + " is not allowed"
		}
	}
	return ""
}

// drainChanged notes whether Cluster name is drained, and reports whether
// that changed since it was last noted.
func (r *Registry) drainChanged(name string, drained bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.drained == nil {
		r.drained = map[string]bool{}
	}
	was := r.drained[name]
	if drained {
		r.drained[name] = true
	} else {
		delete(r.drained, name)
	}
	return was != drained
}

// stop stops member name's cache; it reports whether one was running.
func (r *Registry) stop(name string) bool {
	r.mu.Lock()
	m, ok := r.members[name]
	delete(r.members, name)
	r.mu.Unlock()
	if !ok {
		return false
	}
	m.cancel()
	<-m.done
	r.Logger.Info("member cache stopped", "member", name)
	return true
}

func (r *Registry) notify() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ch := range r.changes {
		select {
		case ch <- event.GenericEvent{Object: &kfedv1alpha1.Cluster{}}:
		default: // one pending change event is enough
		}
	}
}

// placeChanged reports whether c is somewhere else than m was: another
// region, zones, labels or location, which changes what Services publish
// (a location moves the cluster in proximity order).
func placeChanged(m Member, c *kfedv1alpha1.Cluster) bool {
	region, zones := c.Location()
	loc := coordinates(c)
	return m.Region != region || !slices.Equal(m.Zones, zones) || !mapsEqual(m.Labels, c.Labels) ||
		(m.Location == nil) != (loc == nil) || (loc != nil && *m.Location != *loc)
}

// coordinates is c's location, nil when it has none.
func coordinates(c *kfedv1alpha1.Cluster) *geo.Point {
	if p, ok, _ := c.Coordinates(); ok {
		return &p
	}
	return nil
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// configHash identifies a member's connection settings, so a changed
// kubeconfig restarts its cache.
func configHash(cfg *rest.Config) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%x\x00%x\x00%x\x00%s\x00%s", cfg.Host, cfg.BearerToken,
		cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData,
		cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.CertFile)
	return fmt.Sprintf("%x", h.Sum(nil))
}
