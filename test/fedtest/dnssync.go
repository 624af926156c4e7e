package fedtest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnssync"
	"github.com/kfed-io/kfed/test/clouddnsfake"
	"github.com/kfed-io/kfed/test/framework"
	"github.com/kfed-io/kfed/test/route53fake"
)

// ControlPlane is where a DNS sync reads DNSEndpoints: a control plane's
// config and the scheme to read it with, and the federation.
type ControlPlane struct {
	Config     *rest.Config
	Scheme     *runtime.Scheme
	Federation string
}

// StartRoute53Sync starts the Route53 local endpoint with a public hosted
// zone for zone, and runs the DNS sync controller kfed-controller runs to
// publish cp's DNSEndpoints there (records owned by the federation) until
// the test ends. It returns the endpoint and the zone's ID.
func StartRoute53Sync(t *testing.T, cp ControlPlane, zone string) (*route53fake.Server, string) {
	t.Helper()
	r53 := route53fake.New()
	t.Cleanup(r53.Close)
	zoneID := r53.AddZone(zone, false)
	for k, v := range map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
		"AWS_SECRET_ACCESS_KEY": "fake", "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
	pf := dnssync.ProviderFlags{Provider: "route53", OwnerID: cp.Federation, Route53Endpoint: r53.URL, Route53ZoneID: zoneID}
	prov, planner, err := pf.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	StartDNSSync(t, cp, prov, planner)
	return r53, zoneID
}

// StartCloudDNSSync is StartRoute53Sync for the Cloud DNS local endpoint
// (CloudDNS's managed zone kfed-test).
func StartCloudDNSSync(t *testing.T, cp ControlPlane, zone string) *clouddnsfake.Server {
	t.Helper()
	gcp, prov, planner := CloudDNS(t, zone, cp.Federation)
	StartDNSSync(t, cp, prov, planner)
	return gcp
}

// StartDNSSync runs a dnssync.Controller for prov in a manager of its own,
// syncing every half second, until the test ends.
func StartDNSSync(t *testing.T, cp ControlPlane, prov dnsprovider.Provider, planner dnsprovider.Planner) {
	t.Helper()
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(framework.LogWriter(t)))).WithName(prov.Name() + "-sync")
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme: cp.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := dnssync.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(&dnssync.Controller{
		Syncer: &dnssync.Syncer{Provider: prov, Planner: planner}, Fed: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Cache: mgr.GetCache(),
		Federation: cp.Federation, Logger: logger, Interval: 500 * time.Millisecond, Metrics: m,
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("%s sync: %v", prov.Name(), err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// Route53Targets are the A values of every record set at name (one per
// cluster when weighted), sorted.
func Route53Targets(sets []route53fake.RecordSet, name string) []string {
	var out []string
	for _, rs := range sets {
		if strings.TrimSuffix(rs.Name, ".") == name && rs.Type == "A" {
			for _, r := range rs.ResourceRecords {
				out = append(out, r.Value)
			}
		}
	}
	slices.Sort(out)
	return out
}

// CloudDNSTargets are the A data at name, plain or in a routing policy's
// items, sorted.
func CloudDNSTargets(sets []clouddnsfake.RecordSet, name string) []string {
	var out []string
	for _, rs := range sets {
		if strings.TrimSuffix(rs.Name, ".") != name || rs.Type != "A" {
			continue
		}
		out = append(out, rs.Rrdatas...)
		if p := rs.RoutingPolicy; p != nil && p.Wrr != nil {
			for _, it := range p.Wrr.Items {
				out = append(out, it.Rrdatas...)
			}
		}
		if p := rs.RoutingPolicy; p != nil && p.Geo != nil {
			for _, it := range p.Geo.Items {
				out = append(out, it.Rrdatas...)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
