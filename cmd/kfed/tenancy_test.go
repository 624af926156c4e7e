package main

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// cliShowsAndLeavesOutWhatANamespaceMayNotPublish
// (TestCLIShowsAndLeavesOutWhatANamespaceMayNotPublish): the CLI applies
// the tenancy rule as the controller and the plugin do: kfed dns plan and
// kfed status show what a DNSEndpoint may not publish, and kfed dns sync
// leaves it out of BIND unless its namespace is trusted.
func cliShowsAndLeavesOutWhatANamespaceMayNotPublish(t *testing.T, f *framework.Federation) {
	const zone = "kfed.test"
	srv := bindtest.Start(t, zone)
	ctx := context.Background()
	fed := f.Client("federation")
	if err := fed.Create(ctx, framework.Namespace("intruder")); err != nil {
		t.Fatal(err)
	}
	intruder := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "intruder", Name: "x", Labels: dnsendpoint.Selector("fed")},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{
			{DNSName: "demo.default.fed.svc." + zone, RecordType: "A", Targets: []string{"198.51.100.66"}},
			{DNSName: "www." + zone, RecordType: "A", Targets: []string{"198.51.100.67"}},
			{DNSName: "x.intruder.fed.svc." + zone, RecordType: "A", Targets: []string{"198.51.100.68"}},
		}},
	}
	fedtest.DeleteAtEnd(t, fed, intruder.DeepCopy())
	if err := fed.Create(ctx, intruder); err != nil {
		t.Fatal(err)
	}

	out, err := run(t, "dns", "plan", "-A", "--kubeconfig", f.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"kfed dns plan: intruder/x: A demo.default.fed.svc." + zone + " not published: ",
		"kfed dns plan: intruder/x: A www." + zone + " not published: ",
		"x.intruder.fed.svc." + zone,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kfed dns plan -A lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "198.51.100.66") || strings.Contains(out, "198.51.100.67") {
		t.Errorf("kfed dns plan -A lists a refused record:\n%s", out)
	}

	out, err = run(t, "status", "--kubeconfig", f.Kubeconfig, "--color", "never")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "DNSENDPOINT") || !strings.Contains(out, "A www."+zone) || !strings.Contains(out, "namespace default") {
		t.Errorf("kfed status does not list the refused names:\n%s", out)
	}

	host, port, _ := net.SplitHostPort(srv.Addr)
	sync := []string{"dns", "sync", "--once", "--kubeconfig", f.Kubeconfig, "--provider", "rfc2136",
		"--rfc2136-host", host, "--rfc2136-port", port, "--rfc2136-zone", zone,
		"--rfc2136-tsig-keyname", bindtest.KeyName, "--rfc2136-tsig-secret-file", srv.SecretFile, "--owner-id", "fed"}
	if out, err := run(t, sync...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	tests := []struct {
		name string
		want []string
	}{
		{"demo.default.fed.svc." + zone, nil},
		{"www." + zone, nil},
		{"x.intruder.fed.svc." + zone, []string{"198.51.100.68"}},
	}
	for _, tt := range tests {
		if got := srv.Answers(t, tt.name, dns.TypeA); !slices.Equal(got, tt.want) {
			t.Errorf("after a sync, BIND answers %v for %s, want %v", got, tt.name, tt.want)
		}
	}

	// Trusted with other names, the namespace publishes www, still not demo.
	if out, err := run(t, append(sync, "--trusted-namespaces", "kfed-system,intruder")...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := srv.Answers(t, "www."+zone, dns.TypeA); !slices.Equal(got, []string{"198.51.100.67"}) {
		t.Errorf("from a trusted namespace, BIND answers %v for www", got)
	}
	if got := srv.Answers(t, "demo.default.fed.svc."+zone, dns.TypeA); len(got) != 0 {
		t.Errorf("a trusted namespace published another namespace's name: %v", got)
	}
}
