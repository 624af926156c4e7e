package gateways

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/clusters/identity"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbackgw"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/framework"
)

// gatewayAPICRDs (TestGatewayAPICRDs): the test bed installs the Gateway
// API standard CRDs in the control plane and every member, which then serve
// Gateways and routes.
func gatewayAPICRDs(t *testing.T, f *framework.Federation) {
	names := []string{"federation"}
	for _, m := range f.Members {
		names = append(names, m.Name)
	}
	for _, name := range names {
		for _, l := range []client.ObjectList{&gatewayv1.GatewayList{}, &gatewayv1.HTTPRouteList{}, &gatewayv1.GRPCRouteList{}} {
			if err := f.Client(name).List(context.Background(), l); err != nil {
				t.Errorf("%s serves no %T: %v", name, l, err)
			}
		}
	}
}

// federatedGateway (TestFederatedGateway): a federated Gateway with an
// HTTPRoute for shop.example.com reaches every member; its DNSEndpoint
// publishes the hostname with every cluster's address; a request with that Host
// to each address reaches the route in that cluster. A second namespace
// claiming the hostname later gets the condition, and the name stays the
// first's.
func federatedGateway(t *testing.T, f *framework.Federation) {
	startController(t, f, manager.Options{})
	ctx := context.Background()
	fed := f.Client("federation")
	for _, ns := range []string{"shop", "late"} {
		if err := fed.Create(ctx, framework.Namespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	deleteAtEnd(t, f, fedtest.FederatedGateway("shop", "front", ""), fedtest.FederatedGateway("late", "front", ""),
		&gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shop"}},
		&gatewayv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"}})
	if err := fed.Create(ctx, fedtest.FederatedGateway("shop", "front", "")); err != nil {
		t.Fatal(err)
	}
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shop"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "front"}}},
			Hostnames:       []gatewayv1.Hostname{"shop.example.com"},
		},
	}
	if err := fed.Create(ctx, route); err != nil {
		t.Fatal(err)
	}
	grpc := &gatewayv1.GRPCRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"},
		Spec: gatewayv1.GRPCRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "front"}}},
			Hostnames:       []gatewayv1.Hostname{"api.example.com"},
		},
	}
	if err := fed.Create(ctx, grpc); err != nil {
		t.Fatal(err)
	}

	for _, m := range f.Members {
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			var gw gatewayv1.Gateway
			if err := f.Client(m.Name).Get(ctx, client.ObjectKey{Namespace: "shop", Name: "front"}, &gw); err != nil {
				return err
			}
			var rt gatewayv1.HTTPRoute
			if err := f.Client(m.Name).Get(ctx, client.ObjectKey{Namespace: "shop", Name: "shop"}, &rt); err != nil {
				return err
			}
			var gr gatewayv1.GRPCRoute
			if err := f.Client(m.Name).Get(ctx, client.ObjectKey{Namespace: "shop", Name: "api"}, &gr); err != nil {
				return err
			}
			if gw.Annotations["kfed.io/origin"] != "shop/front" || rt.Annotations["kfed.io/origin"] != "shop/shop" || gr.Annotations["kfed.io/origin"] != "shop/api" {
				return fmt.Errorf("copies in %s lack kfed's origin: %v, %v, %v", m.Name, gw.Annotations, rt.Annotations, gr.Annotations)
			}
			return nil
		})
	}
	addrs := fedtest.PublishedAddresses(t, f, "gateway.shop.front", "shop.example.com", 3)
	if grpcAddrs := fedtest.PublishedAddresses(t, f, "gateway.shop.front", "api.example.com", 3); !slices.Equal(grpcAddrs, addrs) {
		t.Errorf("the GRPCRoute's hostname has %v, the HTTPRoute's %v", grpcAddrs, addrs)
	}
	for _, a := range addrs {
		body := hostGet(t, a, "shop.example.com")
		if !strings.Contains(body, "HTTPRoute shop/shop in cluster cluster-") {
			t.Errorf("GET http://%s/ with Host shop.example.com: %q", a, body)
		}
	}
	// The plugin serves the Gateway's DNSEndpoint as it is, as it serves a
	// Service's: every cluster's address.
	srv, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: fedtest.BuildCoreDNS(t), Name: "coredns-cluster-1", Cluster: "cluster-1", Zone: "example.com.",
		Corefile: devenv.KfedCorefile(devenv.KfedZone{
			Zone: "example.com.", Federation: "fed", Cluster: "cluster-1",
			Kubeconfig: fedtest.CoreDNSKubeconfig(t, f, "cluster-1"), Context: "federation",
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	framework.Eventually(t, 10*time.Second, func(context.Context) error {
		return fedtest.WantAddresses(srv.Addr, "udp", "shop.example.com.", dns.TypeA, addrs...)
	})

	clustersAnswering := map[string]bool{}
	for _, a := range addrs {
		body := hostGet(t, a, "shop.example.com")
		clustersAnswering[strings.Fields(body)[4]] = true
	}
	if len(clustersAnswering) != 3 {
		t.Errorf("the addresses reach clusters %v, want three", clustersAnswering)
	}

	// Creation times have a resolution of one second: the later claim must
	// be later.
	time.Sleep(1100 * time.Millisecond)
	if err := fed.Create(ctx, fedtest.FederatedGateway("late", "front", "shop.example.com")); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var gw gatewayv1.Gateway
		if err := fed.Get(ctx, client.ObjectKey{Namespace: "late", Name: "front"}, &gw); err != nil {
			return err
		}
		c := meta.FindStatusCondition(gw.Status.Conditions, kfedv1alpha1.ConditionHostnamesPublished)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "HostnameRefused" || !strings.Contains(c.Message, "held by namespace shop") {
			return fmt.Errorf("condition %s of late/front: %+v", kfedv1alpha1.ConditionHostnamesPublished, c)
		}
		return nil
	})
	var late extdnsv1alpha1.DNSEndpoint
	if err := fed.Get(ctx, client.ObjectKey{Namespace: "kfed-system", Name: "gateway.late.front"}, &late); err == nil && len(late.Spec.Endpoints) > 0 {
		t.Errorf("the second claimant publishes %v", late.Spec.Endpoints)
	}
	if got := fedtest.PublishedAddresses(t, f, "gateway.shop.front", "shop.example.com", 3); !slices.Equal(got, addrs) {
		t.Errorf("shop.example.com moved from %v to %v", addrs, got)
	}

	// Once the holder goes, the next claimant holds the hostname.
	if err := fed.Delete(ctx, fedtest.FederatedGateway("shop", "front", "")); err != nil {
		t.Fatal(err)
	}
	fedtest.PublishedAddresses(t, f, "gateway.late.front", "shop.example.com", 3)
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(ctx, client.ObjectKey{Namespace: "kfed-system", Name: "gateway.shop.front"}, &ep); err == nil {
			return fmt.Errorf("the deleted Gateway's DNSEndpoint is still there")
		}
		for _, m := range f.Members {
			var rt gatewayv1.HTTPRoute
			if err := f.Client(m.Name).Get(ctx, client.ObjectKey{Namespace: "shop", Name: "shop"}, &rt); err == nil {
				return fmt.Errorf("the route's copy is still in %s", m.Name)
			}
			var gr gatewayv1.GRPCRoute
			if err := f.Client(m.Name).Get(ctx, client.ObjectKey{Namespace: "shop", Name: "api"}, &gr); err == nil {
				return fmt.Errorf("the GRPCRoute's copy is still in %s", m.Name)
			}
		}
		return nil
	})
}

// federatedIngress (TestFederatedIngress): the same for an Ingress of the
// loopback class.
func federatedIngress(t *testing.T, f *framework.Federation) {
	startController(t, f, manager.Options{})
	ctx := context.Background()
	fed := f.Client("federation")
	if err := fed.Create(ctx, framework.Namespace("web")); err != nil {
		t.Fatal(err)
	}
	class := loopbackgw.IngressClassName
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "site", Annotations: map[string]string{kfedv1alpha1.AnnotationFederated: "true"}},
		Spec: networkingv1.IngressSpec{
			IngressClassName: &class,
			Rules:            []networkingv1.IngressRule{{Host: "www.example.com"}},
		},
	}
	deleteAtEnd(t, f, ing)
	if err := fed.Create(ctx, ing); err != nil {
		t.Fatal(err)
	}
	for _, m := range f.Members {
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			var cp networkingv1.Ingress
			if err := f.Client(m.Name).Get(ctx, client.ObjectKey{Namespace: "web", Name: "site"}, &cp); err != nil {
				return err
			}
			if cp.Annotations["kfed.io/origin"] != "web/site" {
				return fmt.Errorf("copy in %s lacks kfed's origin: %v", m.Name, cp.Annotations)
			}
			return nil
		})
	}
	addrs := fedtest.PublishedAddresses(t, f, "ingress.web.site", "www.example.com", 3)
	for _, a := range addrs {
		if body := hostGet(t, a, "www.example.com"); !strings.Contains(body, "Ingress web/site in cluster cluster-") {
			t.Errorf("GET http://%s/ with Host www.example.com: %q", a, body)
		}
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var cur networkingv1.Ingress
		if err := fed.Get(ctx, client.ObjectKeyFromObject(ing), &cur); err != nil {
			return err
		}
		if len(cur.Status.LoadBalancer.Ingress) != 3 || !strings.Contains(cur.Annotations[kfedv1alpha1.AnnotationConditions], `"Published"`) {
			return fmt.Errorf("status %+v, conditions %s", cur.Status.LoadBalancer, cur.Annotations[kfedv1alpha1.AnnotationConditions])
		}
		return nil
	})

	// Deleting it removes the copies and the records.
	if err := fed.Delete(ctx, ing); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(ctx, client.ObjectKey{Namespace: "kfed-system", Name: "ingress.web.site"}, &ep); err == nil {
			return fmt.Errorf("DNSEndpoint still there")
		}
		for _, m := range f.Members {
			var cp networkingv1.Ingress
			if err := f.Client(m.Name).Get(ctx, client.ObjectKeyFromObject(ing), &cp); err == nil {
				return fmt.Errorf("copy still in %s", m.Name)
			}
		}
		return nil
	})
}

// hostGet sends GET / with the Host header host to addr, port 80, on loopback.
func hostGet(t *testing.T, addr, host string) string {
	t.Helper()
	if ip := net.ParseIP(addr); ip == nil || !ip.IsLoopback() {
		t.Fatalf("%s is not a loopback address", addr)
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+net.JoinHostPort(addr, "80")+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	var body string
	framework.Eventually(t, 20*time.Second, func(ctx context.Context) (err error) {
		body, err = fedtest.OKBody(http.DefaultClient, req.WithContext(ctx))
		return err
	})
	return body
}

// federatedGatewayHealth (TestFederatedGatewayHealth): with a checker in each
// member, a cluster whose Gateway refuses connections leaves the hostname
// within the health bound, the Gateway says so, and the cluster comes back once
// it answers.
func federatedGatewayHealth(t *testing.T, f *framework.Federation) {
	startController(t, f, manager.Options{HealthFreshness: fedtest.HCFreshness})
	ctx := context.Background()
	fed := f.Client("federation")
	const ns = "health"
	if err := fed.Create(ctx, framework.Namespace(ns)); err != nil {
		t.Fatal(err)
	}
	gw := fedtest.FederatedGateway(ns, "front", "shop.example.com")
	deleteAtEnd(t, f, gw)
	if err := fed.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	startCheckers(t, f)
	all := fedtest.PublishedAddresses(t, f, "gateway."+ns+".front", "shop.example.com", 3)
	condition := func(ctx context.Context) (*metav1.Condition, error) {
		var gw gatewayv1.Gateway
		if err := fed.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &gw); err != nil {
			return nil, err
		}
		return meta.FindStatusCondition(gw.Status.Conditions, kfedv1alpha1.ConditionHealthy), nil
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		c, err := condition(ctx)
		if err == nil && (c == nil || c.Status != metav1.ConditionTrue) {
			err = fmt.Errorf("condition %s: %+v", kfedv1alpha1.ConditionHealthy, c)
		}
		return err
	})

	// cluster-2's Gateway refuses: its address leaves the hostname.
	refuse := func(on bool) {
		t.Helper()
		var gw gatewayv1.Gateway
		c2 := f.Client("cluster-2")
		if err := c2.Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &gw); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(gw.DeepCopy())
		if on {
			gw.Annotations[loopbackgw.FailureAnnotation] = "refuse"
		} else {
			delete(gw.Annotations, loopbackgw.FailureAnnotation)
		}
		if err := c2.Patch(ctx, &gw, patch); err != nil {
			t.Fatal(err)
		}
	}
	var down string
	framework.Eventually(t, 5*time.Second, func(ctx context.Context) error {
		var gw gatewayv1.Gateway
		if err := f.Client("cluster-2").Get(ctx, client.ObjectKey{Namespace: ns, Name: "front"}, &gw); err != nil {
			return err
		}
		if len(gw.Status.Addresses) == 0 {
			return fmt.Errorf("no address")
		}
		down = gw.Status.Addresses[0].Value
		return nil
	})
	refuse(true)
	start := time.Now()
	want := slices.DeleteFunc(slices.Clone(all), func(a string) bool { return a == down })
	framework.Eventually(t, fedtest.HCBound+10*time.Second, func(ctx context.Context) error {
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(ctx, client.ObjectKey{Namespace: "kfed-system", Name: "gateway." + ns + ".front"}, &ep); err != nil {
			return err
		}
		if len(ep.Spec.Endpoints) != 1 || !slices.Equal(ep.Spec.Endpoints[0].Targets, want) {
			var reports kfedv1alpha1.HealthReportList
			_ = fed.List(ctx, &reports)
			return fmt.Errorf("published %v, want %v; checkers report %+v", ep.Spec.Endpoints, want, reports.Items)
		}
		return nil
	})
	t.Logf("cluster-2 left shop.example.com %v after its Gateway refused", time.Since(start).Round(10*time.Millisecond))
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		c, err := condition(ctx)
		if err == nil && (c == nil || c.Status != metav1.ConditionFalse || c.Reason != "EndpointsUnhealthy" || !strings.Contains(c.Message, "cluster-2")) {
			err = fmt.Errorf("condition %s: %+v", kfedv1alpha1.ConditionHealthy, c)
		}
		return err
	})

	refuse(false)
	if got := fedtest.PublishedAddresses(t, f, "gateway."+ns+".front", "shop.example.com", 3); !slices.Equal(got, all) {
		t.Errorf("after recovery, published %v, want %v", got, all)
	}
}

// federatedGatewayProbesAskForTheHostname
// (TestFederatedGatewayProbesAskForTheHostname): a federated Gateway asking
// for http health checks is probed with its hostname as the Host header,
// so the checkers reach its route (the loopback implementation answers 404
// to any other host) and every cluster stays in DNS.
func federatedGatewayProbesAskForTheHostname(t *testing.T, f *framework.Federation) {
	startController(t, f, manager.Options{HealthFreshness: fedtest.HCFreshness})
	ctx := context.Background()
	fed := f.Client("federation")
	const ns = "probes"
	if err := fed.Create(ctx, framework.Namespace(ns)); err != nil {
		t.Fatal(err)
	}
	gw := fedtest.FederatedGateway(ns, "front", "")
	gw.Annotations[kfedv1alpha1.AnnotationHealthCheck] = "http"
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "front"}}},
			Hostnames:       []gatewayv1.Hostname{"shop.example.com"},
		},
	}
	deleteAtEnd(t, f, gw, route)
	for _, o := range []client.Object{gw, route} {
		if err := fed.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	startCheckers(t, f)
	fedtest.PublishedAddresses(t, f, "gateway."+ns+".front", "shop.example.com", 3)
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(ctx, client.ObjectKey{Namespace: "kfed-system", Name: "gateway." + ns + ".front"}, &ep); err != nil {
			return err
		}
		if h := ep.Annotations[kfedv1alpha1.AnnotationHealthHost]; h != "shop.example.com" {
			return fmt.Errorf("the checkers are told host %q, want shop.example.com", h)
		}
		return nil
	})
	// Each probe reached the route: a probe for the address alone gets 404,
	// and every checker would see every cluster fail within interval × fall.
	wantCheckersFindAllUp(t, fed, 3)
}

// wantCheckersFindAllUp waits until the three checkers each probe
// endpoints endpoints and find none down, and then that none finds a
// cluster down for several probe rounds.
func wantCheckersFindAllUp(t *testing.T, fed client.Client, endpoints int32) {
	t.Helper()
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var reports kfedv1alpha1.HealthReportList
		if err := fed.List(ctx, &reports); err != nil {
			return err
		}
		if len(reports.Items) != 3 {
			return fmt.Errorf("%d checkers report, want 3", len(reports.Items))
		}
		for _, r := range reports.Items {
			if r.Endpoints != endpoints || len(r.Unhealthy) > 0 {
				return fmt.Errorf("checker %s probes %d endpoints, finds %+v down; want %d, none", r.Name, r.Endpoints, r.Unhealthy, endpoints)
			}
		}
		return nil
	})
	fedtest.Steady(t, fedtest.HCBound+2*time.Second, "no checker finds a cluster down", func() error {
		var reports kfedv1alpha1.HealthReportList
		if err := fed.List(context.Background(), &reports); err != nil {
			return err
		}
		for _, r := range reports.Items {
			// A checker that sees every cluster fail doubts itself and
			// abstains (degraded): that is a failure here too.
			if len(r.Unhealthy) > 0 || r.Degraded {
				return fmt.Errorf("checker %s finds %+v down (degraded %v)", r.Name, r.Unhealthy, r.Degraded)
			}
		}
		return nil
	})
}

// federatedGatewayReachesBIND (TestFederatedGatewayReachesBIND): the DNS sync
// publishes a federated Gateway's hostname to an RFC 2136 server (a real BIND)
// as it publishes a Service's names, with every cluster's address, and removes
// it when the Gateway goes.
func federatedGatewayReachesBIND(t *testing.T, f *framework.Federation) {
	const zone = "kfed.test"
	srv := bindtest.Start(t, zone)
	startController(t, f, manager.Options{
		Domain: zone, DNSInterval: 500 * time.Millisecond,
		DNS: fedtest.BindProvider(srv, zone, "fed"),
	})
	ctx := context.Background()
	fed := f.Client("federation")
	const ns = "bind"
	if err := fed.Create(ctx, framework.Namespace(ns)); err != nil {
		t.Fatal(err)
	}
	gw := fedtest.FederatedGateway(ns, "front", "shop."+zone)
	deleteAtEnd(t, f, gw)
	if err := fed.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	addrs := fedtest.PublishedAddresses(t, f, "gateway."+ns+".front", "shop."+zone, 3)
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		return fedtest.WantAddresses(srv.Addr, "tcp", "shop."+zone+".", dns.TypeA, addrs...)
	})

	if err := fed.Delete(ctx, gw); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		return fedtest.WantRcode(srv.Addr, "shop."+zone+".", dns.RcodeNameError)
	})
}

// startCheckers runs a health-check agent in each member with the test
// bed's probe settings (hcInterval, hcFall, hcFreshness), until t ends
// (retireAtEnd).
func startCheckers(t *testing.T, f *framework.Federation) {
	t.Helper()
	bin := fedtest.BuildHealthcheck(t)
	for _, m := range f.Members {
		// Each as its member, with the permissions kfed join gives it.
		c, err := f.Env.StartChecker(context.Background(), devenv.CheckerOptions{
			Binary: bin, Name: "checker-" + m.Name, Cluster: m.Name, Federation: "fed",
			Kubeconfig: fedtest.AgentKubeconfig(t, f, m.Name, identity.HealthCheck), Context: "federation",
			Args: []string{"--interval=" + fedtest.HCInterval.String(), "--timeout=400ms", "--fall=" + strconv.Itoa(fedtest.HCFall), "--rise=2",
				"--heartbeat=" + (fedtest.HCFreshness / 4).String()},
		})
		if err != nil {
			t.Fatal(err)
		}
		retireAtEnd(t, f, m.Name, "checker-"+m.Name, c)
	}
}
