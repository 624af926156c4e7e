package mcs

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// TestExportResolvesInEveryMembersCoreDNS runs the whole path on `kfed dev
// up`'s bed: a Service exported in cluster-1 and cluster-2 is imported by
// kfed's controller into cluster-3, whose own CoreDNS (the clusterset
// plugin) answers its name as the MCS DNS specification says, and the
// name is NXDOMAIN in every member once both exports go.
func TestExportResolvesInEveryMembersCoreDNS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	d, clients, _ := startDevBed(t)
	for _, m := range []string{"cluster-1", "cluster-2"} {
		for _, o := range []client.Object{
			&corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
				Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
					Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
			},
			&mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}},
		} {
			if err := clients[m].Create(ctx, o); err != nil {
				t.Fatalf("creating %T in %s: %v", o, m, err)
			}
		}
	}

	const name = "web.default.svc.clusterset.local."
	ask := func(ctx context.Context, member int, qname string, qtype uint16, proto string) (*dns.Msg, error) {
		q := new(dns.Msg)
		q.SetQuestion(qname, qtype)
		r, _, err := (&dns.Client{Net: proto, Timeout: time.Second}).ExchangeContext(ctx, q, d.DNS[member])
		return r, err
	}
	// cluster-3's answer is its own import's ClusterSetIP.
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		var si mcsv1beta1.ServiceImport
		if err := clients["cluster-3"].Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, &si); err != nil {
			return err
		}
		if got := si.Status.Clusters; len(got) != 2 || len(si.Spec.IPs) == 0 {
			return fmt.Errorf("import in cluster-3: clusters %v, ips %v", got, si.Spec.IPs)
		}
		for _, proto := range []string{"udp", "tcp"} {
			r, err := ask(ctx, 2, name, dns.TypeA, proto)
			if err != nil {
				return err
			}
			var got []string
			for _, rr := range r.Answer {
				if a, ok := rr.(*dns.A); ok {
					got = append(got, a.A.String())
				}
			}
			if !r.Authoritative || !slices.Equal(got, si.Spec.IPs) {
				return fmt.Errorf("%s A over %s from cluster-3: %v (aa %v), want the import's %v", name, proto, got, r.Authoritative, si.Spec.IPs)
			}
		}
		return nil
	})
	r, err := ask(ctx, 2, "_http._tcp."+name, dns.TypeSRV, "udp")
	if err != nil || len(r.Answer) != 1 {
		t.Fatalf("SRV from cluster-3: %v, %v", r, err)
	}
	if srv, ok := r.Answer[0].(*dns.SRV); !ok || srv.Port != 80 || srv.Target != name {
		t.Errorf("SRV from cluster-3: %v, want port 80 at %s", r.Answer[0], name)
	}
	r, err = ask(ctx, 2, "dns-version.clusterset.local.", dns.TypeTXT, "udp")
	if err != nil || len(r.Answer) != 1 {
		t.Fatalf("dns-version from cluster-3: %v, %v", r, err)
	}
	if txt, ok := r.Answer[0].(*dns.TXT); !ok || !slices.Equal(txt.Txt, []string{"1.0.0"}) {
		t.Errorf("dns-version from cluster-3: %v, want 1.0.0", r.Answer[0])
	}

	for _, m := range []string{"cluster-1", "cluster-2"} {
		if err := clients[m].Delete(ctx, &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}); err != nil {
			t.Fatal(err)
		}
	}
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		for i := range d.DNS {
			r, err := ask(ctx, i, name, dns.TypeA, "udp")
			if err != nil {
				return err
			}
			if r.Rcode != dns.RcodeNameError {
				return fmt.Errorf("%s from cluster-%d: %s, want NXDOMAIN once both exports are gone", name, i+1, dns.RcodeToString[r.Rcode])
			}
		}
		return nil
	})
}

// startDevBed starts `kfed dev up`'s bed of three members, with CoreDNS and
// a health checker in each, and returns it with a client of each member and
// the folder of kfed's binaries (the CLI among them).
func startDevBed(t *testing.T) (*devenv.Dev, map[string]client.Client, string) {
	t.Helper()
	d, bin := fedtest.StartDevBedWithoutGateways(t, "./cmd/kfed")
	clients := map[string]client.Client{}
	for _, m := range d.Members {
		c, err := client.New(m.Config, client.Options{Scheme: framework.NewScheme(t)})
		if err != nil {
			t.Fatal(err)
		}
		clients[m.Name] = c
	}
	return d, clients, bin
}
