package dns

import (
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/manager"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// kfedTestZone is the zone of the tests on TestOnThreeMembersInKfedTest's bed.
const kfedTestZone = "kfed.test"

// TestOnThreeMembersInKfedTest runs one after another, on one bed of three
// members with load balancers, joined, and kfed's controller serving
// kfedTestZone, the tests whose beds were alike (a bed's API servers are most
// of this package's CPU); each is a subtest under its former name (go test
// -run /FederatedServiceResolvesThroughCoreDNS) and deletes its Service when
// it ends. The CoreDNS chain withdraws a load balancer's address of its own
// shard: it runs last.
func TestOnThreeMembersInKfedTest(t *testing.T) {
	f := framework.Start(t, framework.Members(3), framework.LoadBalancer())
	f.JoinAll()
	f.StartController(manager.Options{Domain: kfedTestZone})
	for _, m := range f.Members {
		fedtest.WantCondition(t, f.Client("federation"), m.Name, kfedv1alpha1.ClusterReady, "True", 20*time.Second)
	}
	t.Run("ExternalDNSPublishesKfedsDNSEndpointsToBINDStably", func(t *testing.T) {
		externalDNSPublishesKfedsDNSEndpointsToBINDStably(t, f)
	})
	t.Run("ExternalDNSPublishesKfedsDNSEndpointsToRoute53Stably", func(t *testing.T) {
		externalDNSPublishesKfedsDNSEndpointsToRoute53Stably(t, f)
	})
	t.Run("FederatedServiceResolvesThroughCoreDNS", func(t *testing.T) { federatedServiceResolvesThroughCoreDNS(t, f) })
}
