package index_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnsprovider"
	"github.com/kfed-io/kfed/plugin/kfed/index"
)

// FuzzSet feeds arbitrary DNSEndpoint objects (a JSON array, cluster tables
// in their kfed.io/clusters annotation included) through the codec into the
// index, as the plugin's watch does, from the point of view of cluster. It
// uses the index's public API only. Whatever the objects, nothing panics and:
//   - no name is invented: every name with records is an endpoint's name;
//   - no record is invented: every address, CNAME, SRV and TXT record holds
//     a value some endpoint at that name and type gave (an address answered
//     inside the cluster may also be one of its cluster IPs);
//   - every ancestor of a name with records exists (NODATA, not NXDOMAIN);
//   - the result does not depend on the order the objects arrive in, and
//     setting the same objects again changes nothing;
//   - deleting every object leaves an empty index.
func FuzzSet(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add([]byte(seed), "c1")
	}
	f.Fuzz(func(t *testing.T, data []byte, cluster string) {
		var objects []extdnsv1alpha1.DNSEndpoint
		if err := json.Unmarshal(data, &objects); err != nil || len(objects) > 8 {
			return
		}
		forward := index.New(cluster, 30)
		for i := range objects {
			set(forward, i, &objects[i])
		}
		got := dump(t, forward, cluster)
		checkInvented(t, forward, objects, cluster)

		backward := index.New(cluster, 30)
		for i := len(objects) - 1; i >= 0; i-- {
			set(backward, i, &objects[i])
		}
		if back := dump(t, backward, cluster); !slices.Equal(back, got) {
			t.Fatalf("objects set in reverse order give\n%s\nnot\n%s", strings.Join(back, "\n"), strings.Join(got, "\n"))
		}

		v := forward.Version()
		for i := range objects {
			set(forward, i, &objects[i])
		}
		if again := dump(t, forward, cluster); !slices.Equal(again, got) {
			t.Fatalf("setting the same objects again gives\n%s\nnot\n%s", strings.Join(again, "\n"), strings.Join(got, "\n"))
		}
		if len(objects) > 0 && forward.Version() == v {
			t.Fatalf("version did not move on Set")
		}

		names := forward.Names()
		for i := range objects {
			forward.Delete(key(i))
		}
		if forward.Len() != 0 || len(forward.Names()) != 0 {
			t.Fatalf("after deleting every object %d names remain: %v", forward.Len(), forward.Names())
		}
		for _, n := range names {
			for name := n.Name; name != ""; name = parent(name) {
				if _, exists := forward.Lookup(name); exists {
					t.Fatalf("after deleting every object %s still exists", name)
				}
			}
		}
	})
}

func key(i int) string { return fmt.Sprintf("ns/obj-%d", i) }

// set hands obj to the index as the plugin's watch does.
func set(x *index.Index, i int, obj *extdnsv1alpha1.DNSEndpoint) {
	clusters, _ := dnsendpoint.ReadClusters(obj)
	_ = x.Set(key(i), obj.Spec.Endpoints, clusters) // what cannot be served is left out and reported
}

// parent is the name one label up, "" above the root.
func parent(name string) string {
	if name == "." {
		return ""
	}
	_, rest, _ := strings.Cut(name, ".")
	if rest == "" {
		return "."
	}
	return rest
}

// dump renders every record the index serves, in a fixed order, checking on
// the way what holds for any index: names are canonical, records carry their
// name, class and a usable TTL, and every ancestor exists.
func dump(t *testing.T, x *index.Index, cluster string) []string {
	t.Helper()
	var out []string
	named := x.Names()
	if len(named) != x.Len() {
		t.Fatalf("Len %d, Names lists %d", x.Len(), len(named))
	}
	for i, n := range named {
		if i > 0 && named[i-1].Name >= n.Name {
			t.Fatalf("names out of order: %s before %s", named[i-1].Name, n.Name)
		}
		if n.Name != strings.ToLower(dns.Fqdn(n.Name)) {
			t.Fatalf("name %q is not lower case and fully qualified", n.Name)
		}
		r, exists := x.Lookup(n.Name)
		if !exists || r != n.Records {
			t.Fatalf("Lookup(%s) disagrees with Names", n.Name)
		}
		for p := parent(n.Name); p != ""; p = parent(p) {
			if _, exists := x.Lookup(p); !exists {
				t.Fatalf("%s has records but its ancestor %s does not exist", n.Name, p)
			}
		}
		var rrs []dns.RR
		if c := r.CNAME(); c != nil {
			rrs = append(rrs, c)
		}
		for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
			all := r.AppendAll(nil, qtype)
			if r.HasAddresses(qtype) != (len(all) > 0) {
				t.Fatalf("%s: HasAddresses(%d) is %v with %d records", n.Name, qtype, r.HasAddresses(qtype), len(all))
			}
			inside := r.AppendAddresses(nil, qtype, func(int) int { return 0 })
			if len(inside) == 0 && len(all) > 0 {
				t.Fatalf("%s: %d records of type %d for a zone transfer, none for a query", n.Name, len(all), qtype)
			}
			rrs = append(rrs, all...)
			rrs = append(rrs, inside...)
		}
		rrs = append(rrs, r.SRV()...)
		rrs = append(rrs, r.TXT()...)
		if len(rrs) == 0 {
			t.Fatalf("%s is listed with no records", n.Name)
		}
		if r.CNAME() != nil && len(rrs) > 1 {
			t.Fatalf("%s has a CNAME and other records: %v", n.Name, rrs)
		}
		for _, rr := range rrs {
			h := rr.Header()
			if h.Name != n.Name || h.Class != dns.ClassINET || h.Ttl == 0 || h.Ttl > 1<<31-1 || h.Rrtype != dns.StringToType[dns.TypeToString[h.Rrtype]] {
				t.Fatalf("record %v at %s has a bad header", rr, n.Name)
			}
			if _, err := dns.NewRR(rr.String()); err != nil {
				t.Fatalf("record %q does not read back: %v", rr.String(), err)
			}
			out = append(out, rr.String())
		}
	}
	return out
}

// checkInvented checks that every record holds a value an endpoint gave.
func checkInvented(t *testing.T, x *index.Index, objects []extdnsv1alpha1.DNSEndpoint, cluster string) {
	t.Helper()
	given := map[string]map[string]bool{} // name type → values
	add := func(name, typ, v string) {
		k := strings.ToLower(dns.Fqdn(name)) + " " + typ
		if given[k] == nil {
			given[k] = map[string]bool{}
		}
		given[k][v] = true
	}
	addAddr := func(name, typ, s string) {
		if a, err := netip.ParseAddr(strings.TrimSpace(s)); err == nil {
			add(name, typ, a.Unmap().String())
			add(name, typ, a.String())
		}
	}
	for i := range objects {
		obj := &objects[i]
		clusters, _ := dnsendpoint.ReadClusters(obj)
		for _, ep := range obj.Spec.Endpoints {
			typ := strings.ToUpper(ep.RecordType)
			for _, target := range ep.Targets {
				switch typ {
				case "A", "AAAA":
					addAddr(ep.DNSName, typ, target)
				case "CNAME":
					add(ep.DNSName, typ, strings.ToLower(dns.Fqdn(target)))
				case "SRV":
					if v, err := dnsprovider.ParseSRV(target); err == nil {
						add(ep.DNSName, typ, fmt.Sprintf("%d %d %d %s", v.Priority, v.Weight, v.Port, dns.Fqdn(v.Target)))
					}
				case "TXT":
					// The value, or the value of a quoted one; strings
					// hold a backslash escaped, as miekg/dns reads them.
					add(ep.DNSName, typ, strings.ReplaceAll(target, `\`, `\\`))
					if len(target) >= 2 && target[0] == '"' && target[len(target)-1] == '"' {
						add(ep.DNSName, typ, strings.ReplaceAll(target[1:len(target)-1], `\`, `\\`))
					}
				}
			}
			if typ != "A" && typ != "AAAA" {
				continue
			}
			// Cluster IPs, answered inside their cluster, from the table or
			// the older layout's properties.
			if c := clusters[cluster]; c != nil {
				for _, a := range c.ClusterIPs {
					addAddr(ep.DNSName, typ+" inside", a.String())
				}
			}
			for _, p := range ep.ProviderSpecific {
				if p.Name == "kfed.io/cluster-ip" {
					for _, s := range strings.Split(p.Value, ",") {
						addAddr(ep.DNSName, typ+" inside", s)
					}
				}
			}
		}
	}
	for _, n := range x.Names() {
		r := n.Records
		has := func(typ, v string) bool { return given[n.Name+" "+typ][v] }
		if c := r.CNAME(); c != nil && !has("CNAME", c.Target) {
			t.Fatalf("%s: CNAME to %s, which no endpoint gave", n.Name, c.Target)
		}
		for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
			typ := dns.TypeToString[qtype]
			for _, rr := range r.AppendAll(nil, qtype) {
				if v := addrOf(rr); !has(typ, v) {
					t.Fatalf("%s: %s %s, which no endpoint gave", n.Name, typ, v)
				}
			}
			for _, rr := range r.AppendAddresses(nil, qtype, func(int) int { return 0 }) {
				if v := addrOf(rr); !has(typ, v) && !has(typ+" inside", v) {
					t.Fatalf("%s: %s %s answered inside %q, which no endpoint gave", n.Name, typ, v, cluster)
				}
			}
		}
		for _, rr := range r.SRV() {
			s := rr.(*dns.SRV)
			if v := fmt.Sprintf("%d %d %d %s", s.Priority, s.Weight, s.Port, s.Target); !has("SRV", v) {
				t.Fatalf("%s: SRV %s, which no endpoint gave", n.Name, v)
			}
		}
		for _, rr := range r.TXT() {
			if v := strings.Join(rr.(*dns.TXT).Txt, ""); !has("TXT", v) {
				t.Fatalf("%s: TXT %q, which no endpoint gave", n.Name, v)
			}
		}
	}
}

func addrOf(rr dns.RR) string {
	switch rr := rr.(type) {
	case *dns.A:
		a, _ := netip.AddrFromSlice(rr.A)
		return a.Unmap().String()
	case *dns.AAAA:
		a, _ := netip.AddrFromSlice(rr.AAAA)
		return a.String()
	}
	return rr.String()
}

// fuzzSeeds are DNSEndpoints as kfed writes them (the table layout and the
// older one), and some it never writes.
var fuzzSeeds = []string{
	`[{"metadata":{"annotations":{"kfed.io/clusters":"[{\"name\":\"c1\",\"region\":\"eu\",\"weight\":2,\"addresses\":[\"127.1.0.1\",\"fd00::1\"],\"clusterIPs\":[\"10.96.0.10\"]},{\"name\":\"c2\",\"weight\":1,\"addresses\":[\"127.2.0.1\"]},{\"name\":\"c3\",\"weight\":0,\"addresses\":[\"127.3.0.1\"]}]"}},
	  "spec":{"endpoints":[
	    {"dnsName":"web.ns.dev.svc.kfed.test","recordType":"A","targets":["127.1.0.1","127.2.0.1","127.3.0.1"],"recordTTL":30},
	    {"dnsName":"web.ns.dev.svc.kfed.test","recordType":"AAAA","targets":["fd00::1"],"recordTTL":30},
	    {"dnsName":"web.ns.dev.svc.eu.kfed.test","recordType":"A","targets":["127.1.0.1"]},
	    {"dnsName":"c1.web.ns.dev.svc.kfed.test","recordType":"A","targets":["127.1.0.1"]},
	    {"dnsName":"_http._tcp.web.ns.dev.svc.kfed.test","recordType":"SRV","targets":["0 2 80 c1.web.ns.dev.svc.kfed.test.","0 1 80 c2.web.ns.dev.svc.kfed.test."]},
	    {"dnsName":"lb.ns.dev.svc.kfed.test","recordType":"CNAME","targets":["elb.example.com"]},
	    {"dnsName":"txt.ns.dev.svc.kfed.test","recordType":"TXT","targets":["\"heritage=kfed\"","a\\b"]}]}}]`,
	`[{"spec":{"endpoints":[
	    {"dnsName":"web.ns.dev.svc.kfed.test","recordType":"A","targets":["127.1.0.1"],"setIdentifier":"c1","recordTTL":30,
	     "providerSpecific":[{"name":"kfed.io/cluster","value":"c1"},{"name":"kfed.io/weight","value":"3"},{"name":"kfed.io/cluster-ip","value":"10.96.0.1,fd00::10"}]},
	    {"dnsName":"web.ns.dev.svc.kfed.test","recordType":"A","targets":["127.2.0.1"],"setIdentifier":"c2",
	     "providerSpecific":[{"name":"kfed.io/cluster","value":"c2"},{"name":"kfed.io/weight","value":"x"}]}]}},
	  {"spec":{"endpoints":[{"dnsName":"WEB.ns.dev.svc.kfed.test.","recordType":"a","targets":["127.9.0.1","::ffff:127.9.0.2","nope"],"recordTTL":99999999999}]}}]`,
	`[{"spec":{"endpoints":[{"dnsName":"x.kfed.test","recordType":"CNAME","targets":["a.example.com"]},{"dnsName":"x.kfed.test","recordType":"CNAME","targets":["b.example.com"]},{"dnsName":"x.kfed.test","recordType":"A","targets":["127.0.0.1"]}]}},
	  {"spec":{"endpoints":[{"dnsName":"a\\.b.kfed.test","recordType":"A","targets":["127.0.0.1"]},{"dnsName":"","recordType":"A"},{"dnsName":".","recordType":"A","targets":["127.0.0.1"]},{"dnsName":"y..kfed.test","recordType":"MX","targets":["10 mx."]}]}}]`,
	`[{"metadata":{"annotations":{"kfed.io/clusters":"[{\"name\":\"c1\",\"weight\":-1,\"addresses\":[\"127.1.0.1\"]},{\"name\":\"c1\",\"addresses\":[\"127.1.0.1\"]},{\"name\":\"c2\",\"weight\":1e9,\"addresses\":[\"127.1.0.1\"]}]"}},"spec":{"endpoints":[{"dnsName":"z.kfed.test","recordType":"A","targets":["127.1.0.1","127.1.0.1"]},{"dnsName":"z.kfed.test","recordType":"SRV","targets":["0 0 0 a..","1 1 1 .","1 2 3"]}]}}]`,
	`[]`,
}
