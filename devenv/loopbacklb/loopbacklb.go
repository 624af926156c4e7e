// Package loopbacklb is a load balancer for local clusters, in the manner of
// cloud-provider-kind or MetalLB: it gives each Service of type LoadBalancer in
// one cluster an address from that cluster's block in 127.0.0.0/8, writes it
// to status.loadBalancer.ingress, and runs a real listener on every TCP port.
//
// A connection that starts with an HTTP request gets an HTTP answer (200 on
// /healthz, and on / a line naming the cluster and Service); any other
// connection is echoed. Health checks probe these listeners, so a Service's
// failure can be switched with the annotation FailureAnnotation:
//
//	refuse       close the listeners: connections are refused
//	http-error   keep accepting, but answer HTTP with 503
//	slow         keep accepting, but answer HTTP SlowDelay late, as a load
//	             balancer far away would (http health checks measure it)
//	withdrawn    give up the address and clear the Service's ingress, as a
//	             cloud load balancer that was deleted
//	(absent)     healthy
//
// HTTP answers can report load too, as Envoy's and gRPC's ORCA header
// LoadHeader, "TEXT application_utilization=U", for checkers that read it:
//
//	UtilizationAnnotation  a fixed U ("0.95")
//	CapacityAnnotation     N: U is the Service's HTTP requests in flight
//	                       (averaged over the last second, over all its
//	                       ports, the answered one and /healthz's not
//	                       counted) divided by N
//	ServiceTimeAnnotation  how long (up to 10s) each HTTP request but
//	                       /healthz is held before its answer, so that
//	                       clients make load
//
// A fixed U wins over a capacity. A malformed value is logged and taken as
// absent.
package loopbacklb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// FailureAnnotation switches a Service's listeners into a failure mode.
const FailureAnnotation = "loopbacklb.kfed.io/failure"

// Failure modes, the values of FailureAnnotation.
const (
	FailureRefuse    = "refuse"
	FailureHTTPError = "http-error"
	FailureWithdrawn = "withdrawn"
	FailureSlow      = "slow"
)

// Block returns the address block of the cluster at index i (0-based) for a
// federation whose blocks start at second octet base: 127.(base+i).0.0/16.
func Block(base, i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{127, byte(base + i), 0, 0}), 16)
}

// Options configure one cluster's load balancer.
type Options struct {
	// Cluster names the member, shown in HTTP answers.
	Cluster string
	// Block is where addresses come from; it must lie in 127.0.0.0/8.
	Block netip.Prefix
	// Config reaches the member's API server.
	Config *rest.Config
	Logger logr.Logger
}

// LB serves one cluster.
type LB struct {
	opts Options
	c    client.Client

	mu    sync.Mutex
	svcs  map[types.NamespacedName]*service
	inUse map[netip.Addr]types.NamespacedName
}

// service is the load balancer's state for one Service.
type service struct {
	addr      netip.Addr
	failure   string
	load      *serviceLoad
	listeners map[int32]*listener
}

// Run starts the controller and blocks until ctx ends, then closes every
// listener.
func Run(ctx context.Context, opts Options) error {
	if !opts.Block.IsValid() || !opts.Block.Addr().Is4() || opts.Block.Addr().As4()[0] != 127 {
		return fmt.Errorf("loopbacklb: block %v is not in 127.0.0.0/8", opts.Block)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(opts.Config, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 opts.Logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("loopbacklb %s: creating manager: %w", opts.Cluster, err)
	}
	lb := &LB{
		opts:  opts,
		c:     mgr.GetClient(),
		svcs:  map[types.NamespacedName]*service{},
		inUse: map[netip.Addr]types.NamespacedName{},
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("loopbacklb").
		For(&corev1.Service{}).
		// One manager per member runs in the same process (kfed dev up, tests).
		WithOptions(controller.Options{SkipNameValidation: ptr(true), MaxConcurrentReconciles: 4}).
		Complete(lb)
	if err != nil {
		return err
	}
	defer lb.closeAll()
	return mgr.Start(ctx)
}

// Reconcile gives a LoadBalancer Service an address and listeners, or takes
// them away from a Service that is gone or no longer of that type.
func (lb *LB) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var svc corev1.Service
	err := lb.c.Get(ctx, req.NamespacedName, &svc)
	if apierrors.IsNotFound(err) || (err == nil && !wanted(&svc)) {
		lb.release(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if svc.Annotations[FailureAnnotation] == FailureWithdrawn {
		lb.release(req.NamespacedName)
		if len(svc.Status.LoadBalancer.Ingress) == 0 {
			return ctrl.Result{}, nil
		}
		patch := client.MergeFrom(svc.DeepCopy())
		svc.Status.LoadBalancer.Ingress = nil
		return ctrl.Result{}, lb.c.Status().Patch(ctx, &svc, patch)
	}
	addr, err := lb.ensure(req.NamespacedName, &svc)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("serving %s: %w", req.NamespacedName, err)
	}
	want := []corev1.LoadBalancerIngress{{IP: addr.String(), IPMode: ptr(corev1.LoadBalancerIPModeVIP)}}
	if len(svc.Status.LoadBalancer.Ingress) == 1 && svc.Status.LoadBalancer.Ingress[0].IP == want[0].IP {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(svc.DeepCopy())
	svc.Status.LoadBalancer.Ingress = want
	if err := lb.c.Status().Patch(ctx, &svc, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing ingress of %s: %w", req.NamespacedName, err)
	}
	return ctrl.Result{}, nil
}

// wanted reports whether svc is ours: type LoadBalancer with no class (a
// class names another implementation, as spec.loadBalancerClass intends).
func wanted(svc *corev1.Service) bool {
	return svc.DeletionTimestamp == nil && svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		svc.Spec.LoadBalancerClass == nil
}

// ensure brings the listeners of svc in line with its ports and failure mode
// and returns its address.
func (lb *LB) ensure(key types.NamespacedName, svc *corev1.Service) (netip.Addr, error) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	s := lb.svcs[key]
	if s == nil {
		s = &service{load: &serviceLoad{}, listeners: map[int32]*listener{}}
		lb.svcs[key] = s
	}
	s.failure = svc.Annotations[FailureAnnotation]
	spec, err := parseLoad(svc.Annotations)
	if err != nil {
		lb.opts.Logger.Error(err, "ignoring malformed load annotations", "service", key)
	}
	s.load.spec.Store(&spec)
	if !s.addr.IsValid() {
		s.addr = lb.previousAddr(key, svc)
	}
	ports := map[int32]bool{}
	for _, p := range svc.Spec.Ports {
		if p.Protocol == corev1.ProtocolTCP || p.Protocol == "" {
			ports[p.Port] = true
		}
	}
	// Close listeners of ports that went away, or all of them to refuse.
	for port, l := range s.listeners {
		if !ports[port] || s.failure == FailureRefuse {
			l.close()
			delete(s.listeners, port)
		}
	}
	for _, l := range s.listeners {
		l.setHTTPError(s.failure == FailureHTTPError)
		l.setSlow(s.failure == FailureSlow)
	}
	if s.failure == FailureRefuse {
		if !s.addr.IsValid() {
			a, err := lb.allocate(key, nil)
			if err != nil {
				return netip.Addr{}, err
			}
			s.addr = a
		}
		return s.addr, nil
	}
	var missing []int32
	for port := range ports {
		if s.listeners[port] == nil {
			missing = append(missing, port)
		}
	}
	if s.addr.IsValid() {
		if err := lb.listen(key, s, s.addr, missing); err == nil {
			return s.addr, nil
		} else if len(s.listeners) > 0 {
			return netip.Addr{}, err
		}
		// A fresh address that cannot take these ports (something else holds
		// them) is given up for another one.
		delete(lb.inUse, s.addr)
		s.addr = netip.Addr{}
	}
	a, err := lb.allocate(key, func(a netip.Addr) error { return lb.listen(key, s, a, missing) })
	if err != nil {
		return netip.Addr{}, err
	}
	s.addr = a
	return a, nil
}

// previousAddr keeps the address a Service already had from our block, so a
// restart of the load balancer does not move it.
func (lb *LB) previousAddr(key types.NamespacedName, svc *corev1.Service) netip.Addr {
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		a, err := netip.ParseAddr(ing.IP)
		if err != nil || !lb.opts.Block.Contains(a) {
			continue
		}
		if owner, taken := lb.inUse[a]; taken && owner != key {
			continue
		}
		lb.inUse[a] = key
		return a
	}
	return netip.Addr{}
}

// allocate finds a free address in the block for which try (if any) succeeds.
func (lb *LB) allocate(key types.NamespacedName, try func(netip.Addr) error) (netip.Addr, error) {
	var lastErr error
	tries := 0
	for a := lb.opts.Block.Addr().Next(); lb.opts.Block.Contains(a); a = a.Next() {
		if _, taken := lb.inUse[a]; taken || a.As4()[3] == 0 || a.As4()[3] == 255 {
			continue
		}
		if try != nil {
			if err := try(a); err != nil {
				lastErr = err
				if tries++; tries >= 16 {
					break
				}
				continue
			}
		}
		lb.inUse[a] = key
		return a, nil
	}
	return netip.Addr{}, fmt.Errorf("no free address in %v: %w", lb.opts.Block, errors.Join(errors.New("block exhausted"), lastErr))
}

// listen opens listeners on addr for ports; on failure it closes the ones it
// opened in this call.
func (lb *LB) listen(key types.NamespacedName, s *service, addr netip.Addr, ports []int32) error {
	var opened []int32
	for _, port := range ports {
		l, err := newListener(net.JoinHostPort(addr.String(), strconv.Itoa(int(port))), lb.opts.Cluster, key.String(), s.load)
		if err != nil {
			for _, p := range opened {
				s.listeners[p].close()
				delete(s.listeners, p)
			}
			return err
		}
		l.setHTTPError(s.failure == FailureHTTPError)
		l.setSlow(s.failure == FailureSlow)
		s.listeners[port] = l
		opened = append(opened, port)
	}
	return nil
}

func (lb *LB) release(key types.NamespacedName) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	s := lb.svcs[key]
	if s == nil {
		return
	}
	for _, l := range s.listeners {
		l.close()
	}
	delete(lb.inUse, s.addr)
	delete(lb.svcs, key)
}

func (lb *LB) closeAll() {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	for _, s := range lb.svcs {
		for _, l := range s.listeners {
			l.close()
		}
	}
}

func ptr[T any](v T) *T { return &v }
