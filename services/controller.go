package services

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
)

// Resolver looks up the addresses of a load balancer's hostname.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=services/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=services/finalizers,verbs=update
// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Controller reconciles federated Services.
type Controller struct {
	// Fed is the control plane client (cached reads).
	Fed      client.Client
	Members  *clusters.Registry
	Recorder events.EventRecorder
	// Federation and Domain make the names S.N.F.svc.D.
	Federation string
	Domain     string
	// Resolver re-resolves hostname ingress every sync; net.DefaultResolver
	// when nil.
	Resolver Resolver
	// Resync is how often a Service with hostname ingress is re-resolved.
	Resync time.Duration
	// Metrics, if set, counts shard and DNSEndpoint operations.
	Metrics *Metrics
	// Workers is how many Services are reconciled at once; 8 when zero. A
	// reconcile waits on several API round trips, so one worker leaves the
	// API servers idle.
	Workers int

	shardEvents chan event.GenericEvent
	stopped     chan struct{} // closed when the manager stops
}

// SetupWithManager registers the controller: it watches federated Services
// and their DNSEndpoints in the control plane, shards in every member, and
// the set of Ready members.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	c.shardEvents = make(chan event.GenericEvent, 1024)
	c.stopped = make(chan struct{})
	// Informer goroutines of member caches block on shardEvents when it is
	// full; once the manager stops nobody drains it, so they must stop
	// waiting then, or stopping a member's cache would hang.
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		close(c.stopped)
		return nil
	}))
	if err != nil {
		return err
	}
	c.Members.Watch(&corev1.Service{}, c.onShard)
	interesting := predicate.NewPredicateFuncs(func(o client.Object) bool {
		svc, ok := o.(*corev1.Service)
		return ok && (IsFederated(svc) || controllerutil.ContainsFinalizer(svc, Finalizer))
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("federated-service").
		For(&corev1.Service{}, builder.WithPredicates(interesting)).
		Owns(&extdnsv1alpha1.DNSEndpoint{}).
		WatchesRawSource(source.Channel(c.shardEvents, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(source.Channel(c.Members.Changes(), handler.EnqueueRequestsFromMapFunc(c.allFederated))).
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(c.Workers, 8)}).
		Complete(c)
}

// onShard turns a change of a member Service that mirrors a federated one
// into a reconcile of the federated one.
func (c *Controller) onShard(_ string, obj client.Object) {
	origin := obj.GetAnnotations()[AnnotationOrigin]
	if origin == "" || obj.GetLabels()[kfedv1alpha1.LabelFederation] != c.Federation {
		return
	}
	ns, name, ok := strings.Cut(origin, "/")
	if !ok {
		return
	}
	stub := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	select {
	case c.shardEvents <- event.GenericEvent{Object: stub}:
	case <-c.stopped:
	}
}

func (c *Controller) allFederated(ctx context.Context, _ client.Object) []ctrl.Request {
	var list corev1.ServiceList
	if err := c.Fed.List(ctx, &list); err != nil {
		return nil
	}
	var reqs []ctrl.Request
	for i := range list.Items {
		svc := &list.Items[i]
		if IsFederated(svc) || controllerutil.ContainsFinalizer(svc, Finalizer) {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(svc)})
		}
	}
	return reqs
}

// Reconcile brings one federated Service's shards, DNS records and status in
// line with the world.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var svc corev1.Service
	err := c.Fed.Get(ctx, req.NamespacedName, &svc)
	if apierrors.IsNotFound(err) {
		// Gone without our finalizer (or before it was added): sweep shards
		// that still point at it.
		return ctrl.Result{}, c.deleteShards(ctx, req.NamespacedName)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if svc.DeletionTimestamp != nil || !IsFederated(&svc) {
		return ctrl.Result{}, c.finalize(ctx, &svc)
	}
	if !controllerutil.ContainsFinalizer(&svc, Finalizer) {
		patch := client.MergeFrom(svc.DeepCopy())
		controllerutil.AddFinalizer(&svc, Finalizer)
		if err := c.Fed.Patch(ctx, &svc, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}

	before := svc.DeepCopy()
	st := newStatus(&svc)
	result, err := c.reconcile(ctx, &svc, st)
	st.apply(&svc)
	if !equality.Semantic.DeepEqual(before.Status, svc.Status) {
		if perr := c.Fed.Status().Patch(ctx, &svc, client.MergeFrom(before)); perr != nil {
			err = errors.Join(err, fmt.Errorf("updating status: %w", perr))
		}
		c.events(before, &svc)
	}
	return result, err
}

// reconcile does the work; st collects what the status will say.
func (c *Controller) reconcile(ctx context.Context, svc *corev1.Service, st *status) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(svc)
	cfg, err := parseConfig(svc)
	if err != nil {
		// Bad input freezes the Service as it is: no shard and no record is
		// changed until the user fixes it.
		st.invalid(reasonInvalidSpec, err.Error())
		return ctrl.Result{}, nil
	}

	var all kfedv1alpha1.ClusterList
	if err := c.Fed.List(ctx, &all); err != nil {
		return ctrl.Result{}, err
	}
	joined := map[string]*kfedv1alpha1.Cluster{}
	for i := range all.Items {
		if all.Items[i].DeletionTimestamp == nil {
			joined[all.Items[i].Name] = &all.Items[i]
		}
	}
	placed, unknown := place(cfg, joined)
	if len(unknown) > 0 {
		st.placementWarning(fmt.Sprintf("annotation %s names clusters that are not joined: %s", AnnotationClusters, strings.Join(unknown, ", ")))
	}

	var existing extdnsv1alpha1.DNSEndpoint
	haveEndpoint := true
	if err := c.Fed.Get(ctx, key, &existing); apierrors.IsNotFound(err) {
		haveEndpoint = false
	} else if err != nil {
		return ctrl.Result{}, err
	}
	previous := previousShards(existing.Spec.Endpoints, NewNames(c.Federation, c.Domain, svc.Namespace, svc.Name))

	var shards []Shard
	var errs []error
	hostnames := false
	members := c.Members.Ready() // one snapshot for the whole reconcile
	for _, m := range members {
		if !placed[m.Name] {
			if err := c.deleteShard(ctx, m, key); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		shard, err := c.ensureShard(ctx, m, svc, st)
		if err != nil {
			// A failed write (a stale cache, a rejected update) is retried
			// with backoff; meanwhile the cluster keeps the records it had,
			// so one failed request does not make DNS flap.
			errs = append(errs, err)
			if p, ok := previous[m.Name]; ok {
				shards = append(shards, p)
			}
			continue
		}
		if shard == nil {
			continue
		}
		obs, resolveErr := c.observe(ctx, m, shard)
		if obs.Hostname != "" {
			hostnames = true
		}
		if resolveErr != nil {
			st.shardProblem(m.Name, reasonIngressUnresolved, resolveErr.Error())
			if p, ok := previous[m.Name]; ok { // keep what it resolved to last time
				obs.IPs = p.IPs
			}
		}
		if len(obs.IPs) == 0 && obs.Hostname == "" {
			st.waiting(m.Name)
			continue
		}
		shards = append(shards, obs)
	}
	// A placed cluster that is joined but not Ready keeps the records it had:
	// its API being unreachable says nothing of its load balancer, and the
	// health checks decide about that.
	ready := map[string]bool{}
	for _, m := range members {
		ready[m.Name] = true
	}
	for name := range placed {
		if !ready[name] {
			st.offline(name)
			if p, ok := previous[name]; ok {
				shards = append(shards, p)
			}
		}
	}

	in := Input{Names: NewNames(c.Federation, c.Domain, svc.Namespace, svc.Name), TTL: cfg.ttl, Shards: shards}
	for _, cl := range joined {
		in.Regions = append(in.Regions, cl.Spec.Region)
		for _, z := range cl.Spec.Zones {
			in.Zones = append(in.Zones, z+"/"+cl.Spec.Region)
		}
	}
	// A region or zone name once published stays, as a CNAME fallback, after
	// its last cluster leaves: clients pinned to it keep resolving.
	regions, zones := publishedPlaces(existing.Spec.Endpoints, in.Names)
	in.Regions, in.Zones = append(in.Regions, regions...), append(in.Zones, zones...)
	eps, err := Endpoints(in)
	if err != nil {
		st.invalid(reasonNameTooLong, err.Error())
		return ctrl.Result{}, errors.Join(errs...)
	}
	st.published(in.Names.Global(), shards, len(placed))
	if err := c.writeEndpoint(ctx, svc, haveEndpoint, &existing, eps); err != nil {
		errs = append(errs, err)
	}
	if haveEndpoint {
		// writeEndpoint bumped the generation if the records changed.
		st.providers(existing.Status.Publishers, existing.Generation)
	}
	var res ctrl.Result
	if hostnames {
		res.RequeueAfter = cmp.Or(c.Resync, time.Minute)
	}
	return res, errors.Join(errs...)
}

// place returns the joined clusters the Service is placed in, and the
// names its placement gives that are not joined.
func place(cfg config, joined map[string]*kfedv1alpha1.Cluster) (map[string]bool, []string) {
	placed := map[string]bool{}
	var unknown []string
	for name, cl := range joined {
		if cfg.clusters != nil && !slices.Contains(cfg.clusters, name) {
			continue
		}
		if cfg.selector != nil {
			set := labels.Set{"kfed.io/region": cl.Spec.Region}
			for k, v := range cl.Labels {
				set[k] = v
			}
			if !cfg.selector.Matches(set) {
				continue
			}
		}
		placed[name] = true
	}
	for _, name := range cfg.clusters {
		if joined[name] == nil {
			unknown = append(unknown, name)
		}
	}
	return placed, unknown
}

// ensureShard creates, updates or adopts the shard of svc in member m. It
// returns nil with no error when a conflicting Service is in the way.
func (c *Controller) ensureShard(ctx context.Context, m clusters.Member, svc *corev1.Service, st *status) (*corev1.Service, error) {
	origin := svc.Namespace + "/" + svc.Name
	want := desiredShard(svc, c.Federation)
	var cur corev1.Service
	err := m.Client.Get(ctx, client.ObjectKeyFromObject(want), &cur)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading shard in %s: %w", m.Name, err)
	}
	existing := &cur
	if apierrors.IsNotFound(err) {
		existing = nil
	}
	switch classify(existing, origin, c.Federation) {
	case shardAbsent:
		err := m.Client.Create(ctx, want)
		if apierrors.IsNotFound(err) {
			// The namespace is missing in this member: create it and retry.
			// Asking first would cost a request (or a cluster-wide watch) for
			// every shard.
			if nerr := createNamespace(ctx, m.Client, svc.Namespace); nerr != nil {
				st.shardProblem(m.Name, reasonShardRejected, nerr.Error())
				return nil, nerr
			}
			err = m.Client.Create(ctx, want)
		}
		if err != nil {
			if apierrors.IsAlreadyExists(err) { // the cache has not seen it yet
				return nil, err
			}
			st.shardProblem(m.Name, reasonShardRejected, fmt.Sprintf("cluster %s rejected the shard: %v", m.Name, err))
			return nil, fmt.Errorf("creating shard in %s: %w", m.Name, err)
		}
		c.Metrics.shard(m.Name, "create")
		c.event(svc, corev1.EventTypeNormal, "ShardCreated", "created shard in cluster %s", m.Name)
		return want, nil
	case shardConflict:
		st.shardProblem(m.Name, reasonShardConflict, fmt.Sprintf("cluster %s has a Service %s that another federation or Service manages; left alone", m.Name, origin))
		return nil, nil
	case shardMatching:
		if !matches(existing, svc) {
			st.shardProblem(m.Name, reasonShardConflict, fmt.Sprintf("cluster %s already has a Service %s that kfed did not create and that differs (type, selector or ports); left alone", m.Name, origin))
			return nil, nil
		}
		want.Annotations[AnnotationAdopted] = "true"
		c.Metrics.shard(m.Name, "adopt")
		c.event(svc, corev1.EventTypeNormal, "ShardAdopted", "adopted the matching Service already in cluster %s", m.Name)
	case shardAdopted:
		want.Annotations[AnnotationAdopted] = "true"
	}
	if mergeShard(existing, want) {
		if err := m.Client.Update(ctx, existing); err != nil {
			st.shardProblem(m.Name, reasonShardRejected, fmt.Sprintf("cluster %s rejected the shard update: %v", m.Name, err))
			return nil, fmt.Errorf("updating shard in %s: %w", m.Name, err)
		}
		c.Metrics.shard(m.Name, "update")
	}
	return existing, nil
}

// observe reads a shard's ingress into a Shard, resolving a hostname ingress.
func (c *Controller) observe(ctx context.Context, m clusters.Member, shard *corev1.Service) (Shard, error) {
	s := Shard{Cluster: m.Name, Region: m.Region, Zones: m.Zones, Weight: 1}
	for _, ip := range shard.Spec.ClusterIPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			s.ClusterIPs = append(s.ClusterIPs, a)
		}
	}
	for _, p := range shard.Spec.Ports {
		s.Ports = append(s.Ports, Port{Name: p.Name, Protocol: string(p.Protocol), Port: p.Port})
	}
	var errs []error
	for _, ing := range shard.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(ing.IP); err == nil {
			s.IPs = append(s.IPs, a)
			continue
		}
		if ing.Hostname != "" && s.Hostname == "" {
			s.Hostname = strings.ToLower(strings.TrimSuffix(ing.Hostname, "."))
			r := c.Resolver
			if r == nil {
				r = net.DefaultResolver
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			addrs, err := r.LookupNetIP(rctx, "ip", s.Hostname)
			cancel()
			if err != nil {
				errs = append(errs, fmt.Errorf("resolving ingress hostname %s of cluster %s: %w", s.Hostname, m.Name, err))
				continue
			}
			for _, a := range addrs {
				s.IPs = append(s.IPs, a.Unmap())
			}
		}
	}
	return s, errors.Join(errs...)
}

// previousShards reads the per-cluster records of an existing DNSEndpoint
// back into Shards, so a cluster that cannot be read keeps what it had.
func previousShards(eps []extdnsv1alpha1.Endpoint, n Names) map[string]Shard {
	out := map[string]Shard{}
	suffix := "." + n.Global()
	for _, e := range eps {
		cluster, ok := strings.CutSuffix(e.DNSName, suffix)
		if !ok || strings.Contains(cluster, ".") || strings.HasPrefix(cluster, "_") {
			continue
		}
		s := out[cluster]
		s.Cluster = cluster
		switch e.RecordType {
		case "A", "AAAA":
			for _, t := range e.Targets {
				if a, err := netip.ParseAddr(t); err == nil {
					s.IPs = append(s.IPs, a)
				}
			}
			for _, p := range e.ProviderSpecific {
				switch p.Name {
				case extdnsv1alpha1.PropRegion:
					s.Region = p.Value
				case extdnsv1alpha1.PropZone:
					s.Zones = strings.Split(p.Value, ",")
				case extdnsv1alpha1.PropWeight:
					s.Weight, _ = strconv.Atoi(p.Value)
				case extdnsv1alpha1.PropHostname:
					s.Hostname = p.Value
				case extdnsv1alpha1.PropClusterIP:
					for _, v := range strings.Split(p.Value, ",") {
						if a, err := netip.ParseAddr(v); err == nil && !slices.Contains(s.ClusterIPs, a) {
							s.ClusterIPs = append(s.ClusterIPs, a)
						}
					}
				}
			}
		case "CNAME":
			if len(e.Targets) == 1 {
				s.Hostname = e.Targets[0]
			}
		}
		out[cluster] = s
	}
	// Named ports come back from the SRV records that target the cluster.
	for _, e := range eps {
		if e.RecordType != "SRV" || !strings.HasPrefix(e.DNSName, "_") {
			continue
		}
		labels := strings.SplitN(e.DNSName, ".", 3)
		if len(labels) < 3 || !strings.HasPrefix(labels[1], "_") {
			continue
		}
		name, proto := strings.TrimPrefix(labels[0], "_"), strings.ToUpper(strings.TrimPrefix(labels[1], "_"))
		for _, t := range e.Targets {
			f := strings.Fields(t) // priority weight port target
			if len(f) != 4 {
				continue
			}
			cluster, ok := strings.CutSuffix(f[3], suffix)
			port, err := strconv.ParseInt(f[2], 10, 32)
			if s, known := out[cluster]; ok && known && err == nil {
				s.Ports = append(s.Ports, Port{Name: name, Protocol: proto, Port: int32(port)})
				if w, err := strconv.Atoi(f[1]); err == nil && s.Region == "" {
					s.Weight = w // a CNAME-only cluster's weight is only here
				}
				out[cluster] = s
			}
		}
	}
	// Region and zone of a CNAME-only cluster are not in its per-cluster
	// records; read them from the zone-level names it appeared under.
	for name, s := range out {
		if s.Region != "" {
			continue
		}
		for _, e := range eps {
			if e.RecordType == "CNAME" && len(e.Targets) == 1 && e.Targets[0] == s.Hostname && e.DNSName != n.Cluster(name) {
				rest := strings.TrimSuffix(strings.TrimPrefix(e.DNSName, n.base()+"."), "."+n.domain)
				if z, r, ok := strings.Cut(rest, "."); ok && !strings.Contains(r, ".") {
					s.Zones, s.Region = []string{z}, r
				}
			}
		}
		out[name] = s
	}
	return out
}

// publishedPlaces lists the regions and zones ("zone/region") that have a
// name among eps.
func publishedPlaces(eps []extdnsv1alpha1.Endpoint, n Names) (regions, zones []string) {
	prefix, suffix := n.base()+".", "."+n.domain
	for _, e := range eps {
		rest, ok := strings.CutPrefix(e.DNSName, prefix)
		if !ok {
			continue
		}
		if rest, ok = strings.CutSuffix(rest, suffix); !ok {
			continue
		}
		switch parts := strings.Split(rest, "."); len(parts) {
		case 1:
			regions = append(regions, parts[0])
		case 2:
			zones = append(zones, parts[0]+"/"+parts[1])
		}
	}
	return regions, zones
}

// writeEndpoint creates or updates the Service's DNSEndpoint.
func (c *Controller) writeEndpoint(ctx context.Context, svc *corev1.Service, exists bool, cur *extdnsv1alpha1.DNSEndpoint, eps []extdnsv1alpha1.Endpoint) error {
	want := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Name: svc.Name, Namespace: svc.Namespace,
			Labels: map[string]string{kfedv1alpha1.LabelManagedBy: "kfed", kfedv1alpha1.LabelFederation: c.Federation},
		},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps},
	}
	if err := controllerutil.SetControllerReference(svc, want, c.Fed.Scheme()); err != nil {
		return err
	}
	if !exists {
		if err := c.Fed.Create(ctx, want); err != nil {
			return fmt.Errorf("creating DNSEndpoint: %w", err)
		}
		c.Metrics.endpoint("create")
		return nil
	}
	if cur.Labels[kfedv1alpha1.LabelManagedBy] != "kfed" {
		return fmt.Errorf("DNSEndpoint %s/%s exists and is not kfed's; not touched", cur.Namespace, cur.Name)
	}
	if equality.Semantic.DeepEqual(cur.Spec.Endpoints, eps) && cur.Labels[kfedv1alpha1.LabelFederation] == c.Federation {
		return nil
	}
	cur.Spec.Endpoints = eps
	cur.Labels[kfedv1alpha1.LabelFederation] = c.Federation
	cur.OwnerReferences = want.OwnerReferences
	if err := c.Fed.Update(ctx, cur); err != nil {
		return fmt.Errorf("updating DNSEndpoint: %w", err)
	}
	c.Metrics.endpoint("update")
	return nil
}

// finalize removes what kfed made for svc — shards it created, its
// DNSEndpoint — lets go of adopted shards, and drops the finalizer.
func (c *Controller) finalize(ctx context.Context, svc *corev1.Service) error {
	if !controllerutil.ContainsFinalizer(svc, Finalizer) {
		return nil
	}
	key := client.ObjectKeyFromObject(svc)
	if err := c.deleteShards(ctx, key); err != nil {
		return err
	}
	var ep extdnsv1alpha1.DNSEndpoint
	if err := c.Fed.Get(ctx, key, &ep); err == nil && ep.Labels[kfedv1alpha1.LabelManagedBy] == "kfed" {
		if err := c.Fed.Delete(ctx, &ep); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting DNSEndpoint: %w", err)
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	patch := client.MergeFrom(svc.DeepCopy())
	controllerutil.RemoveFinalizer(svc, Finalizer)
	if !IsFederated(svc) && svc.DeletionTimestamp == nil {
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
		controllerutil.RemoveFinalizer(svc, Finalizer)
	}
	if err := c.Fed.Patch(ctx, svc, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer: %w", err)
	}
	return nil
}

// deleteShards deletes kfed-created shards of key in every Ready member.
func (c *Controller) deleteShards(ctx context.Context, key types.NamespacedName) error {
	var errs []error
	for _, m := range c.Members.Ready() {
		if err := c.deleteShard(ctx, m, key); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteShard deletes the shard of key in m if kfed created it, and lets go
// of it if kfed adopted it. Anything else is left alone.
func (c *Controller) deleteShard(ctx context.Context, m clusters.Member, key types.NamespacedName) error {
	var cur corev1.Service
	if err := m.Client.Get(ctx, key, &cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	switch classify(&cur, key.String(), c.Federation) {
	case shardOurs:
		if err := m.Client.Delete(ctx, &cur, client.Preconditions{UID: &cur.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting shard in %s: %w", m.Name, err)
		}
		c.Metrics.shard(m.Name, "delete")
	case shardAdopted:
		releaseShard(&cur)
		if err := m.Client.Update(ctx, &cur); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing adopted shard in %s: %w", m.Name, err)
		}
		c.Metrics.shard(m.Name, "release")
	}
	return nil
}

func createNamespace(ctx context.Context, c client.Client, name string) error {
	ns := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kfedv1alpha1.LabelManagedBy: "kfed"}}}
	if err := c.Create(ctx, &ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

func (c *Controller) event(svc *corev1.Service, typ, reason, format string, args ...any) {
	if c.Recorder != nil {
		c.Recorder.Eventf(svc, nil, typ, reason, "Reconcile", format, args...)
	}
}

// events tells users about conditions that turned bad or good again.
func (c *Controller) events(before, after *corev1.Service) {
	for _, cond := range after.Status.Conditions {
		if !strings.HasPrefix(cond.Type, "kfed.io/") {
			continue
		}
		was := meta.FindStatusCondition(before.Status.Conditions, cond.Type)
		if was != nil && was.Status == cond.Status && was.Reason == cond.Reason && was.Message == cond.Message {
			continue
		}
		if cond.Status == metav1.ConditionFalse && cond.Reason != reasonWaiting {
			c.event(after, corev1.EventTypeWarning, cond.Reason, "%s", cond.Message)
		}
	}
}
