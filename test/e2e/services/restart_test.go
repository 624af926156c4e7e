package services

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/manager"
	"github.com/kfed-io/kfed/services"
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

// TestControllerRestartLosesAndDuplicatesNothing stops the controller while
// it is part-way through a batch of Services and starts a new one.
func TestControllerRestartLosesAndDuplicatesNothing(t *testing.T) {
	const n = 40
	f := framework.Start(t, framework.Members(3), framework.LoadBalancer())
	f.JoinAll()
	stop := f.StartController(manager.Options{})
	fed := f.Client("federation")
	for _, m := range f.Members {
		fedtest.WantCondition(t, fed, m.Name, "Ready", "True", 20*time.Second)
	}
	ctx := context.Background()
	for i := range n {
		if err := fed.Create(ctx, fedtest.FederatedService("default", fmt.Sprintf("svc-%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	// Stop once some, but not all, Services are published.
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var list extdnsv1alpha1.DNSEndpointList
		if err := fed.List(ctx, &list); err != nil {
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
		if services.IsFederated(&s) && (len(s.Finalizers) != 1 || s.Finalizers[0] != services.Finalizer) {
			t.Errorf("%s has finalizers %v, want exactly [%s]", s.Name, s.Finalizers, services.Finalizer)
		}
	}
}
