package tenancy

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

func TestTenancyOverEveryNameForm(t *testing.T) {
	rule := NewEndpoints("dev", []string{"kfed-system"})
	n := dnsendpoint.NewNames("dev", "kfed.test", "default", "demo")
	tests := []struct {
		name      string
		dnsName   string
		namespace string
		want      bool
	}{
		{"global name from its own namespace", n.Global(), "default", true},
		{"region name from its own namespace", n.Region("us-east1"), "default", true},
		{"zone name from its own namespace", n.Zone("us-east1-b", "us-east1"), "default", true},
		{"per-cluster name from its own namespace", n.Cluster("cluster-1"), "default", true},
		{"SRV name from its own namespace", n.SRV("http", "TCP"), "default", true},
		{"the namespace's own node", "default.dev.svc.kfed.test", "default", true},
		{"a name below a Service from its namespace", "a.b." + n.Global(), "default", true},
		{"upper case and a trailing dot read as the name", strings.ToUpper(n.Global()) + ".", "default", true},

		{"global name from another namespace", n.Global(), "intruder", false},
		{"region name from another namespace", n.Region("us-east1"), "intruder", false},
		{"zone name from another namespace", n.Zone("us-east1-b", "us-east1"), "intruder", false},
		{"per-cluster name from another namespace", n.Cluster("cluster-1"), "intruder", false},
		{"SRV name from another namespace", n.SRV("http", "TCP"), "intruder", false},
		{"upper case from another namespace", strings.ToUpper(n.Global()), "intruder", false},
		{"the namespace's node from another", "default.dev.svc.kfed.test", "intruder", false},
		{"a trusted namespace may not take a tenant's federated name", n.Global(), "kfed-system", false},
		{"a federated name outside the domain is still the namespace's", "demo.default.dev.svc.example.org", "intruder", false},

		{"another name from a trusted namespace", "www.kfed.test", "kfed-system", true},
		{"the federation's node from a trusted namespace", "dev.svc.kfed.test", "kfed-system", true},
		{"a name of another federation from a trusted namespace", "demo.default.other.svc.kfed.test", "kfed-system", true},
		{"another name from a tenant", "www.kfed.test", "intruder", false},
		{"the federation's node from a tenant", "dev.svc.kfed.test", "default", false},
		{"a wildcard over every namespace from anyone", "*.dev.svc.kfed.test", "kfed-system", false},
		{"a wildcard in the namespace's own names", "*.default.dev.svc.kfed.test", "default", true},

		{"a name read two ways from either", "a.default.dev.svc.x.intruder.dev.svc.kfed.test", "intruder", false},
		{"a name read two ways from the other", "a.default.dev.svc.x.intruder.dev.svc.kfed.test", "default", false},
		{"the same owner twice", "a.default.dev.svc.default.dev.svc.kfed.test", "default", true},
		{"an escape that spells a federated name", `demo.default.\100ev.svc.kfed.test`, "kfed-system", false},
		{"an escaped dot", `demo.default\.dev.svc.kfed.test`, "kfed-system", false},
		{"an empty label", "demo..default.dev.svc.kfed.test", "default", false},
		{"an empty name", "", "kfed-system", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := rule.Check(tt.namespace, tt.dnsName)
			if got := err == nil; got != tt.want {
				t.Fatalf("Check(%q, %q) = %v, want admitted %v", tt.namespace, tt.dnsName, err, tt.want)
			}
		})
	}
}

func TestTenancyWithoutTrustedNamespaces(t *testing.T) {
	rule := NewEndpoints("dev", nil)
	if err := rule.Check("kfed-system", "www.kfed.test"); err == nil || !strings.Contains(err.Error(), "(none)") {
		t.Errorf("a name that is no namespace's is admitted, or the error does not say none is trusted: %v", err)
	}
	if err := rule.Check("default", "demo.default.dev.svc.kfed.test"); err != nil {
		t.Errorf("a namespace's own name is refused: %v", err)
	}
}

func TestAdmitServesTheRestOfTheObject(t *testing.T) {
	rule := NewEndpoints("dev", []string{"kfed-system"})
	obj := &extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{
		{DNSName: "x.intruder.dev.svc.kfed.test", RecordType: "A", Targets: []string{"198.51.100.1"}},
		{DNSName: "demo.default.dev.svc.kfed.test", RecordType: "A", Targets: []string{"198.51.100.66"}},
		{DNSName: "www.kfed.test", RecordType: "A", Targets: []string{"198.51.100.67"}},
		{DNSName: "_http._tcp.x.intruder.dev.svc.kfed.test", RecordType: "SRV", Targets: []string{"0 1 80 c.x.intruder.dev.svc.kfed.test."}},
	}}}
	obj.Namespace = "intruder"
	before := obj.DeepCopy()

	got, refused := rule.Admit(obj)
	var names []string
	for _, e := range got.Spec.Endpoints {
		names = append(names, e.DNSName)
	}
	if want := []string{"x.intruder.dev.svc.kfed.test", "_http._tcp.x.intruder.dev.svc.kfed.test"}; !reflect.DeepEqual(names, want) {
		t.Errorf("admitted %v, want %v", names, want)
	}
	if len(refused) != 2 || refused[0].Name != "demo.default.dev.svc.kfed.test" || refused[1].Name != "www.kfed.test" {
		t.Errorf("refused %v, want the two names of others", refused)
	}
	if !strings.Contains(refused[0].Reason, "namespace default") {
		t.Errorf("the refusal does not name the owner: %s", refused[0].Reason)
	}
	if !reflect.DeepEqual(obj, before) {
		t.Error("Admit changed the object it was given")
	}

	own := before.DeepCopy()
	own.Spec.Endpoints = own.Spec.Endpoints[:1]
	if got, refused := rule.Admit(own); got != own || refused != nil {
		t.Error("an object admitted whole is not returned as it is")
	}
}

func TestSelectorHasBothLabels(t *testing.T) {
	sel := dnsendpoint.Selector("dev")
	if sel["app.kubernetes.io/managed-by"] != "kfed" || sel["kfed.io/federation"] != "dev" || len(sel) != 2 {
		t.Errorf("dnsendpoint.Selector(dev) = %v", sel)
	}
	if all := dnsendpoint.Selector(""); all["app.kubernetes.io/managed-by"] != "kfed" || len(all) != 1 {
		t.Errorf("dnsendpoint.Selector(\"\") = %v, want kfed's objects of every federation", all)
	}
}

// BenchmarkTenancyAdmit is the rule's cost on one federated Service's
// DNSEndpoint over three clusters in two regions, admitted whole (what every
// reader pays per object: the plugin per change, the DNS sync per object and
// pass).
func BenchmarkTenancyAdmit(b *testing.B) {
	rule := NewEndpoints("dev", []string{"kfed-system"})
	n := dnsendpoint.NewNames("dev", "kfed.test", "shop", "web")
	names := []string{n.Global(), n.Region("us-east1"), n.Region("europe-west1"),
		n.Zone("us-east1-b", "us-east1"), n.Zone("us-east1-c", "us-east1"), n.Zone("europe-west1-b", "europe-west1"),
		n.Cluster("cluster-1"), n.Cluster("cluster-2"), n.Cluster("cluster-3"), n.SRV("http", "TCP")}
	obj := &extdnsv1alpha1.DNSEndpoint{}
	obj.Namespace = "shop"
	for _, name := range names {
		obj.Spec.Endpoints = append(obj.Spec.Endpoints, extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "A"})
	}
	b.ReportAllocs()
	for b.Loop() {
		if got, _ := rule.Admit(obj); got != obj {
			b.Fatal("refused")
		}
	}
}
