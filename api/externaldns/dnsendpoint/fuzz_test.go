package dnsendpoint

import (
	"net/netip"
	"reflect"
	"testing"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

// FuzzReadClusters feeds arbitrary cluster tables, targets and names to
// the codec: it never panics, whatever it reads writes back and reads
// again the same, and attributing targets never invents an address. (The
// tenancy rule has its own, tenancy.FuzzAdmit, over the same inputs.)
func FuzzReadClusters(f *testing.F) {
	f.Add(`[{"name":"c1","region":"r","zones":["a"],"weight":3,"addresses":["127.1.0.1","fd00::1"],"clusterIPs":["10.0.0.1"],"hostname":"lb.example.com","ports":[{"name":"http","protocol":"TCP","port":80}],"unhealthy":true}]`, "127.1.0.1", "A", "default", "demo.default.dev.svc.kfed.test")
	f.Add(`[{"name":"c1","weight":-1},{"name":"c1"},{"weight":2}]`, "fd00::1", "AAAA", "intruder", "_http._tcp.demo.default.dev.svc.us-east1.kfed.test")
	f.Add(`{"c1":`, "not-an-ip", "A", "kfed-system", "www.kfed.test")
	f.Add(`[{"name":"c2","weight":1e9,"addresses":["1.2.3.4%eth0"]}]`, "1.2.3.4", "A", "b", "a.b.dev.svc.c.dev.svc.kfed.test")
	f.Add(`[{"name":"c1","location":{"latitude":-33.87,"longitude":151.21}},{"name":"c2","location":{"latitude":1e400,"longitude":0}},{"name":"c3","location":[1,2]}]`, "127.1.0.1", "A", "default", "demo.default.dev.svc.kfed.test")
	f.Fuzz(func(t *testing.T, table, target, typ, namespace, name string) {
		obj := &extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{
			{DNSName: "web.example.com", RecordType: typ, Targets: []string{target}},
			{DNSName: name, RecordType: typ, Targets: []string{target}},
		}}}
		obj.Namespace = namespace
		obj.Annotations = map[string]string{AnnotationClusters: table}
		clusters, _ := ReadClusters(obj)
		groups, _ := clusters.Groups(&obj.Spec.Endpoints[0])
		want, err := netip.ParseAddr(target)
		for _, g := range groups {
			for _, a := range g.Addrs {
				if err != nil || a != want {
					t.Fatalf("group %+v holds %v, which is not the target %q", g, a, target)
				}
			}
		}
		var rows []Cluster
		for _, c := range clusters {
			rows = append(rows, *c)
		}
		again := &extdnsv1alpha1.DNSEndpoint{}
		SetClusters(again, rows)
		back, err := ReadClusters(again)
		if err != nil {
			t.Fatalf("a table the codec wrote does not read back: %v\n%s", err, again.Annotations[AnnotationClusters])
		}
		if len(back) != len(clusters) {
			t.Fatalf("%d clusters read back, want %d", len(back), len(clusters))
		}
		for name, c := range clusters {
			if got := normal(*back[name]); !reflect.DeepEqual(got, normal(*c)) {
				t.Fatalf("cluster %s read back as %+v, want %+v", name, got, normal(*c))
			}
		}
	})
}

// normal makes empty lists nil, which JSON does not tell apart.
func normal(c Cluster) Cluster {
	if len(c.Zones) == 0 {
		c.Zones = nil
	}
	if len(c.Addresses) == 0 {
		c.Addresses = nil
	}
	if len(c.ClusterIPs) == 0 {
		c.ClusterIPs = nil
	}
	if len(c.Ports) == 0 {
		c.Ports = nil
	}
	return c
}
