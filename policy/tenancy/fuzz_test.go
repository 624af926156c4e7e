package tenancy

import (
	"reflect"
	"strings"
	"testing"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

// FuzzAdmit feeds arbitrary names and namespaces (with the cluster tables
// and targets of dnsendpoint.FuzzReadClusters, whose inputs it shares) to
// the rule: it never panics, Admit and Check agree, case does not matter,
// and no name is admitted from two namespaces that are not trusted.
func FuzzAdmit(f *testing.F) {
	f.Add(`[{"name":"c1","region":"r","zones":["a"],"weight":3,"addresses":["127.1.0.1","fd00::1"],"clusterIPs":["10.0.0.1"],"hostname":"lb.example.com","ports":[{"name":"http","protocol":"TCP","port":80}],"unhealthy":true}]`, "127.1.0.1", "A", "default", "demo.default.dev.svc.kfed.test")
	f.Add(`[{"name":"c1","weight":-1},{"name":"c1"},{"weight":2}]`, "fd00::1", "AAAA", "intruder", "_http._tcp.demo.default.dev.svc.us-east1.kfed.test")
	f.Add(`{"c1":`, "not-an-ip", "A", "kfed-system", "www.kfed.test")
	f.Add(`[{"name":"c2","weight":1e9,"addresses":["1.2.3.4%eth0"]}]`, "1.2.3.4", "A", "b", "a.b.dev.svc.c.dev.svc.kfed.test")
	f.Add(`[{"name":"c1","location":{"latitude":-33.87,"longitude":151.21}},{"name":"c2","location":{"latitude":1e400,"longitude":0}},{"name":"c3","location":[1,2]}]`, "127.1.0.1", "A", "default", "demo.default.dev.svc.kfed.test")
	rule := NewEndpoints("dev", []string{"kfed-system"})
	f.Fuzz(func(t *testing.T, table, target, typ, namespace, name string) {
		obj := &extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{
			{DNSName: "web.example.com", RecordType: typ, Targets: []string{target}},
			{DNSName: name, RecordType: typ, Targets: []string{target}},
		}}}
		obj.Namespace = namespace
		obj.Annotations = map[string]string{"kfed.io/clusters": table}
		checkTenancy(t, rule, obj)
	})
}

// checkTenancy checks the rule's properties on obj's second endpoint.
func checkTenancy(t *testing.T, rule Endpoints, obj *extdnsv1alpha1.DNSEndpoint) {
	before := obj.DeepCopy()
	admitted, refused := rule.Admit(obj)
	if len(admitted.Spec.Endpoints)+len(refused) != len(obj.Spec.Endpoints) {
		t.Fatalf("%d admitted and %d refused of %d endpoints", len(admitted.Spec.Endpoints), len(refused), len(obj.Spec.Endpoints))
	}
	for _, e := range admitted.Spec.Endpoints {
		if err := rule.Check(obj.Namespace, e.DNSName); err != nil {
			t.Fatalf("admitted %q, which Check refuses: %v", e.DNSName, err)
		}
	}
	if !reflect.DeepEqual(obj, before) {
		t.Fatal("Admit changed the object it was given")
	}
	name := obj.Spec.Endpoints[1].DNSName
	if (rule.Check(obj.Namespace, name) == nil) != (rule.Check(obj.Namespace, asciiUpper(strings.TrimSuffix(name, "."))+".") == nil) {
		t.Fatalf("%q is admitted from %q in one case and not in the other", name, obj.Namespace)
	}
	if lower := asciiLower(strings.TrimSuffix(name, ".")); plain(lower) {
		gotOwner, gotFed := rule.owner(lower)
		wantOwner, wantFed := ownerByLabels(rule.federation, lower)
		if gotOwner != wantOwner || gotFed != wantFed {
			t.Fatalf("owner(%q) = %q, %v; reading it label by label gives %q, %v", lower, gotOwner, gotFed, wantOwner, wantFed)
		}
	}
	// Two tenants never both hold a name, whatever the name.
	for _, other := range []string{"default", "intruder", obj.Namespace + "x"} {
		if other != obj.Namespace && obj.Namespace != "kfed-system" &&
			rule.Check(obj.Namespace, name) == nil && rule.Check(other, name) == nil {
			t.Fatalf("%q is admitted from both %q and %q", name, obj.Namespace, other)
		}
	}
}

// ownerByLabels is Endpoints.owner written the plain way, label by label: the
// labels F.svc after a label N make the name N's, and two different Ns
// make it nobody's.
func ownerByLabels(federation, name string) (owner string, federated bool) {
	labels := strings.Split(name, ".")
	for i := 1; i+1 < len(labels); i++ {
		if labels[i] == federation && labels[i+1] == "svc" {
			if federated && owner != labels[i-1] {
				return "", true
			}
			owner, federated = labels[i-1], true
		}
	}
	return owner, federated
}

func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}
