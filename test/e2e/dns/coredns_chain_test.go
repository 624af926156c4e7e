package dns

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
	"github.com/kfed-io/kfed/test/framework"
)

// federatedServiceResolvesThroughCoreDNS follows the whole chain: a
// federated Service → shards with load-balancer ingress → kfed's controller
// → DNSEndpoint → the kfed plugin in cluster-1's CoreDNS → a client.
func federatedServiceResolvesThroughCoreDNS(t *testing.T, f *framework.Federation) {
	const zone = kfedTestZone
	fed := f.Client("federation")
	for _, m := range f.Members {
		fedtest.WantCondition(t, fed, m.Name, "Ready", "True", 20*time.Second)
	}
	ctx := context.Background()
	d, err := f.StartCoreDNS(ctx, devenv.CoreDNSOptions{
		Binary: fedtest.BuildCoreDNS(t), Name: "coredns-cluster-1", Cluster: "cluster-1", Zone: zone,
		Corefile: devenv.KfedCorefile(devenv.KfedZone{Zone: zone, Federation: "fed", Cluster: "cluster-1",
			Kubeconfig: f.Kubeconfig, Context: "federation"}),
	})
	if err != nil {
		t.Fatal(err)
	}

	svc := fedtest.FederatedService("default", "web")
	fedtest.DeleteServicesAtEnd(t, f, client.ObjectKeyFromObject(svc))
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(svc)
	// When did the last shard get its ingress?
	var shards [3]corev1.Service
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		for i, m := range f.Members {
			if err := f.Client(m.Name).Get(ctx, key, &shards[i]); err != nil {
				return err
			}
			if len(shards[i].Status.LoadBalancer.Ingress) == 0 {
				return fmt.Errorf("no ingress in %s yet", m.Name)
			}
		}
		return nil
	})
	ingressAt := time.Now()
	lb := func(i int) string { return shards[i].Status.LoadBalancer.Ingress[0].IP }
	local := shards[0].Spec.ClusterIP

	global := "web.default.fed.svc." + zone + "."
	framework.Eventually(t, 10*time.Second, func(context.Context) error {
		return fedtest.WantAddresses(d.Addr, "udp", global, dns.TypeA, local, lb(1), lb(2))
	})
	t.Logf("the global name resolved %v after the last shard's ingress appeared", time.Since(ingressAt).Round(time.Millisecond))
	for _, proto := range []string{"udp", "tcp"} {
		for _, tt := range []struct {
			name string
			want []string
		}{
			{global, []string{local, lb(1), lb(2)}},
			{"web.default.fed.svc.us-east1." + zone + ".", []string{local, lb(1)}},
			{"web.default.fed.svc.us-east1-c.us-east1." + zone + ".", []string{lb(1)}},
			{"web.default.fed.svc.europe-west1-b.europe-west1." + zone + ".", []string{lb(2)}},
		} {
			if err := fedtest.WantAddresses(d.Addr, proto, tt.name, dns.TypeA, tt.want...); err != nil {
				t.Error(err)
			}
		}
		r, err := fedtest.Query(d.Addr, proto, global, dns.TypeA)
		if err != nil {
			t.Fatal(err)
		}
		if first := r.Answer[0].(*dns.A).A.String(); first != local {
			t.Errorf("over %s, cluster-1's CoreDNS answers %s first, want its own shard's cluster IP %s", proto, first, local)
		}
	}

	// cluster-3's load balancer loses its address: without a restart, its
	// zone falls back by CNAME to the region, the region to the global name,
	// and the global name answers the two others.
	patch := client.MergeFrom(shards[2].DeepCopy())
	metav1.SetMetaDataAnnotation(&shards[2].ObjectMeta, loopbacklb.FailureAnnotation, loopbacklb.FailureWithdrawn)
	if err := f.Client("cluster-3").Patch(ctx, &shards[2], patch); err != nil {
		t.Fatal(err)
	}
	euZone := "web.default.fed.svc.europe-west1-b.europe-west1." + zone + "."
	framework.Eventually(t, 15*time.Second, func(context.Context) error {
		if err := fedtest.WantAddresses(d.Addr, "udp", global, dns.TypeA, local, lb(1)); err != nil {
			return err
		}
		r, err := fedtest.Query(d.Addr, "udp", euZone, dns.TypeA)
		if err != nil {
			return err
		}
		cnames := 0
		for _, rr := range r.Answer {
			if rr.Header().Rrtype == dns.TypeCNAME {
				cnames++
			}
		}
		if cnames != 2 {
			return fmt.Errorf("%s answers %v, want CNAME to the region, CNAME to the global name, then its addresses", euZone, fedtest.AnswerStrings(r))
		}
		return nil
	})
}
