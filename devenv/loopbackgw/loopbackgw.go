// Package loopbackgw is a Gateway and Ingress implementation for local
// clusters, beside devenv/loopbacklb: each Gateway of class ClassName and
// each Ingress of class IngressClassName in one cluster gets an address from that
// cluster's block in 127.0.0.0/8, written to its status, and a listener on
// each of its ports (a Gateway's listener ports; 80 for an Ingress, and
// 443 when it has spec.tls). A port with a Gateway listener of protocol
// HTTPS serves TLS with the certificates of its certificateRefs
// (kubernetes.io/tls Secrets of the Gateway's namespace), chosen by the
// server name the client sends (SNI) against the listeners' hostnames; an
// Ingress's 443 serves its spec.tls Secrets for their hosts. A request is
// routed by its Host header — to the HTTPRoute attached to the Gateway
// whose hostnames hold it (a route without hostnames takes any), or to the
// Ingress rule with that host — and answered with a line naming the route
// and the cluster; a host nothing routes gets 404.
//
// A Gateway's listeners can be closed, to make it fail health checks, with
// the annotation FailureAnnotation: "refuse" on it; its address stays. With
// HostnameAnnotation, a Gateway or Ingress gives a hostname as its address,
// as a cloud load balancer known by name does.
package loopbackgw

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// FailureAnnotation: "refuse" on a Gateway closes its listeners:
// connections are refused.
const FailureAnnotation = "loopbackgw.kfed.io/failure"

// HostnameAnnotation on a Gateway or Ingress names the hostname its status
// gives as its address instead of its 127.x address, as a cloud load
// balancer known by a DNS name (an AWS NLB) does; resolving the name to
// the address is the test's business.
const HostnameAnnotation = "loopbackgw.kfed.io/address-hostname"

// ClassName is the gatewayClassName served.
const ClassName = "kfed.io/loopback"

// IngressClassName is the ingressClassName served: the same class, spelled
// as an Ingress class must be (a DNS subdomain, without a slash).
const IngressClassName = "loopback.kfed.io"

// BlockBeside is the address block of a cluster's loopback Gateways beside
// its load balancer's block lb (devenv/loopbacklb, which allocates from the
// bottom): lb's 200th /24.
func BlockBeside(lb netip.Prefix) netip.Prefix {
	b := lb.Addr().As4()
	b[2] = 200
	return netip.PrefixFrom(netip.AddrFrom4(b), 24)
}

// Options configure one cluster's implementation.
type Options struct {
	// Cluster names the member, shown in HTTP answers.
	Cluster string
	// Block is where addresses come from; it must lie in 127.0.0.0/8.
	Block netip.Prefix
	// Config reaches the member's API server.
	Config *rest.Config
	Logger logr.Logger
}

// GW serves one cluster.
type GW struct {
	opts Options
	c    client.Client

	mu    sync.Mutex
	objs  map[string]*frontend // by "Kind namespace/name"
	inUse map[netip.Addr]string
}

// frontend is the state of one Gateway or Ingress served: its listeners.
type frontend struct {
	addr    netip.Addr
	servers map[int32]*http.Server
	// secure holds the ports served with TLS, certs their certificates.
	secure map[int32]bool
	certs  map[int32][]hostCert
	// routes maps a lower-case host to the route answering it; "" holds
	// the route that takes any host.
	routes map[string]string
}

// Run starts the controllers and blocks until ctx ends, then closes every
// listener.
func Run(ctx context.Context, opts Options) error {
	if !opts.Block.IsValid() || !opts.Block.Addr().Is4() || opts.Block.Addr().As4()[0] != 127 {
		return fmt.Errorf("loopbackgw: block %v is not in 127.0.0.0/8", opts.Block)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gatewayv1.Install} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(opts.Config, ctrl.Options{
		Scheme: scheme, Logger: opts.Logger,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("loopbackgw %s: creating manager: %w", opts.Cluster, err)
	}
	g := &GW{opts: opts, c: mgr.GetClient(), objs: map[string]*frontend{}, inUse: map[netip.Addr]string{}}
	// One manager per member runs in the same process (kfed dev up, tests).
	skip := controller.Options{SkipNameValidation: ptr(true), MaxConcurrentReconciles: 2}
	err = ctrl.NewControllerManagedBy(mgr).Named("loopbackgw-gateway").
		For(&gatewayv1.Gateway{}).
		Watches(&gatewayv1.HTTPRoute{}, handler.EnqueueRequestsFromMapFunc(parents)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(secretUsers(g.c, "Gateway"))).
		WithOptions(skip).
		Complete(reconcile.Func(g.reconcileGateway))
	if err != nil {
		return err
	}
	err = ctrl.NewControllerManagedBy(mgr).Named("loopbackgw-ingress").
		For(&networkingv1.Ingress{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(secretUsers(g.c, "Ingress"))).
		WithOptions(skip).
		Complete(reconcile.Func(g.reconcileIngress))
	if err != nil {
		return err
	}
	defer g.closeAll()
	return mgr.Start(ctx)
}

// parents answers the Gateways an HTTPRoute attaches to.
func parents(_ context.Context, obj client.Object) []ctrl.Request {
	rt := obj.(*gatewayv1.HTTPRoute)
	var reqs []ctrl.Request
	for _, p := range rt.Spec.ParentRefs {
		ns := rt.Namespace
		if p.Namespace != nil {
			ns = string(*p.Namespace)
		}
		reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: string(p.Name)}})
	}
	return reqs
}

// reconcileGateway serves a Gateway of our class, or stops serving one
// that is gone or of another class.
func (g *GW) reconcileGateway(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := "Gateway " + req.String()
	var gw gatewayv1.Gateway
	err := g.c.Get(ctx, req.NamespacedName, &gw)
	if apierrors.IsNotFound(err) || (err == nil && (gw.DeletionTimestamp != nil || gw.Spec.GatewayClassName != ClassName)) {
		g.release(key)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	var list gatewayv1.HTTPRouteList
	if err := g.c.List(ctx, &list); err != nil {
		return ctrl.Result{}, err
	}
	routes := map[string]string{}
	for _, rt := range list.Items {
		if !slices.ContainsFunc(parents(ctx, &rt), func(r ctrl.Request) bool { return r.NamespacedName == req.NamespacedName }) {
			continue
		}
		name := "HTTPRoute " + rt.Namespace + "/" + rt.Name
		if len(rt.Spec.Hostnames) == 0 {
			routes[""] = name
		}
		for _, h := range rt.Spec.Hostnames {
			routes[strings.ToLower(string(h))] = name
		}
	}
	listeners, certErr := gatewayListeners(ctx, g.c, &gw)
	if gw.Annotations[FailureAnnotation] == "refuse" {
		listeners = nil
	}
	addr, err := g.ensure(key, listeners, routes, gw.Status.Addresses)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("serving %s: %w", key, err)
	}
	want := []gatewayv1.GatewayStatusAddress{{Type: ptr(gatewayv1.IPAddressType), Value: addr.String()}}
	if h := gw.Annotations[HostnameAnnotation]; h != "" {
		want = []gatewayv1.GatewayStatusAddress{{Type: ptr(gatewayv1.HostnameAddressType), Value: h}}
	}
	// A certificate that cannot be used leaves its listener's handshakes
	// failing: the Gateway is not Programmed, and says why.
	prog := metav1.Condition{
		Type: string(gatewayv1.GatewayConditionProgrammed), Status: metav1.ConditionTrue, Reason: string(gatewayv1.GatewayReasonProgrammed),
		ObservedGeneration: gw.Generation, Message: "served by the loopback implementation of " + g.opts.Cluster,
	}
	if certErr != nil {
		prog.Status, prog.Reason, prog.Message = metav1.ConditionFalse, string(gatewayv1.GatewayReasonInvalid), certErr.Error()
	}
	programmed := meta.FindStatusCondition(gw.Status.Conditions, prog.Type)
	if slices.Equal(addrValues(gw.Status.Addresses), addrValues(want)) && programmed != nil &&
		programmed.Status == prog.Status && programmed.Message == prog.Message && programmed.ObservedGeneration == gw.Generation {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(gw.DeepCopy())
	gw.Status.Addresses = want
	meta.SetStatusCondition(&gw.Status.Conditions, metav1.Condition{
		Type: string(gatewayv1.GatewayConditionAccepted), Status: metav1.ConditionTrue, Reason: string(gatewayv1.GatewayReasonAccepted),
		ObservedGeneration: gw.Generation, Message: "served by the loopback implementation of " + g.opts.Cluster,
	})
	meta.SetStatusCondition(&gw.Status.Conditions, prog)
	return ctrl.Result{}, g.c.Status().Patch(ctx, &gw, patch)
}

func addrValues(as []gatewayv1.GatewayStatusAddress) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Value)
	}
	return out
}

// reconcileIngress serves an Ingress of our class on port 80.
func (g *GW) reconcileIngress(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := "Ingress " + req.String()
	var ing networkingv1.Ingress
	err := g.c.Get(ctx, req.NamespacedName, &ing)
	if apierrors.IsNotFound(err) || (err == nil && (ing.DeletionTimestamp != nil || ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != IngressClassName)) {
		g.release(key)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	routes := map[string]string{}
	for _, r := range ing.Spec.Rules {
		routes[strings.ToLower(r.Host)] = key
	}
	var had []gatewayv1.GatewayStatusAddress
	for _, in := range ing.Status.LoadBalancer.Ingress {
		had = append(had, gatewayv1.GatewayStatusAddress{Value: in.IP})
	}
	listeners, certErr := ingressListeners(ctx, g.c, &ing)
	addr, err := g.ensure(key, listeners, routes, had)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("serving %s: %w", key, err)
	}
	if certErr != nil {
		// An Ingress has no conditions: the error is logged, and retried.
		certErr = fmt.Errorf("serving %s over TLS: %w", key, certErr)
	}
	want := []networkingv1.IngressLoadBalancerIngress{{IP: addr.String()}}
	if h := ing.Annotations[HostnameAnnotation]; h != "" {
		want = []networkingv1.IngressLoadBalancerIngress{{Hostname: h}}
	}
	if equality.Semantic.DeepEqual(ing.Status.LoadBalancer.Ingress, want) {
		return ctrl.Result{}, certErr
	}
	patch := client.MergeFrom(ing.DeepCopy())
	ing.Status.LoadBalancer.Ingress = want
	return ctrl.Result{}, errors.Join(g.c.Status().Patch(ctx, &ing, patch), certErr)
}

// ensure brings the listeners of key in line with listeners and its
// routing table with routes, and returns its address: the one it had (from
// had, when it lies in the block and is free), or a new one.
func (g *GW) ensure(key string, listeners []listener, routes map[string]string, had []gatewayv1.GatewayStatusAddress) (netip.Addr, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.objs[key]
	if s == nil {
		s = &frontend{servers: map[int32]*http.Server{}, secure: map[int32]bool{}}
		g.objs[key] = s
		for _, a := range had {
			if ip, err := netip.ParseAddr(a.Value); err == nil && g.opts.Block.Contains(ip) && g.inUse[ip] == "" {
				s.addr = ip
				g.inUse[ip] = key
				break
			}
		}
	}
	s.routes = routes
	s.certs = map[int32][]hostCert{}
	for _, l := range listeners {
		s.certs[l.port] = l.certs
	}
	for port, srv := range s.servers {
		// A port that goes away, or changes between HTTP and HTTPS, closes.
		if !slices.ContainsFunc(listeners, func(l listener) bool { return l.port == port && l.tls == s.secure[port] }) {
			_ = srv.Close()
			delete(s.servers, port)
			delete(s.secure, port)
		}
	}
	if !s.addr.IsValid() {
		for a := g.opts.Block.Addr().Next(); g.opts.Block.Contains(a); a = a.Next() {
			if g.inUse[a] == "" && a.As4()[3] != 0 && a.As4()[3] != 255 {
				s.addr = a
				g.inUse[a] = key
				break
			}
		}
		if !s.addr.IsValid() {
			return netip.Addr{}, fmt.Errorf("no free address in %v", g.opts.Block)
		}
	}
	var errs []error
	for _, ls := range listeners {
		port := ls.port
		if s.servers[port] != nil {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(s.addr.String(), strconv.Itoa(int(port))))
		if err != nil {
			errs = append(errs, fmt.Errorf("listening on port %d: %w", port, err))
			continue
		}
		srv := &http.Server{Handler: g.handler(key), ReadHeaderTimeout: 5 * time.Second}
		s.servers[port], s.secure[port] = srv, ls.tls
		if !ls.tls {
			go func() { _ = srv.Serve(l) }()
			continue
		}
		// The certificate is chosen per handshake, so that a new Secret or
		// listener applies without reopening the port.
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			g.mu.Lock()
			var certs []hostCert
			if cur := g.objs[key]; cur != nil {
				certs = cur.certs[port]
			}
			g.mu.Unlock()
			return pickCertificate(certs, hello.ServerName)
		}}
		go func() { _ = srv.ServeTLS(l, "", "") }()
	}
	return s.addr, errors.Join(errs...)
}

// handler answers a request to key by its Host header.
func (g *GW) handler(key string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := strings.ToLower(r.Host)
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		g.mu.Lock()
		var route string
		if s := g.objs[key]; s != nil {
			route = s.routes[host]
			if route == "" {
				route = s.routes[""]
			}
		}
		g.mu.Unlock()
		if route == "" {
			http.Error(w, fmt.Sprintf("%s in cluster %s routes no host %s\n", key, g.opts.Cluster, host), http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, "%s in cluster %s answers %s\n", route, g.opts.Cluster, host)
	})
}

func (g *GW) release(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.objs[key]
	if s == nil {
		return
	}
	for _, srv := range s.servers {
		_ = srv.Close()
	}
	delete(g.inUse, s.addr)
	delete(g.objs, key)
}

func (g *GW) closeAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.objs {
		for _, srv := range s.servers {
			_ = srv.Close()
		}
	}
}

func ptr[T any](v T) *T { return &v }
