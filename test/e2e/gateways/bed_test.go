package gateways

import (
	"context"
	"fmt"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// TestGatewaysOnOneBed runs the package's tests one after another on one
// test bed, as subtests named for the tests they were (-run
// 'OnOneBed/TestFederatedIngress$' runs one): starting a bed's four API
// servers, CRDs and joins costs more CPU than most of these tests. The bed
// is the one fedtest.StartGatewayFederation starts, with workloads (one
// node of 8 CPU per member) for the weights test; each subtest runs its own
// controller with the options it always had, in namespaces of its own, and
// deletes what it publishes before the next starts (deleteAtEnd), so that
// each finds the bed as a fresh one: no hostname held, nothing published,
// no checker.
func TestGatewaysOnOneBed(t *testing.T) {
	f := framework.Start(t, framework.Workloads(1, "8"))
	if err := gatewayv1.Install(f.Scheme); err != nil {
		t.Fatal(err)
	}
	f.InstallGatewayAPI("federation", "cluster-1", "cluster-2", "cluster-3")
	f.StartLoopbackGateways()
	f.JoinAll()
	for _, tt := range []struct {
		name string
		run  func(*testing.T, *framework.Federation)
	}{
		{"TestGatewayAPICRDs", gatewayAPICRDs},
		{"TestFederatedGateway", federatedGateway},
		{"TestFederatedIngress", federatedIngress},
		{"TestFederatedGatewayHealth", federatedGatewayHealth},
		{"TestFederatedGatewayProbesAskForTheHostname", federatedGatewayProbesAskForTheHostname},
		{"TestFederatedGatewayReachesBIND", federatedGatewayReachesBIND},
		{"TestFederatedGatewayServesHTTPS", federatedGatewayServesHTTPS},
		{"TestFederatedGatewayWeightsFollowTheBackends", federatedGatewayWeightsFollowTheBackends},
		{"TestFederatedGatewayHostnameAddress", federatedGatewayHostnameAddress},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, f) })
	}
}

// startController runs kfed's controller with o until t ends; t's later
// cleanups (deleteAtEnd) run while it still does.
func startController(t *testing.T, f *framework.Federation, o manager.Options) {
	t.Helper()
	t.Cleanup(f.StartController(o))
}

// deleteAtEnd deletes objs from the control plane when t ends and waits
// until they are gone, with the DNSEndpoints of the Gateways and Ingresses
// of their namespaces: their hostnames are free and unpublished for the
// next subtest.
func deleteAtEnd(t *testing.T, f *framework.Federation, objs ...client.Object) {
	t.Helper()
	fed := f.Client("federation")
	fedtest.DeleteAtEndWaiting(t, fed, func(ctx context.Context) error {
		var eps extdnsv1alpha1.DNSEndpointList
		if err := fed.List(ctx, &eps, client.InNamespace("kfed-system")); err != nil {
			return err
		}
		for _, ep := range eps.Items {
			for _, o := range objs {
				ns := o.GetNamespace()
				if strings.HasPrefix(ep.Name, "gateway."+ns+".") || strings.HasPrefix(ep.Name, "ingress."+ns+".") {
					return fmt.Errorf("DNSEndpoint %s is still there", ep.Name)
				}
			}
		}
		return nil
	}, objs...)
}

// retireAtEnd stops the checker name of cluster when t ends and deletes its
// HealthReport and heartbeat Lease, as a checker that retires does: the
// next subtest starts with no checker counted.
func retireAtEnd(t *testing.T, f *framework.Federation, cluster, name string, c *devenv.Checker) {
	t.Helper()
	t.Cleanup(func() {
		c.Stop()
		meta := metav1.ObjectMeta{Namespace: kfedv1alpha1.MemberNamespace(cluster), Name: name}
		for _, o := range []client.Object{&kfedv1alpha1.HealthReport{ObjectMeta: meta}, &coordinationv1.Lease{ObjectMeta: meta}} {
			if err := f.Client("federation").Delete(context.Background(), o); client.IgnoreNotFound(err) != nil {
				t.Errorf("deleting %T %s: %v", o, name, err)
			}
		}
	})
}
