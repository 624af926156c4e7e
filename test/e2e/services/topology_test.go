package services

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/test/framework"
)

// zonesComeFromTheNodes joins a member without --region or --zone
// (Ubernetes-Lite: one cluster over two zones): its region and zones are
// read from its nodes' topology labels, its federated Service's endpoint is
// published under each zone, and when a node moves to another zone the
// cluster and its records follow. It needs one member, not yet joined, with
// two simulated nodes, one in each of fedtest.ZoneB and fedtest.ZoneC; it
// moves a node to another zone, so runs last on its bed.
func zonesComeFromTheNodes(t *testing.T, f *framework.Federation) {
	raw, err := clientcmd.LoadFromFile(f.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	fed := f.Client("federation")
	joined, err := clusters.Join(context.Background(), fed, clusters.JoinOptions{Name: "cluster-1", Kubeconfig: raw})
	if err != nil {
		t.Fatal(err)
	}
	if region, zones := joined.Location(); region != "us-east1" || !slices.Equal(zones, []string{fedtest.ZoneB, fedtest.ZoneC}) {
		t.Errorf("join found region %q and zones %v, want us-east1 and [%s %s]", region, zones, fedtest.ZoneB, fedtest.ZoneC)
	}
	f.StartController(manager.Options{})
	fedtest.WantCondition(t, fed, "cluster-1", kfedv1alpha1.ClusterReady, "True", 30*time.Second)
	svc := fedtest.FederatedService("default", "web")
	fedtest.Create(t, fed, svc)

	// wantZones waits until the Cluster and the Service's endpoint are in zones.
	wantZones := func(t *testing.T, zones ...string) {
		t.Helper()
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			var c kfedv1alpha1.Cluster
			if err := fed.Get(ctx, client.ObjectKey{Name: "cluster-1"}, &c); err != nil {
				return err
			}
			if region, got := c.Location(); region != "us-east1" || !slices.Equal(got, zones) {
				return fmt.Errorf("cluster-1 is in %s %v, want us-east1 %v", region, got, zones)
			}
			var ep extdnsv1alpha1.DNSEndpoint
			if err := fed.Get(ctx, client.ObjectKeyFromObject(svc), &ep); err != nil {
				return err
			}
			table, err := dnsendpoint.ReadClusters(&ep)
			if err != nil {
				return err
			}
			if c := table["cluster-1"]; c == nil || !slices.Equal(c.Zones, zones) {
				return fmt.Errorf("the DNSEndpoint places cluster-1 in %+v, want zones %v", c, zones)
			}
			for _, z := range zones {
				name := "web.default.fed.svc." + z + ".us-east1.example.com"
				if !slices.ContainsFunc(ep.Spec.Endpoints, func(e extdnsv1alpha1.Endpoint) bool {
					return e.DNSName == name && e.RecordType == "A"
				}) {
					return fmt.Errorf("no A record at %s", name)
				}
			}
			return nil
		})
	}
	t.Run("a multi-zone cluster's endpoint is under each of its zones", func(t *testing.T) {
		wantZones(t, fedtest.ZoneB, fedtest.ZoneC)
	})
	t.Run("a node moving to another zone moves the cluster's zones", func(t *testing.T) {
		m := f.Client("cluster-1")
		var n corev1.Node
		if err := m.Get(context.Background(), client.ObjectKey{Name: "cluster-1-node-0"}, &n); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(n.DeepCopy())
		n.Labels[corev1.LabelTopologyZone] = "us-east1-d"
		if err := m.Patch(context.Background(), &n, patch); err != nil {
			t.Fatal(err)
		}
		wantZones(t, fedtest.ZoneC, "us-east1-d")
	})
}
