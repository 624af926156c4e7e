package health

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/test/framework"
)

// TestHealthOnOneBed runs the package's tests one after another on one
// health bed (startHealthBed: three members, a checker in each at fastHC's
// settings, kfed-controller as a process publishing to BIND, CoreDNS), as
// subtests named for the tests they were (-run
// 'OnOneBed/TestHealthDetectionLatency$' runs one): starting a bed's four
// API servers, CRDs, joins and checkers costs more CPU than most of these
// tests. Each subtest starts from a bed as fresh as a new one (ready), and
// undoes what it changes before the next: Services of its own deleted
// (deleteAtEnd), killed checkers and the controller started again, network
// cuts removed, failure modes, routing and placement set back.
func TestHealthOnOneBed(t *testing.T) {
	hc := fastHC
	// The controller is a process of its own, which
	// TestHealthVerdictsSurviveAControllerKilledMidReport kills.
	hc.controllerBinary = true
	b := startHealthBed(t, hc)
	for _, tt := range []struct {
		name string
		run  func(*testing.T, *healthBed)
	}{
		// First: kfed-coredns has no Role yet (the proximity tests give it).
		{"TestCoreDNSWithoutRightsToHealthReportsStillServes", coreDNSWithoutRightsToHealthReportsStillServes},
		{"TestHealthChecksTakeADeadEndpointOutOfDNSByQuorum", healthChecksTakeADeadEndpointOutOfDNSByQuorum},
		{"TestHealthVerdictsSurviveAControllerKilledMidReport", healthVerdictsSurviveAControllerKilledMidReport},
		{"TestHealthDetectionLatency", healthDetectionLatency},
		{"TestFailoverServesOnePlaceAtATime", failoverServesOnePlaceAtATime},
		{"TestFailoverFollowsTheCheckersQuorum", failoverFollowsTheCheckersQuorum},
		{"TestFailoverAsAClientSeesIt", failoverAsAClientSeesIt},
		{"TestProximityOrdersAnswersByPlace", proximityOrdersAnswersByPlace},
		{"TestProximityOrdersATierByRoundTripTime", proximityOrdersATierByRoundTripTime},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b.ready(t)
			tt.run(t, b)
		})
	}
}

// deleteAtEnd deletes objs from the control plane when t ends and waits
// until they and their DNSEndpoints (of the same namespace and name, as a
// federated Service's) are gone: the checkers probe the bed's six
// endpoints again.
func deleteAtEnd(t *testing.T, f *framework.Federation, objs ...client.Object) {
	t.Helper()
	t.Cleanup(func() {
		fed := f.Client("federation")
		for _, o := range objs {
			if err := fed.Delete(context.Background(), o); client.IgnoreNotFound(err) != nil {
				t.Errorf("deleting %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
			}
		}
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
			for _, o := range objs {
				for _, cur := range []client.Object{o.DeepCopyObject().(client.Object), &extdnsv1alpha1.DNSEndpoint{}} {
					if err := fed.Get(ctx, client.ObjectKeyFromObject(o), cur); !apierrors.IsNotFound(err) {
						return fmt.Errorf("%T %s/%s is still there (%v)", cur, o.GetNamespace(), o.GetName(), err)
					}
				}
			}
			return nil
		})
	})
}
