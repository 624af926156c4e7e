// Package agent runs one health checker (cmd/kfed-healthcheck): it learns
// what to probe from the federation's DNSEndpoints (a watch, never a list per
// interval), probes with the healthcheck engine, and reports to the control
// plane in two parts, as kubelets heartbeat nodes: a Lease renewed every
// heartbeat interval, and a HealthReport written only when its content
// changes (debounced) and checked against the stored one on a slow resync.
// In steady state its only writes are heartbeats.
//
// It never removes anything but its own objects: a checker that cannot reach
// the control plane, or lacks a permission, logs and retries, and its
// heartbeat going stale takes it out of every quorum.
//
// A file per concern: agent.go the options and the agent's state, run.go
// the run loop, targets.go what to probe, fleet.go which of it this checker
// probes, report.go the HealthReport, rtt.go and load.go the round-trip times
// and loads it carries, heartbeat.go the Lease.
package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
)

// What a checker may do in the control plane, as its member's identity
// (ADR 0013, deploy/identities): read DNSEndpoints, Clusters and the other
// checkers' HealthReports (who shares the endpoints), and write
// HealthReports and Leases in its cluster's member namespace alone.

// DefaultHeartbeat is how often a checker renews its Lease: 0.1 writes a
// second, a quarter of the controller's default freshness window.
const DefaultHeartbeat = 10 * time.Second

// Options configure an agent.
type Options struct {
	// Config reaches the federation control plane.
	Config *rest.Config
	// Checker is the agent's identity: its HealthReport and Lease are named
	// after it, in the member namespace of Cluster, the member it runs in
	// (kfedv1alpha1.MemberNamespace). Federation is the one it checks for.
	Checker, Cluster, Federation string
	// Namespace is kfed's in the control plane, trusted by default;
	// kfed-system when empty.
	Namespace string
	// TrustedNamespaces may publish names that are no namespace's federated
	// names (tenancy.Endpoints); Namespace alone when empty.
	TrustedNamespaces []string
	// Defaults are the probe settings a Service does not set itself.
	Defaults healthcheck.Spec
	// CheckersPerEndpoint is how many of the federation's checkers probe
	// each endpoint, K (ADR 0012): with more checkers than K, this one
	// probes only the endpoints whose panel the assignment seats it on.
	// Zero: every endpoint, whatever the fleet (cmd/kfed-healthcheck's
	// default is healthcheck.DefaultCheckersPerEndpoint).
	CheckersPerEndpoint int
	// Heartbeat is how often the Lease is renewed; DefaultHeartbeat when
	// zero. The controller counts a checker fresh for its freshness window
	// (default 40 s, four heartbeats), whatever the probe interval.
	Heartbeat time.Duration
	// Debounce gathers verdict changes into one report write; 200 ms when
	// zero.
	Debounce time.Duration
	// Resync compares the stored report with the agent's view this often
	// and rewrites it if they differ; 10 minutes when zero.
	Resync time.Duration
	// RTTInterval is how often the round-trip times measured are read and,
	// when a bucket changed, published; DefaultRTTInterval when zero.
	RTTInterval time.Duration
	// LoadInterval is how often the endpoints' loads are read and, when a
	// bucket changed, published; DefaultLoadInterval when zero.
	LoadInterval time.Duration
	// Engine are the probe engine's options; its callbacks are the agent's.
	Engine healthcheck.Options
	// Registerer takes the agent's metrics; none when nil.
	Registerer prometheus.Registerer
	Logger     logr.Logger
}

type agent struct {
	o      Options
	ns     string // the member namespace: the report's and the Lease's
	c      client.Client
	cache  cache.Cache
	engine *healthcheck.Engine

	dirty chan struct{} // the report may need writing
	// off is true while the checker's cluster has health checking off: the
	// checker then retires (no report, no heartbeat), so that it is not
	// counted in any quorum.
	off    atomic.Bool
	mu     sync.Mutex
	since  map[string]time.Time // when each endpoint turned unhealthy here
	region string               // of the checker's cluster, as last read

	rtts      rttTable
	rttGauge  *prometheus.GaugeVec
	loads     loadTable
	loadGauge *prometheus.GaugeVec
}

// markDirty asks for a report write.
func (a *agent) markDirty() {
	select {
	case a.dirty <- struct{}{}:
	default:
	}
}

// self is this checker's report as far as the assignment reads it.
func (a *agent) self() *kfedv1alpha1.HealthReport {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := &kfedv1alpha1.HealthReport{Cluster: a.o.Cluster, Region: a.region, CheckersPerEndpoint: int32(max(a.o.CheckersPerEndpoint, 0))}
	r.Name, r.Namespace = a.o.Checker, a.ns
	return r
}

// setRegion notes the region of the checker's cluster; a change is
// reported, since it moves the checker to another failure domain.
func (a *agent) setRegion(region string) {
	a.mu.Lock()
	changed := a.region != region
	a.region = region
	a.mu.Unlock()
	if changed {
		a.markDirty()
	}
}

// retire deletes the checker's report and heartbeat: a checker that is
// not configured does not count towards any quorum.
func (a *agent) retire(ctx context.Context) error {
	meta := metav1.ObjectMeta{Name: a.o.Checker, Namespace: a.ns}
	return errors.Join(
		client.IgnoreNotFound(a.c.Delete(ctx, &kfedv1alpha1.HealthReport{ObjectMeta: meta})),
		client.IgnoreNotFound(a.c.Delete(ctx, &coordinationv1.Lease{ObjectMeta: meta})))
}

func cmpDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
