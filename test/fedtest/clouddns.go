package fedtest

import (
	"context"
	"testing"

	clouddnsapi "google.golang.org/api/dns/v1"
	"google.golang.org/api/option"

	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnsprovider/clouddns"
	"github.com/kfed-io/kfed/test/clouddnsfake"
)

// CloudDNS starts the Cloud DNS local endpoint with the managed zone
// kfed-test (project kfed-test) for zone, and returns it with a provider
// that publishes there and the planner of owner's records.
func CloudDNS(t testing.TB, zone, owner string) (*clouddnsfake.Server, dnsprovider.Provider, dnsprovider.Planner) {
	t.Helper()
	gcp := clouddnsfake.New()
	t.Cleanup(gcp.Close)
	gcp.AddZone("kfed-test", "kfed-test", zone+".")
	api, err := clouddnsapi.NewService(context.Background(), option.WithEndpoint(gcp.URL+"/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	prov, err := clouddns.New(api, clouddns.Config{Project: "kfed-test", Zones: []string{"kfed-test"}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := dnsprovider.NewRegistry(owner, "")
	if err != nil {
		t.Fatal(err)
	}
	return gcp, prov, dnsprovider.Planner{Registry: reg}
}
