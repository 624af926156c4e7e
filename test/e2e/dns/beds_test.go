package dns

import (
	"testing"
	"time"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// A test bed's API servers are most of this package's CPU, so the tests
// whose beds are alike run one after another on one bed, each a subtest
// under its former name (go test -run 'OnTwoMembers/TestCoreDNSIsAHiddenPrimaryForSecondaries$'
// runs one) with namespaces and names of its own, deleting at its end what
// a later one could count or serve. Each keeps its own BIND and its own DNS
// sync or controller where it had one.

// kfedTestZone is the zone of the tests on TestOnThreeMembersInKfedTest's bed.
const kfedTestZone = "kfed.test"

// TestOnThreeMembersInKfedTest: three members with load balancers and
// loopback Gateways (the Gateway API installed everywhere), joined, and
// kfed's controller serving kfedTestZone. Each subtest deletes its Service
// or Gateway when it ends. The CoreDNS chain withdraws a load balancer's
// address of its own shard.
func TestOnThreeMembersInKfedTest(t *testing.T) {
	f := framework.Start(t, framework.Members(3), framework.LoadBalancer())
	if err := gatewayv1.Install(f.Scheme); err != nil {
		t.Fatal(err)
	}
	f.InstallGatewayAPI("federation", "cluster-1", "cluster-2", "cluster-3")
	f.StartLoopbackGateways()
	f.JoinAll()
	f.StartController(manager.Options{Domain: kfedTestZone})
	for _, m := range f.Members {
		fedtest.WantCondition(t, f.Client("federation"), m.Name, kfedv1alpha1.ClusterReady, "True", 20*time.Second)
	}
	runOnBed(t, f, []bedTest{
		{"TestExternalDNSPublishesKfedsDNSEndpointsToBINDStably", externalDNSPublishesKfedsDNSEndpointsToBINDStably},
		{"TestExternalDNSPublishesKfedsDNSEndpointsToRoute53Stably", externalDNSPublishesKfedsDNSEndpointsToRoute53Stably},
		{"TestExternalDNSPublishesAFederatedGatewaysHostname", externalDNSPublishesAFederatedGatewaysHostname},
		{"TestFederatedServiceResolvesThroughCoreDNS", federatedServiceResolvesThroughCoreDNS},
	})
}

// TestOnTwoJoinedMembers: two members with load balancers, joined. Each
// subtest runs kfed's controller publishing to a BIND of its own
// (startControllerWithBIND).
func TestOnTwoJoinedMembers(t *testing.T) {
	f := framework.Start(t, framework.Members(2), framework.LoadBalancer())
	f.JoinAll()
	runOnBed(t, f, []bedTest{
		{"TestDNSSyncControllerPublishesToBINDAndIsQuietInSteadyState", dnsSyncControllerPublishesToBINDAndIsQuietInSteadyState},
		{"TestTenantCannotPublishAnotherNamespacesNames", tenantCannotPublishAnotherNamespacesNames},
	})
}

// TestOnTwoMembers: two members, not joined, no controller. The tests of
// the plugin and of the DNS sync use the control plane alone (they had a
// control plane of their own); the README's forwarding installs the chart
// in the members and runs last.
func TestOnTwoMembers(t *testing.T) {
	f := framework.Start(t, framework.Members(2))
	runOnBed(t, f, []bedTest{
		{"TestCoreDNSServesFederatedNamesFromTheControlPlane", coreDNSServesFederatedNamesFromTheControlPlane},
		{"TestCoreDNSIsAHiddenPrimaryForSecondaries", coreDNSIsAHiddenPrimaryForSecondaries},
		{"TestDNSSyncIncrementalPassesLeaveBINDAsAFullPlanWould", dnsSyncIncrementalPassesLeaveBINDAsAFullPlanWould},
		{"TestTwoProvidersNeverWipeEachOthersPublishStatus", twoProvidersNeverWipeEachOthersPublishStatus},
		{"TestDNSSyncRestoresARecordRemovedBehindItsBackAtRelistThoughNothingChanged", dnsSyncRestoresARecordRemovedBehindItsBackAtRelistThoughNothingChanged},
		{"TestMemberDNSForwardsTheZoneAsTheReadmesSay", memberDNSForwardsTheZoneAsTheReadmesSay},
	})
}

// bedTest is a test run as a subtest on a shared bed, under its former name.
type bedTest struct {
	name string
	run  func(*testing.T, *framework.Federation)
}

func runOnBed(t *testing.T, f *framework.Federation, tests []bedTest) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, f) })
	}
}

// startControllerWithBIND starts a BIND of t's own serving zone and kfed's
// controller publishing to it (owner ID "fed", a sync every 500 ms) until t
// ends; t's later cleanups run while both still do.
func startControllerWithBIND(t *testing.T, f *framework.Federation, zone string) *bindtest.Server {
	t.Helper()
	srv := bindtest.Start(t, zone)
	t.Cleanup(f.StartController(manager.Options{
		Domain: zone, DNSInterval: 500 * time.Millisecond,
		DNS: fedtest.BindProvider(srv, zone, "fed"),
	}))
	return srv
}
