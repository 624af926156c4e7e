package dnssync

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awsroute53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/go-logr/logr/testr"
	clouddnsapi "google.golang.org/api/dns/v1"
	"google.golang.org/api/option"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnsprovider/clouddns"
	"github.com/kfed-io/kfed/dns/dnsprovider/rfc2136"
	"github.com/kfed-io/kfed/dns/dnsprovider/route53"
	"github.com/kfed-io/kfed/policy/tenancy"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/clouddnsfake"
	"github.com/kfed-io/kfed/test/route53fake"
)

const refusalZone = "kfed.test"

// TestOneRefusedNameDoesNotHideTheOthers publishes three DNSEndpoints
// through the real provider code, one of which asks for a name the provider
// refuses as the real one does: Route53 and Cloud DNS a label of 64 octets
// (their local endpoints check it as the APIs do), BIND a name its
// update-policy denies. Every other name, the bad object's other name
// included, is published; the good objects are marked with their
// generation, and only the bad one carries the provider's words. The
// refused name is not sent again while nothing about it changes, is sent
// again when its DNSEndpoint changes, and is not recorded as applied.
func TestOneRefusedNameDoesNotHideTheOthers(t *testing.T) {
	long := strings.Repeat("x", 64) + "." + refusalZone
	providers := []struct {
		name  string
		bad   string
		words string
		new   func(t *testing.T) dnsprovider.Provider
	}{
		{"route53", long, "DomainLabelTooLong", func(t *testing.T) dnsprovider.Provider {
			f := route53fake.New()
			t.Cleanup(f.Close)
			id := f.AddZone(refusalZone, false)
			c := awsroute53.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")},
				func(o *awsroute53.Options) { o.BaseEndpoint = aws.String(f.URL) })
			return route53.New(c, route53.Config{ZoneIDs: []string{id}, RequestsPerSecond: 1000})
		}},
		{"clouddns", long, "Invalid value for 'entity.change.additions", func(t *testing.T) dnsprovider.Provider {
			f := clouddnsfake.New()
			t.Cleanup(f.Close)
			f.AddZone("p", "kfed-test", refusalZone+".")
			svc, err := clouddnsapi.NewService(context.Background(), option.WithEndpoint(f.URL+"/"), option.WithoutAuthentication())
			if err != nil {
				t.Fatal(err)
			}
			p, err := clouddns.New(svc, clouddns.Config{Project: "p"})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"rfc2136", "blocked." + refusalZone, "REFUSED", func(t *testing.T) dnsprovider.Provider {
			srv := bindtest.StartDenying(t, refusalZone, "blocked."+refusalZone)
			p, err := rfc2136.New(rfc2136.Config{Server: srv.Addr, Zones: []string{refusalZone}, TSIGKeyName: bindtest.KeyName, TSIGSecretFile: srv.SecretFile})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}},
	}
	for _, pv := range providers {
		t.Run(pv.name, func(t *testing.T) {
			ctx := context.Background()
			prov := pv.new(t)
			reg, err := dnsprovider.NewRegistry("fed", "")
			if err != nil {
				t.Fatal(err)
			}
			s := runtime.NewScheme()
			if err := extdnsv1alpha1.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			object := func(name, ip string, names ...string) *extdnsv1alpha1.DNSEndpoint {
				ep := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1, UID: types.UID(name), Labels: dnsendpoint.Selector("fed")}}
				for _, n := range names {
					ep.Spec.Endpoints = append(ep.Spec.Endpoints, extdnsv1alpha1.Endpoint{DNSName: n, RecordType: "A", RecordTTL: 30, Targets: []string{ip}})
				}
				return ep
			}
			fed := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&extdnsv1alpha1.DNSEndpoint{}).WithObjects(
				object("first", "192.0.2.1", "first."+refusalZone),
				object("bad", "192.0.2.2", "fine."+refusalZone, pv.bad),
				object("last", "192.0.2.3", "last."+refusalZone),
			).Build()
			now := clocktesting.NewFakePassiveClock(time.Now())
			c := &Controller{Syncer: &Syncer{Provider: prov, Planner: dnsprovider.Planner{Registry: reg}, Clock: now}, Fed: fed, Federation: "fed",
				Tenancy: tenancy.NewEndpoints("fed", []string{"ns"}), Logger: testr.New(t)}
			get := func(name string) *extdnsv1alpha1.DNSEndpoint {
				t.Helper()
				var ep extdnsv1alpha1.DNSEndpoint
				if err := fed.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, &ep); err != nil {
					t.Fatal(err)
				}
				return &ep
			}
			publisher := func(ep *extdnsv1alpha1.DNSEndpoint) extdnsv1alpha1.PublisherStatus {
				for _, p := range ep.Status.Publishers {
					if p.Provider == prov.Name() {
						return p
					}
				}
				return extdnsv1alpha1.PublisherStatus{}
			}
			check := func(step string) {
				t.Helper()
				for _, name := range []string{"first", "last"} {
					ep := get(name)
					if p := publisher(ep); p.ObservedGeneration != ep.Generation || p.Error != "" || ep.Status.ObservedGeneration != ep.Generation {
						t.Errorf("%s: %s's status %+v (observed %d), want generation %d published and no error", step, name, p, ep.Status.ObservedGeneration, ep.Generation)
					}
				}
				if p := publisher(get("bad")); p.ObservedGeneration != 0 || !strings.Contains(p.Error, pv.words) || !strings.Contains(p.Error, pv.bad) && pv.name != "rfc2136" {
					t.Errorf("%s: the bad object's status %+v, want no generation and the provider's words (%q)", step, p, pv.words)
				}
				zones, err := prov.Zones(ctx)
				if err != nil {
					t.Fatal(err)
				}
				listed, err := zones[0].Records(ctx)
				if err != nil {
					t.Fatal(err)
				}
				have := map[string]bool{}
				for _, rs := range listed {
					have[rs.Name] = true
				}
				for _, n := range []string{"first", "fine", "last"} {
					if !have[n+"."+refusalZone] {
						t.Errorf("%s: %s.%s is not published", step, n, refusalZone)
					}
				}
				if have[pv.bad] {
					t.Errorf("%s: the refused name is in the zone", step)
				}
			}

			c.syncOnce(ctx)
			check("first pass")
			// The cache holds what was applied, not the refused name: a plan
			// from it still asks for that name, as one from a fresh listing.
			var l extdnsv1alpha1.DNSEndpointList
			if err := fed.List(ctx, &l); err != nil {
				t.Fatal(err)
			}
			desired := Desired(c.Tenancy, l.Items)
			for _, syncer := range []*Syncer{c.Syncer, {Provider: prov, Planner: dnsprovider.Planner{Registry: reg}}} {
				res, err := syncer.Sync(ctx, desired, true)
				groups := map[string]bool{}
				for _, p := range res.Plans {
					for _, ch := range p.Changes {
						groups[ch.Group] = true
					}
				}
				if err != nil || len(groups) != 1 || !groups[pv.bad] {
					t.Errorf("a plan after the first pass changes %v (%v), want only the refused name", groups, err)
				}
			}

			// Another object changes: only its change is sent.
			last := get("last")
			last.Spec.Endpoints[0].Targets = []string{"192.0.2.33"}
			last.Generation++
			if err := fed.Update(ctx, last); err != nil {
				t.Fatal(err)
			}
			before := prov.Stats().Requests
			c.syncOnce(ctx)
			if n := prov.Stats().Requests - before; n != 1 {
				t.Errorf("a pass after another object changed sent %d requests, want 1: the refused name is sent again", n)
			}
			check("another object changed")
			// Nothing changes: nothing is sent.
			before = prov.Stats().Requests
			c.syncOnce(ctx)
			c.syncOnce(ctx)
			if n := prov.Stats().Requests - before; n != 0 {
				t.Errorf("passes with nothing changed sent %d requests", n)
			}

			// The bad object changes: its refused name is sent again.
			bad := get("bad")
			bad.Spec.Endpoints[0].Targets = []string{"192.0.2.22"}
			bad.Generation++
			if err := fed.Update(ctx, bad); err != nil {
				t.Fatal(err)
			}
			before = prov.Stats().Requests
			c.syncOnce(ctx)
			if n := prov.Stats().Requests - before; n < 2 {
				t.Errorf("a pass after the bad object changed sent %d requests, want its names sent again", n)
			}
			check("the bad object changed")

			// Once the listing is due again (Relist), the zone is listed and
			// the refused name sent once more.
			c.syncOnce(ctx)
			now.SetTime(now.Now().Add(2 * time.Hour))
			before = prov.Stats().Requests
			c.syncOnce(ctx)
			if n := prov.Stats().Requests - before; n < 2 {
				t.Errorf("the pass at Relist sent %d requests, want the zone listed and the refused name sent again", n)
			}
			check("at Relist")
		})
	}
}
