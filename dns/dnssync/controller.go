package dnssync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnsprovider"

	"github.com/kfed-io/kfed/internal/promreg"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints/status,verbs=get;update;patch

// Controller publishes the control plane's DNSEndpoints to one provider for
// as long as the manager runs (and leads): after every change, debounced, and
// every Interval regardless. Plans run against the Syncer's cached listing,
// so the periodic pass sends nothing when nothing changed.
type Controller struct {
	Syncer     *Syncer
	Fed        client.Client
	Cache      cache.Cache
	Recorder   events.EventRecorder
	Federation string
	// Tenancy decides which endpoints of each DNSEndpoint are published;
	// when zero, Federation's rule trusting kfed's default namespace.
	Tenancy tenancy.Endpoints
	Logger  logr.Logger
	// Interval between syncs when nothing changes; a minute when zero.
	Interval time.Duration
	// Debounce gathers bursts of changes into one sync; a second when zero.
	Debounce time.Duration
	Metrics  *Metrics
	// APIReader reads a DNSEndpoint afresh when a status write conflicts;
	// Fed when nil.
	APIReader client.Reader

	conflicts map[string]bool // "name resource" already reported
	refusals  map[string]bool // "name resource" already reported

	// state is what the passes since the last full plan published; nil
	// until the first pass succeeds, and after any error, failed status
	// write or full plan that failed. A pass in which nothing changed, while
	// the Syncer plans from cached listings only and every status was up to
	// date, is skipped; one in which a few DNSEndpoints changed plans only
	// their names. At 10,000 Services planning every name each pass was most
	// of the controller's CPU and garbage.
	state         *published
	lastConflicts int
}

var _ manager.LeaderElectionRunnable = (*Controller)(nil)

// NeedLeaderElection is true: only the leader writes to DNS.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start runs the sync loop until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	trigger := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	inf, err := c.Cache.GetInformer(ctx, &extdnsv1alpha1.DNSEndpoint{})
	if err != nil {
		return fmt.Errorf("watching DNSEndpoints: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke,
	})
	if err != nil {
		return err
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	if !c.Cache.WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	interval := c.Interval
	if interval == 0 {
		interval = time.Minute
	}
	debounce := c.Debounce
	if debounce == 0 {
		debounce = time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		c.syncOnce(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-trigger:
			select { // let a burst settle
			case <-ctx.Done():
				return nil
			case <-time.After(debounce):
			}
		}
	}
}

func (c *Controller) syncOnce(ctx context.Context) {
	labels := client.MatchingLabels(dnsendpoint.Selector(c.Federation))
	start := time.Now()
	// The cache's own objects, not copies: a sync reads every DNSEndpoint
	// and writes few, and copying all of them each pass was most of its
	// garbage at 10,000 Services. Nothing here may change them.
	var list extdnsv1alpha1.DNSEndpointList
	if err := c.Fed.List(ctx, &list, labels, client.UnsafeDisableDeepCopy); err != nil {
		c.Logger.Error(err, "listing DNSEndpoints")
		c.Metrics.failed(c.Syncer.Provider.Name(), time.Since(start))
		return
	}
	before := c.Syncer.Provider.Stats()
	p, skipped, err := c.sync(ctx, list.Items)
	if skipped {
		c.Metrics.observe(c.Syncer.Provider.Name(), before, before, c.lastConflicts, time.Since(start), nil)
		return
	}
	c.lastConflicts = len(p.conflicts)
	c.Metrics.observe(c.Syncer.Provider.Name(), before, c.Syncer.Provider.Stats(), len(p.conflicts), time.Since(start), err)
	c.Metrics.refusedNames(c.Syncer.Provider.Name(), len(p.Refused))
	if err != nil {
		c.Logger.Error(err, "DNS sync", "provider", c.Syncer.Provider.Name())
		if errors.Is(err, dnsprovider.ErrPrecondition) {
			c.Syncer.Invalidate()
		}
	} else {
		c.Logger.V(1).Info("DNS sync", "provider", c.Syncer.Provider.Name(), "changes", p.Changes(), "listed", p.Listed,
			"full", p.full, "names", p.names)
	}
	c.reportConflicts(ctx, p.conflicts)
	c.reportRefusals(ctx, list.Items, p.Refused)
	c.statusesWritten(c.markPublished(ctx, list.Items, p.conflicts, p.Refused, err))
}

// sync runs one pass over the DNSEndpoints items (the cache's, in any
// order), unless nothing changed since the last, every status was then up
// to date and the Syncer plans from cached listings only: then it skips it.
func (c *Controller) sync(ctx context.Context, items []extdnsv1alpha1.DNSEndpoint) (p passResult, skipped bool, err error) {
	rule := c.Tenancy
	if rule.Federation() == "" {
		rule = tenancy.NewEndpoints(c.Federation, []string{kfedv1alpha1.DefaultNamespace})
	}
	eps := sortedEndpoints(items)
	var changed []*extdnsv1alpha1.DNSEndpoint
	var removed []types.UID
	if c.state != nil {
		changed, removed = c.state.changes(eps)
		if len(changed) == 0 && len(removed) == 0 && c.state.statusesCurrent && c.Syncer.Fresh() {
			return passResult{}, true, nil
		}
	}
	p, err = c.publish(ctx, rule, eps, changed, removed)
	return p, false, err
}

// passResult is what publish did.
type passResult struct {
	Result
	// conflicts are every name's, as a full plan would report them.
	conflicts []dnsprovider.Conflict
	// full says the pass planned every name; names counts those planned
	// otherwise.
	full  bool
	names int
}

// publish plans and applies eps (in sortedEndpoints order). When the last
// pass succeeded and every zone's cached listing is fresh, it plans only the
// names of the DNSEndpoints that changed (see published), however many:
// that costs no more than a full plan, and falling back to one when many
// changed made each pass slower while Services were being created, so that
// the next found more changed, and so on. Otherwise, or when in doubt, it
// plans every name. It keeps c.state for the next pass only when this one
// succeeded.
func (c *Controller) publish(ctx context.Context, rule tenancy.Endpoints, eps []*extdnsv1alpha1.DNSEndpoint, changed []*extdnsv1alpha1.DNSEndpoint, removed []types.UID) (passResult, error) {
	if st := c.state; st != nil {
		names, holders := st.affected(changed, removed)
		// A DNSEndpoint whose spec changed has its refused names sent
		// again, even where what it asks of them is the same.
		for _, ep := range changed {
			if e := st.eps[ep.UID]; e == nil || e.generation != ep.Generation {
				c.Syncer.Forget(endpointNames(ep))
			}
		}
		var desired []dnsprovider.RecordSet
		for _, ep := range eps {
			if holders[ep.UID] {
				desired = appendDesired(desired, rule, ep, names)
			}
		}
		res, err := c.Syncer.SyncNames(ctx, desired, names)
		if !errors.Is(err, errStale) {
			planned := res.Conflicts()
			p := passResult{Result: res, conflicts: st.allConflicts(names, planned), names: len(names)}
			if err != nil {
				c.state = nil
				return p, err
			}
			st.update(changed, removed, names, planned)
			return p, nil
		}
	}
	c.state = nil
	res, err := c.Syncer.Sync(ctx, desiredOf(rule, eps), false)
	p := passResult{Result: res, conflicts: res.Conflicts(), full: true}
	if err == nil {
		c.state = newPublished(eps, p.conflicts)
	}
	return p, err
}

// statusesWritten records what markPublished found: a status that could not
// be written is retried by a full pass (and every pass in full until one
// writes all); statuses that were not up to date mean the next pass is not
// skipped.
func (c *Controller) statusesWritten(upToDate, written bool) {
	switch {
	case !written:
		c.state = nil
	case c.state != nil:
		c.state.statusesCurrent = upToDate
	}
}

// reportConflicts tells the Service behind each new conflict, with a
// Warning Event, that a name it wants is held by a record kfed does not own.
func (c *Controller) reportConflicts(ctx context.Context, conflicts []dnsprovider.Conflict) {
	seen := map[string]bool{}
	for _, cf := range conflicts {
		key := cf.Name + " " + cf.Resource
		seen[key] = true
		if c.conflicts[key] || c.Recorder == nil {
			continue
		}
		ns, name, ok := strings.Cut(cf.Resource, "/")
		if !ok {
			continue
		}
		var svc corev1.Service
		if err := c.Fed.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &svc); err != nil {
			continue
		}
		c.Recorder.Eventf(&svc, nil, corev1.EventTypeWarning, "DNSConflict", "Publish",
			"%s not published to %s: %s", cf.Name, c.Syncer.Provider.Name(), cf.Reason)
	}
	c.conflicts = seen
}

// reportRefusals tells each DNSEndpoint behind a name the provider newly
// refused, with a Warning Event, the provider's words. eps are the cache's.
func (c *Controller) reportRefusals(_ context.Context, eps []extdnsv1alpha1.DNSEndpoint, refused []Refusal) {
	seen := map[string]bool{}
	byKey := map[string]*extdnsv1alpha1.DNSEndpoint{}
	for i := range eps {
		byKey[eps[i].Namespace+"/"+eps[i].Name] = &eps[i]
	}
	for _, r := range refused {
		if len(r.Resources) == 0 {
			c.Logger.Error(r.Err, "DNS provider refused a name no DNSEndpoint asks for", "provider", c.Syncer.Provider.Name(), "name", r.Name)
		}
		for _, res := range r.Resources {
			key := r.Name + " " + res
			seen[key] = true
			ep := byKey[res]
			if c.refusals[key] || ep == nil {
				continue
			}
			c.Logger.Info("DNS provider refused a name", "provider", c.Syncer.Provider.Name(), "name", r.Name, "dnsendpoint", res, "error", r.Err.Error())
			if c.Recorder != nil {
				c.Recorder.Eventf(ep, nil, corev1.EventTypeWarning, ReasonDNSRefused, "Publish",
					"%s not published to %s: %s", r.Name, c.Syncer.Provider.Name(), statusError(r.Err))
			}
		}
	}
	c.refusals = seen
}

// ReasonDNSRefused is the reason of the Warning Event on a DNSEndpoint one
// of whose names a provider refused for bad input.
const ReasonDNSRefused = "DNSRefused"

// markPublished records in each DNSEndpoint's status what this provider
// holds of it: the generation published (when the sync succeeded, syncErr
// nil, and the provider refused none of its names), the names left alone,
// and, on an object whose generation is not published, why: the sync's
// error, or the provider's words on each name of it refused. Status is
// written only when that changes, so a quiet federation writes nothing. eps
// are the cache's: an endpoint is copied before its status is changed. It
// reports whether every status was already up to date, and whether every
// one that was not was written.
func (c *Controller) markPublished(ctx context.Context, eps []extdnsv1alpha1.DNSEndpoint, conflicts []dnsprovider.Conflict, refused []Refusal, syncErr error) (upToDate, written bool) {
	upToDate, written = true, true
	byResource := map[string][]string{}
	for _, cf := range conflicts {
		byResource[cf.Resource] = append(byResource[cf.Resource], cf.Name)
	}
	refusedOf := map[string][]string{}
	for _, r := range refused {
		for _, res := range r.Resources {
			refusedOf[res] = append(refusedOf[res], r.Err.Error())
		}
	}
	provider := c.Syncer.Provider.Name()
	for i := range eps {
		ep := &eps[i]
		resource := ep.Namespace + "/" + ep.Name
		refusals := refusedOf[resource]
		ok := syncErr == nil && len(refusals) == 0
		want := extdnsv1alpha1.PublisherStatus{Provider: provider}
		idx := slices.IndexFunc(ep.Status.Publishers, func(p extdnsv1alpha1.PublisherStatus) bool { return p.Provider == provider })
		if idx >= 0 {
			want.ObservedGeneration = ep.Status.Publishers[idx].ObservedGeneration
		}
		if ok {
			want.ObservedGeneration = ep.Generation
		}
		want.Conflicts = slices.Sorted(slices.Values(byResource[resource]))
		switch {
		case syncErr != nil && want.ObservedGeneration < ep.Generation:
			want.Error = statusError(syncErr)
		case len(refusals) > 0:
			want.Error = statusError(errors.New(strings.Join(refusals, "; ")))
			// Published once, the generation no longer is whole (the zone
			// lost a record the provider will not take back).
			want.ObservedGeneration = min(want.ObservedGeneration, ep.Generation-1)
		}
		if idx >= 0 && equality.Semantic.DeepEqual(ep.Status.Publishers[idx], want) &&
			(!ok || ep.Status.ObservedGeneration == ep.Generation) {
			continue
		}
		upToDate = false
		if err := c.writePublisher(ctx, ep, want, ok); client.IgnoreNotFound(err) != nil {
			c.Logger.Error(err, "recording publish status", "dnsendpoint", client.ObjectKeyFromObject(ep))
			written = false
		}
	}
	return upToDate, written
}

// writePublisher sets this provider's entry of ep's status.publishers to
// want and, when published, status.observedGeneration to ep's generation.
// Several controllers (one per provider) write the same list, so the patch
// carries ep's resourceVersion: a merge patch replaces the whole list, and
// without the lock one provider's write could drop another's entry. On a
// conflict the object is read again and the entry set on what it holds.
func (c *Controller) writePublisher(ctx context.Context, ep *extdnsv1alpha1.DNSEndpoint, want extdnsv1alpha1.PublisherStatus, published bool) error {
	for attempt := 0; ; attempt++ {
		patch := client.MergeFromWithOptions(ep, client.MergeFromWithOptimisticLock{})
		ep = ep.DeepCopy()
		if idx := slices.IndexFunc(ep.Status.Publishers, func(p extdnsv1alpha1.PublisherStatus) bool { return p.Provider == want.Provider }); idx >= 0 {
			ep.Status.Publishers[idx] = want
		} else {
			ep.Status.Publishers = append(ep.Status.Publishers, want)
		}
		if published {
			ep.Status.ObservedGeneration = ep.Generation
		}
		err := c.Fed.Status().Patch(ctx, ep, patch)
		if !apierrors.IsConflict(err) || attempt >= 4 {
			return err
		}
		fresh := &extdnsv1alpha1.DNSEndpoint{}
		if err := c.apiReader().Get(ctx, client.ObjectKeyFromObject(ep), fresh); err != nil {
			return err
		}
		if fresh.Generation != ep.Generation {
			// The spec changed meanwhile: the next pass publishes it.
			return nil
		}
		ep = fresh
	}
}

// apiReader reads from the API server itself, not the cache, which may not
// have seen the write that made a patch conflict yet.
func (c *Controller) apiReader() client.Reader {
	if c.APIReader != nil {
		return c.APIReader
	}
	return c.Fed
}

// maxStatusError bounds the error kept in a DNSEndpoint's status: a
// provider's error may list every change of a large batch.
const maxStatusError = 1024

// statusError is err as a DNSEndpoint's status keeps it.
func statusError(err error) string {
	msg := err.Error()
	if len(msg) > maxStatusError {
		msg = msg[:maxStatusError] + "…"
	}
	return msg
}

// Metrics are the sync's Prometheus collectors, labelled by provider.
type Metrics struct {
	requests, changes, throttled *prometheus.CounterVec
	lastSuccess, conflicts       *prometheus.GaugeVec
	refused                      *prometheus.GaugeVec
	syncs                        *prometheus.CounterVec   // provider, result
	duration                     *prometheus.HistogramVec // provider
}

// NewMetrics registers the collectors with reg (reusing ones already there).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "kfed", Subsystem: "dns", Name: name, Help: help}, []string{"provider"})
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "kfed", Subsystem: "dns", Name: name, Help: help}, []string{"provider"})
	}
	m := &Metrics{
		requests:    counter("requests_total", "API requests or DNS messages sent to the provider, retries included."),
		changes:     counter("changes_total", "Record-set changes applied."),
		throttled:   counter("throttled_retries_total", "Requests retried because the provider asked to slow down."),
		lastSuccess: gauge("last_success_timestamp_seconds", "When a sync last completed without error."),
		conflicts:   gauge("conflicts", "Desired names left alone because a record kfed does not own holds them."),
		refused:     gauge("refused", "Desired names the provider refuses for bad input, not published while the rest is."),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "kfed", Subsystem: "dns", Name: "syncs_total",
			Help: "Sync passes (list DNSEndpoints, plan, apply) by result: success or error."}, []string{"provider", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "kfed", Subsystem: "dns", Name: "sync_duration_seconds",
			Help:    "Time one sync pass took, successful or not, retries and throttling included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}, []string{"provider"}),
	}
	var err error
	if m.requests, err = promreg.Register(reg, m.requests); err != nil {
		return nil, err
	}
	if m.changes, err = promreg.Register(reg, m.changes); err != nil {
		return nil, err
	}
	if m.throttled, err = promreg.Register(reg, m.throttled); err != nil {
		return nil, err
	}
	if m.lastSuccess, err = promreg.Register(reg, m.lastSuccess); err != nil {
		return nil, err
	}
	if m.conflicts, err = promreg.Register(reg, m.conflicts); err != nil {
		return nil, err
	}
	if m.refused, err = promreg.Register(reg, m.refused); err != nil {
		return nil, err
	}
	if m.syncs, err = promreg.Register(reg, m.syncs); err != nil {
		return nil, err
	}
	if m.duration, err = promreg.Register(reg, m.duration); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) observe(provider string, before, after dnsprovider.Stats, conflicts int, took time.Duration, err error) {
	if m == nil {
		return
	}
	m.sync(provider, took, err == nil)
	m.requests.WithLabelValues(provider).Add(float64(after.Requests - before.Requests))
	m.changes.WithLabelValues(provider).Add(float64(after.Changes - before.Changes))
	m.throttled.WithLabelValues(provider).Add(float64(after.ThrottledRetries - before.ThrottledRetries))
	m.conflicts.WithLabelValues(provider).Set(float64(conflicts))
	if err == nil {
		m.lastSuccess.WithLabelValues(provider).SetToCurrentTime()
	}
}

// refusedNames sets how many names the provider refuses.
func (m *Metrics) refusedNames(provider string, n int) {
	if m != nil {
		m.refused.WithLabelValues(provider).Set(float64(n))
	}
}

// failed counts a pass that ended before it reached the provider.
func (m *Metrics) failed(provider string, took time.Duration) {
	if m != nil {
		m.sync(provider, took, false)
	}
}

func (m *Metrics) sync(provider string, took time.Duration, ok bool) {
	result := "success"
	if !ok {
		result = "error"
	}
	m.syncs.WithLabelValues(provider, result).Inc()
	m.duration.WithLabelValues(provider).Observe(took.Seconds())
}
