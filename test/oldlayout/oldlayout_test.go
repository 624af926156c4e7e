package oldlayout

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
)

func TestUpgradeRewritesTheOlderLayout(t *testing.T) {
	const name = "web.ns.fed.svc.example.com"
	prop := func(k, v string) extdnsv1alpha1.ProviderSpecificProperty {
		return extdnsv1alpha1.ProviderSpecificProperty{Name: k, Value: v}
	}
	obj := &extdnsv1alpha1.DNSEndpoint{Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: []extdnsv1alpha1.Endpoint{
		extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "A", Targets: []string{"127.1.0.1"}, SetIdentifier: "c1", RecordTTL: 30,
			ProviderSpecific: []extdnsv1alpha1.ProviderSpecificProperty{prop("kfed.io/cluster", "c1"), prop("kfed.io/weight", "2")}},
		extdnsv1alpha1.Endpoint{DNSName: name, RecordType: "A", Targets: []string{"127.2.0.1"}, SetIdentifier: "c2", RecordTTL: 30,
			ProviderSpecific: []extdnsv1alpha1.ProviderSpecificProperty{prop("kfed.io/cluster", "c2"), prop("kfed.io/weight", "0")}},
		extdnsv1alpha1.Endpoint{DNSName: "_http._tcp." + name, RecordType: "SRV", Targets: []string{"0 2 80 c1." + name + "."}, RecordTTL: 30},
	}}}
	if err := Upgrade(obj); err != nil {
		t.Fatal(err)
	}
	if n := len(obj.Spec.Endpoints); n != 2 {
		t.Fatalf("%d endpoints after the upgrade, want one per name and type: %+v", n, obj.Spec.Endpoints)
	}
	if e := obj.Spec.Endpoints[0]; e.SetIdentifier != "" || len(e.ProviderSpecific) != 0 || strings.Join(e.Targets, ",") != "127.1.0.1,127.2.0.1" {
		t.Errorf("merged endpoint %+v", e)
	}
	clusters, err := dnsendpoint.ReadClusters(obj)
	if err != nil {
		t.Fatal(err)
	}
	if clusters["c1"] == nil || clusters["c1"].Weight != 2 || clusters["c2"] == nil || clusters["c2"].Weight != 0 {
		t.Errorf("table %+v", clusters)
	}
	// An object already in the current layout is left alone.
	before := obj.DeepCopy()
	if err := Upgrade(obj); err != nil || !reflect.DeepEqual(before, obj) {
		t.Errorf("a second upgrade changed the object: %v", err)
	}
}
