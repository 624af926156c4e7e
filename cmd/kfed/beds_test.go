package main

import (
	"testing"

	"github.com/kfed-io/kfed/test/framework"
)

// A test bed's API servers are most of this package's CPU, so the tests
// whose beds are alike run one after another on one bed, each a subtest
// under its former name (go test -run 'OnTwoMembers/TestJoinAndUnjoinAgainstRealAPIServers$'
// runs one), deleting at its end what a later one could count or list, and
// each running kfed's controller with its own options where it had one.
// TestStatusListsExportsAndImports keeps a bed of its own: its members have
// the CRDs of the Multi-Cluster Services API from the start, which changes
// what kfed join writes in them.

// TestCLIOnOneMember: one member, not joined at first, no controller. The
// last subtest joins the member and runs the controller itself.
func TestCLIOnOneMember(t *testing.T) {
	f := framework.Start(t, framework.Members(1))
	for _, tt := range []struct {
		name string
		run  func(*testing.T, *framework.Federation)
	}{
		{"TestFailoverCommandPinsAndReleases", failoverCommandPinsAndReleases},
		{"TestCLIShowsAndLeavesOutWhatANamespaceMayNotPublish", cliShowsAndLeavesOutWhatANamespaceMayNotPublish},
		{"TestStatusListsGatewaysAndIngresses", statusListsGatewaysAndIngresses},
		{"TestStatusWatchDrawsAFrameOnEachChange", statusWatchDrawsAFrameOnEachChange},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, f) })
	}
}

// TestCLIOnTwoMembers: two members with load balancers. kfed join's test
// runs first, on members nobody has joined, and leaves none joined; then
// both are joined for the others, which run kfed's controller each with
// its own options. The DNS sync's test unjoins cluster-2: it runs last.
func TestCLIOnTwoMembers(t *testing.T) {
	f := framework.Start(t, framework.Members(2), framework.LoadBalancer())
	t.Run("TestJoinAndUnjoinAgainstRealAPIServers", func(t *testing.T) { joinAndUnjoinAgainstRealAPIServers(t, f) })
	f.JoinAll()
	t.Run("TestStatusAndDNSPlanShowAFederatedService", func(t *testing.T) { statusAndDNSPlanShowAFederatedService(t, f) })
	t.Run("TestDNSSyncPublishesAFederatedServiceToBIND", func(t *testing.T) { dnsSyncPublishesAFederatedServiceToBIND(t, f) })
}
