package services

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// A test bed's API servers are most of this package's CPU, so the tests
// whose beds are alike run one after another on one bed, each a subtest
// under its former name (go test -run /MemberOutageDoesNotStopTheOthers)
// with its own names, deleting at its end what a later one could count. A
// subtest that stops an API server or the controller undoes it before it
// ends. TestHungMemberAtStartDoesNotDelayTheOthers and
// TestMemberObjectsAreWrittenWithServerSideApply keep beds of their own: each
// sets its members up before kfed's controller starts.

// TestServicesOnThreeMembers: three members with load balancers, joined,
// kfed's controller running.
func TestServicesOnThreeMembers(t *testing.T) {
	f, stopController := startFederation(t, 3)
	t.Run("MemberOutageDoesNotStopTheOthers", func(t *testing.T) { memberOutageDoesNotStopTheOthers(t, f) })
	t.Run("ControllerRestartLosesAndDuplicatesNothing", func(t *testing.T) {
		controllerRestartLosesAndDuplicatesNothing(t, f, stopController)
	})
	t.Run("FederatedServiceLifecycle", func(t *testing.T) { federatedServiceLifecycle(t, f) })
}

// TestServicesOnTwoMembers: two members with load balancers, joined, kfed's
// controller running.
func TestServicesOnTwoMembers(t *testing.T) {
	f, _ := startFederation(t, 2)
	t.Run("LoopbackLoadBalancerServesMemberService", func(t *testing.T) { loopbackLoadBalancerServesMemberService(t, f) })
	t.Run("BadInputIsReportedAndChangesNothing", func(t *testing.T) { badInputIsReportedAndChangesNothing(t, f) })
	t.Run("RejectedShardUpdateKeepsTheClustersRecords", func(t *testing.T) { rejectedShardUpdateKeepsTheClustersRecords(t, f) })
	t.Run("ClusterGoesOfflineWhenItsAPIServerStopsAndComesBack", func(t *testing.T) {
		clusterGoesOfflineWhenItsAPIServerStopsAndComesBack(t, f)
	})
	t.Run("ShardOfAServiceDeletedWhileItsMemberWasOfflineGoesWhenTheMemberReturns", func(t *testing.T) {
		shardOfAServiceDeletedWhileItsMemberWasOfflineGoesWhenTheMemberReturns(t, f)
	})
	t.Run("DNSEndpointLeftByAServiceThatIsGoneIsDeleted", func(t *testing.T) {
		dnsEndpointLeftByAServiceThatIsGoneIsDeleted(t, f)
	})
}

// TestServicesOnOneMemberWithNodes: one member, not joined at first, with
// two simulated nodes of 4 CPUs, one in each of two zones, and a load
// balancer.
func TestServicesOnOneMemberWithNodes(t *testing.T) {
	f := framework.Start(t, framework.Members(1), framework.Workloads(2, "4"),
		framework.Zones(fedtest.ZoneB, fedtest.ZoneC), framework.LoadBalancer())
	t.Run("DeploymentBeyondCapacityHasRunningAndUnschedulablePods", func(t *testing.T) {
		deploymentBeyondCapacityHasRunningAndUnschedulablePods(t, f)
	})
	t.Run("ZonesComeFromTheNodes", func(t *testing.T) { zonesComeFromTheNodes(t, f) })
}

// deleteMemberServicesAtEnd deletes a member's own Services (not kfed's
// shards) when t ends.
func deleteMemberServicesAtEnd(t *testing.T, member client.Client, keys ...client.ObjectKey) {
	t.Helper()
	t.Cleanup(func() {
		for _, k := range keys {
			s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
			if err := member.Delete(context.Background(), s); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting the member's Service %s: %v", k, err)
			}
		}
	})
}
