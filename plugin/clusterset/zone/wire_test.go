package zone

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeepCopiesShareNothing(t *testing.T) {
	host, ready, name, port := "db-0", true, "sql", int32(5432)
	eps := &EndpointSliceList{Items: []EndpointSlice{{
		ObjectMeta: metav1.ObjectMeta{Name: "db-1", Labels: map[string]string{LabelServiceName: "db"}},
		Endpoints:  []SliceEndpoint{{Addresses: []string{"10.1.0.10"}, Hostname: &host}},
		Ports:      []SlicePort{{Name: &name, Port: &port}},
	}}}
	eps.Items[0].Endpoints[0].Conditions.Ready = &ready
	si := &ServiceImportList{Items: []ServiceImport{{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       ServiceImportSpec{IPs: []string{"10.42.0.7"}, Ports: []ImportPort{{Name: "http", Port: 80}}},
	}}}
	ec := eps.DeepCopyObject().(*EndpointSliceList)
	sc := si.DeepCopyObject().(*ServiceImportList)
	if !reflect.DeepEqual(ec, eps) || !reflect.DeepEqual(sc, si) {
		t.Fatal("copies differ from the originals")
	}
	e := &ec.Items[0]
	e.Labels[LabelServiceName] = "x"
	e.Endpoints[0].Addresses[0] = "x"
	*e.Endpoints[0].Hostname = "x"
	*e.Endpoints[0].Conditions.Ready = false
	*e.Ports[0].Name = "x"
	*e.Ports[0].Port = 1
	sc.Items[0].Spec.IPs[0] = "x"
	sc.Items[0].Spec.Ports[0].Name = "x"
	o := eps.Items[0]
	if o.Labels[LabelServiceName] != "db" || o.Endpoints[0].Addresses[0] != "10.1.0.10" || host != "db-0" || !ready ||
		name != "sql" || port != 5432 || si.Items[0].Spec.IPs[0] != "10.42.0.7" || si.Items[0].Spec.Ports[0].Name != "http" {
		t.Errorf("changing a copy changed the original: %+v %+v", eps, si)
	}
}
