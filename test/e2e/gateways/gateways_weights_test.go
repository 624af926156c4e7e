package gateways

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/framework"
)

// federatedGatewayWeightsFollowTheBackends
// (TestFederatedGatewayWeightsFollowTheBackends): a federated Gateway whose
// HTTPRoute sends shop.example.com to the Service web weighs each cluster
// by its ready replicas of the federated Deployment web selects; scaling
// that Deployment from 1 replica (in cluster-1) to 9 (1 in cluster-1, 8 in
// cluster-2) moves the weights, and with them the answer order a client of
// cluster-3's CoreDNS sees: cluster-1 always first (cluster-3, its own
// cluster, next among the clusters of weight 0), then cluster-2 first about
// eight times in nine and cluster-3, which runs none, last.
func federatedGatewayWeightsFollowTheBackends(t *testing.T, f *framework.Federation) {
	startController(t, f, manager.Options{})
	ctx := context.Background()
	fed := f.Client("federation")
	const ns = "weights"
	fedtest.Create(t, fed, framework.Namespace(ns))
	web := fedtest.FederatedDeployment(ns, "web", 1,
		`{"rebalance": true, "clusters": {"cluster-1": {"minReplicas": 1, "maxReplicas": 1, "weight": 1}, "cluster-2": {"weight": 1}}}`)
	backend := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       corev1.ServiceSpec{Selector: web.Spec.Template.Labels, Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
	}
	port := gatewayv1.PortNumber(8080)
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "front"}}},
			Hostnames:       []gatewayv1.Hostname{"shop.example.com"},
			Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web", Port: &port},
			}}}}},
		},
	}
	gw := fedtest.FederatedGateway(ns, "front", "")
	deleteAtEnd(t, f, web, backend, gw, route)
	fedtest.Create(t, fed, web, backend, gw, route)

	key := client.ObjectKey{Namespace: "kfed-system", Name: "gateway." + ns + ".front"}
	fedtest.PublishedAddresses(t, f, key.Name, "shop.example.com", 3)
	fedtest.WantReadyLayout(t, f, client.ObjectKeyFromObject(web), []int32{1, 0, 0}, false, 1, 90*time.Second)
	fedtest.WantWeights(t, f, key, map[string]int{"cluster-1": 1, "cluster-2": 0, "cluster-3": 0}, 30*time.Second)

	var ep extdnsv1alpha1.DNSEndpoint
	if err := fed.Get(ctx, key, &ep); err != nil {
		t.Fatal(err)
	}
	table, err := dnsendpoint.ReadClusters(&ep)
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	for name, c := range table {
		for _, a := range c.Addresses {
			owner[a.String()] = name
		}
	}
	srv, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: fedtest.BuildCoreDNS(t), Name: "coredns-cluster-3", Cluster: "cluster-3", Zone: "example.com.",
		Corefile: devenv.KfedCorefile(devenv.KfedZone{
			Zone: "example.com.", Federation: "fed", Cluster: "cluster-3",
			Kubeconfig: fedtest.CoreDNSKubeconfig(t, f, "cluster-3"), Context: "federation",
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	// firstAnswers asks n times and counts the cluster answered first; every
	// answer holds all three, and cluster-3 (weight 0) is answered after
	// every cluster of a weight above 0.
	firstAnswers := func(n int, last string) (map[string]int, error) {
		first := map[string]int{}
		for range n {
			r, err := fedtest.Query(srv.Addr, "udp", "shop.example.com.", dns.TypeA)
			if err != nil {
				return nil, err
			}
			var order []string
			for _, rr := range r.Answer {
				if a, ok := rr.(*dns.A); ok {
					order = append(order, owner[a.A.String()])
				}
			}
			if len(order) != 3 || order[2] != last {
				return nil, fmt.Errorf("answer order %v: want three clusters, %s last", order, last)
			}
			first[order[0]]++
		}
		return first, nil
	}
	framework.Eventually(t, 10*time.Second, func(context.Context) error {
		first, err := firstAnswers(50, "cluster-2")
		if err != nil {
			return err
		}
		if first["cluster-1"] != 50 {
			return fmt.Errorf("first answers %v at weights 1:0:0, want cluster-1 every time", first)
		}
		return nil
	})

	// Scale the backend: cluster-2 takes the new replicas.
	var cur appsv1.Deployment
	if err := fed.Get(ctx, client.ObjectKeyFromObject(web), &cur); err != nil {
		t.Fatal(err)
	}
	nine := int32(9)
	cur.Spec.Replicas = &nine
	if err := fed.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	fedtest.WantReadyLayout(t, f, client.ObjectKeyFromObject(web), []int32{1, 8, 0}, false, 9, 90*time.Second)
	fedtest.WantWeights(t, f, key, map[string]int{"cluster-1": 1, "cluster-2": 8, "cluster-3": 0}, 30*time.Second)
	const n = 450
	framework.Eventually(t, 10*time.Second, func(context.Context) error {
		first, err := firstAnswers(n, "cluster-3")
		if err != nil {
			return err
		}
		share := float64(first["cluster-2"]) / n
		t.Logf("first answer over %d queries: %v (cluster-2 %.2f, weights 1:8:0)", n, first, share)
		if share < 0.8 || share > 0.96 {
			return fmt.Errorf("cluster-2 answered first in %.2f of queries, want about 0.89 (weights 1:8)", share)
		}
		return nil
	})
}
