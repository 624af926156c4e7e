package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/dns/dnsprovider/rfc2136"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// lookup asks BIND over UDP, as any client would.
func lookup(t *testing.T, srv *bindtest.Server, name string, qtype uint16) []string {
	return srv.Answers(t, name, qtype)
}

// dnsSyncPublishesAFederatedServiceToBIND
// (TestDNSSyncPublishesAFederatedServiceToBIND): kfed dns sync publishes a
// federated Service to BIND around a record it does not own, kfed dns plan
// shows the provider's view, and a cluster that leaves leaves the zone. It
// runs kfed's controller for kfed.test until it ends, and unjoins
// cluster-2.
func dnsSyncPublishesAFederatedServiceToBIND(t *testing.T, f *framework.Federation) {
	const zone = "kfed.test"
	t.Cleanup(f.StartController(manager.Options{Domain: zone}))
	srv := bindtest.Start(t, zone)
	ctx := context.Background()
	fed := f.Client("federation")
	global := "web.default.fed.svc." + zone

	// A record someone else owns at one of the names kfed will want.
	p, err := rfc2136.New(rfc2136.Config{Server: srv.Addr, Zones: []string{zone}, TSIGKeyName: bindtest.KeyName, TSIGSecretFile: srv.SecretFile})
	if err != nil {
		t.Fatal(err)
	}
	zones, err := p.Zones(ctx)
	if err != nil {
		t.Fatal(err)
	}
	theirs := dnsprovider.MustNormalize(dnsprovider.RecordSet{Name: "cluster-2." + global, Type: "A", TTL: 300, Targets: []string{"192.0.2.55"}})
	cs := zones[0].NewChangeset()
	cs.Add(dnsprovider.Change{Action: dnsprovider.Create, New: theirs, Group: theirs.Name})
	if err := cs.Apply(ctx); err != nil {
		t.Fatal(err)
	}

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: new(kfedv1alpha1.LoadBalancerClassGlobal),
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
	}
	fedtest.DeleteServicesAtEnd(t, f, client.ObjectKeyFromObject(svc))
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		if err := fed.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(svc.Status.Conditions, kfedv1alpha1.ConditionPublished); c == nil || !strings.Contains(c.Message, "cluster-1, cluster-2") {
			return fmt.Errorf("Published %+v", c)
		}
		return nil
	})

	host, port, _ := net.SplitHostPort(srv.Addr)
	syncArgs := []string{"dns", "sync", "--once", "--kubeconfig", f.Kubeconfig, "--provider", "rfc2136",
		"--rfc2136-host", host, "--rfc2136-port", port, "--rfc2136-zone", zone,
		"--rfc2136-tsig-keyname", bindtest.KeyName, "--rfc2136-tsig-secret-file", srv.SecretFile, "--owner-id", "fed"}

	out, err := run(t, syncArgs...)
	if err == nil || !strings.Contains(err.Error(), "1 names are held by records kfed does not own") {
		t.Fatalf("sync with an unowned record in the way: %v\n%s", err, out)
	}
	if got := lookup(t, srv, global, dns.TypeA); len(got) != 2 {
		t.Errorf("BIND answers %s A %v, want both clusters' addresses", global, got)
	}
	if got := lookup(t, srv, "cluster-2."+global, dns.TypeA); !slices.Equal(got, []string{"192.0.2.55"}) {
		t.Errorf("the unowned record changed: %v", got)
	}
	if got := lookup(t, srv, "web.default.fed.svc.europe-west1."+zone, dns.TypeCNAME); len(got) != 0 {
		t.Errorf("no member is in europe-west1, yet it answers %v", got)
	}
	if got := lookup(t, srv, "web.default.fed.svc.us-east1-c.us-east1."+zone, dns.TypeA); len(got) != 1 {
		t.Errorf("zone name answers %v", got)
	}

	// kfed dns plan --provider shows the provider's view without applying.
	planArgs := append([]string{"dns", "plan", "-A"}, syncArgs[3:]...)
	planArgs = slices.DeleteFunc(planArgs, func(a string) bool { return a == "--once" })
	out, err = run(t, planArgs...)
	if err != nil || !strings.Contains(out, "zone kfed.test: 0 to create") || !strings.Contains(out, "! cluster-2."+global) {
		t.Errorf("kfed dns plan --provider: %v\n%s", err, out)
	}

	// Nothing changed: a dry run plans nothing.
	out, _ = run(t, append(syncArgs, "--dry-run")...)
	if !strings.Contains(out, "0 to create, 0 to update, 0 to delete") || !strings.Contains(out, "0 changes planned") {
		t.Errorf("dry run after a sync:\n%s", out)
	}

	// A cluster leaves: its targets leave the zone on the next sync.
	if err := clusters.Unjoin(ctx, fed, "cluster-2", time.Minute); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(ctx, client.ObjectKeyFromObject(svc), &ep); err != nil {
			return err
		}
		table, err := dnsendpoint.ReadClusters(&ep)
		if err != nil {
			return err
		}
		if table["cluster-2"] != nil {
			return errors.New("cluster-2 still has records")
		}
		return nil
	})
	if out, err := run(t, syncArgs...); err != nil && !strings.Contains(err.Error(), "held by records kfed does not own") {
		t.Fatalf("sync after unjoin: %v\n%s", err, out)
	}
	if got := lookup(t, srv, global, dns.TypeA); len(got) != 1 {
		t.Errorf("after cluster-2 left, BIND answers %v", got)
	}
	if got := lookup(t, srv, "web.default.fed.svc.us-east1-c.us-east1."+zone, dns.TypeCNAME); !slices.Equal(got, []string{"web.default.fed.svc.us-east1." + zone + "."}) {
		t.Errorf("cluster-2's zone name answers %v, want a CNAME to the region", got)
	}
	if got := lookup(t, srv, "cluster-2."+global, dns.TypeA); !slices.Equal(got, []string{"192.0.2.55"}) {
		t.Errorf("the unowned record changed: %v", got)
	}
}
