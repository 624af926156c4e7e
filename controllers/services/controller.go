package services

import (
	"time"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/registry"
	"github.com/kfed-io/kfed/dns/publish"
)

// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=services/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=services/finalizers,verbs=update
// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Controller reconciles federated Services.
type Controller struct {
	// Fed is the control plane client (cached reads).
	Fed client.Client
	// Live reads the control plane's API server itself, where a cache that
	// lags could hide an object that exists; Fed when nil.
	Live     client.Reader
	Members  *registry.Registry
	Recorder events.EventRecorder
	// Federation and Domain make the names S.N.F.svc.D.
	Federation string
	Domain     string
	// Resolver re-resolves hostname ingress every sync; net.DefaultResolver
	// when nil.
	Resolver publish.Resolver
	// Resync is how often a Service with hostname ingress is re-resolved.
	Resync time.Duration
	// Metrics, if set, counts shard and DNSEndpoint operations.
	Metrics *Metrics
	// Workers is how many Services are reconciled at once; 8 when zero. A
	// reconcile waits on several API round trips, so one worker leaves the
	// API servers idle.
	Workers int

	// Namespace is where checkers' HealthReports and heartbeat Leases are;
	// kfed-system when empty.
	Namespace string
	// Freshness is how long a checker's heartbeat counts; publish.DefaultFreshness
	// when zero.
	Freshness time.Duration
	// Clock tells the time; SetupWithManager sets the real one when nil.
	Clock clock.PassiveClock

	// shards carries changes of shards, health changes of verdicts, as
	// stubs of the federated Services to reconcile.
	shards, health *registry.Channel[client.Object]
}

func (c *Controller) namespace() string {
	if c.Namespace != "" {
		return c.Namespace
	}
	return kfedv1alpha1.DefaultNamespace
}

// publisher writes the Services' DNSEndpoints.
func (c *Controller) publisher() publish.Publisher {
	return publish.Publisher{Client: c.Fed, Live: c.Live, Federation: c.Federation, Namespace: c.namespace()}
}

// live reads the control plane's API server.
func (c *Controller) live() client.Reader {
	if c.Live != nil {
		return c.Live
	}
	return c.Fed
}
