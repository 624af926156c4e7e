package services

import (
	"context"
	"fmt"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/test/framework"
)

// allPublished checks that n DNSEndpoints in namespace default each hold
// the addresses of clusters clusters at their Service's global name.
func allPublished(ctx context.Context, fed client.Client, n, clusters int) error {
	var eps extdnsv1alpha1.DNSEndpointList
	if err := fed.List(ctx, &eps, client.InNamespace("default")); err != nil {
		return err
	}
	complete := 0
	for i := range eps.Items {
		ep := &eps.Items[i]
		table, err := dnsendpoint.ReadClusters(ep)
		if err != nil {
			return fmt.Errorf("%s: %w", ep.Name, err)
		}
		global := 0
		for j := range ep.Spec.Endpoints {
			e := &ep.Spec.Endpoints[j]
			if e.DNSName == ep.Name+".default.fed.svc.example.com" && e.RecordType == "A" {
				groups, _ := table.Groups(e)
				for _, g := range groups {
					if g.Cluster != nil {
						global++
					}
				}
			}
		}
		if global == clusters {
			complete++
		}
	}
	if complete != n {
		return fmt.Errorf("%d of %d Services have all %d clusters' records", complete, n, clusters)
	}
	return nil
}

// controllerRestartLosesAndDuplicatesNothing stops the bed's controller
// (stop) while it is part-way through a batch of Services and starts a new
// one, which the bed keeps. It counts every shard of the members: the tests
// before it on the bed leave none.
func controllerRestartLosesAndDuplicatesNothing(t *testing.T, f *framework.Federation, stop func()) {
	const n = 40
	fed := f.Client("federation")
	for _, m := range f.Members {
		fedtest.WantCondition(t, fed, m.Name, "Ready", "True", 20*time.Second)
	}
	ctx := context.Background()
	keys := make([]client.ObjectKey, n)
	for i := range n {
		keys[i] = client.ObjectKey{Namespace: "default", Name: fmt.Sprintf("svc-%02d", i)}
	}
	fedtest.DeleteServicesAtEnd(t, f, keys...)
	for _, k := range keys {
		if err := fed.Create(ctx, fedtest.FederatedService(k.Namespace, k.Name)); err != nil {
			t.Fatal(err)
		}
	}
	// Stop once some, but not all, Services are published (in default: the
	// federation's serial marker in kfed-system is there once an earlier
	// test on the bed deleted a Service).
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var list extdnsv1alpha1.DNSEndpointList
		if err := fed.List(ctx, &list, client.InNamespace("default")); err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return fmt.Errorf("nothing published yet")
		}
		t.Logf("stopping the controller with %d of %d DNSEndpoints written", len(list.Items), n)
		return nil
	})
	stop()
	f.StartController(manager.Options{})

	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		return allPublished(ctx, fed, n, 3)
	})
	for _, m := range f.Members {
		var shards corev1.ServiceList
		if err := f.Client(m.Name).List(ctx, &shards, client.MatchingLabels{kfedv1alpha1.LabelFederation: "fed"}); err != nil {
			t.Fatal(err)
		}
		if len(shards.Items) != n {
			t.Errorf("%s has %d shards, want %d", m.Name, len(shards.Items), n)
		}
	}
	var svcs corev1.ServiceList
	if err := fed.List(ctx, &svcs, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		if kfedv1alpha1.IsFederated(&s) && (len(s.Finalizers) != 1 || s.Finalizers[0] != kfedv1alpha1.FinalizerService) {
			t.Errorf("%s has finalizers %v, want exactly [%s]", s.Name, s.Finalizers, kfedv1alpha1.FinalizerService)
		}
	}
}
