package clusterset

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/plugin/clusterset/zone"
)

func TestSerialRisesWithResourceVersions(t *testing.T) {
	tests := []struct {
		name     string
		versions []string
		want     uint32
	}{
		{"the highest version seen", []string{"10", "30", "20"}, 30},
		{"versions that are no numbers change nothing", []string{"10", "abc", ""}, 10},
		{"taken modulo 2^32", []string{"4294967306"}, 10},
		{"past the wrap, a version of the next round is newer (RFC 1982)", []string{"4294967290", "4294967306"}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &watcher{cs: newClusterset(config{zone: defaultZone, ttl: 5})}
			for _, v := range tt.versions {
				w.changed(v)
			}
			if got := w.cs.serial.Load(); got != tt.want {
				t.Errorf("serial %d, want %d", got, tt.want)
			}
		})
	}
}

// The informers' transforms keep what the zone reads, and return an object
// already transformed as it is: streaming lists transform each object twice.
func TestTransformsKeepWhatTheZoneReads(t *testing.T) {
	si := &zone.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", ResourceVersion: "7"},
		Spec: zone.ServiceImportSpec{Type: "ClusterSetIP", IPs: []string{"10.42.0.7"}}}
	o, _ := readImport(si)
	ci, ok := o.(*cachedImport)
	if !ok || ci.imp.Name != "web" || len(ci.imp.IPs) != 1 || ci.GetObjectMeta().GetResourceVersion() != "7" {
		t.Fatalf("readImport: %#v", o)
	}
	if again, _ := readImport(ci); again != ci {
		t.Error("readImport changed an import it had read")
	}
	eps := &zone.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-1", Labels: map[string]string{
		zone.LabelServiceName: "db"}}, AddressType: "IPv4"}
	o, _ = readSlice(eps)
	cs, ok := o.(*cachedSlice)
	if !ok || cs.slice != nil || cs.err == nil || cs.GetObjectMeta().GetName() != "db-1" {
		t.Fatalf("a slice without source cluster: %#v", o)
	}
	if again, _ := readSlice(cs); again != cs {
		t.Error("readSlice changed a slice it had read")
	}
}
