package mcs

import (
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// export is cluster's export of hello, created age seconds after t0, of
// svc (nil: no Service).
func export(cluster string, at int, svc *corev1.Service, pods ...string) Export {
	e := Export{
		Cluster: cluster,
		Export: &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "hello", CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(at) * time.Second)),
		}},
		Service: svc,
	}
	if len(pods) > 0 {
		s := discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("tcp"), Port: ptr.To(int32(8080))}}}
		for _, p := range pods {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{p}, NodeName: ptr.To("node")})
		}
		e.Slices = []discoveryv1.EndpointSlice{s}
	}
	return e
}

func service(mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{Spec: corev1.ServiceSpec{
		Type:  corev1.ServiceTypeClusterIP,
		Ports: []corev1.ServicePort{{Name: "tcp", Port: 42, Protocol: corev1.ProtocolTCP}},
	}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func headlessService(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }

func condition(d Decision, cluster string, t mcsv1beta1.ServiceExportConditionType) string {
	c := meta.FindStatusCondition(d.Conditions[cluster], string(t))
	if c == nil {
		return "-"
	}
	return string(c.Status) + "/" + c.Reason
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name    string
		exports []Export
		// want: per cluster "Valid Conflict" as Status/Reason ("-" absent)
		want     map[string][2]string
		wantType mcsv1beta1.ServiceImportType // "" for no import
		clusters []string
		ports    []string
	}{
		{
			name:     "one export of a ClusterIP Service is valid, conflicts with none, and imports as ClusterSetIP",
			exports:  []Export{export("c1", 0, service())},
			want:     map[string][2]string{"c1": {"True/Valid", "False/NoConflicts"}},
			wantType: mcsv1beta1.ClusterSetIP, clusters: []string{"c1"}, ports: []string{"tcp/TCP/42"},
		},
		{
			name:    "an export without a Service is not valid and imports nothing",
			exports: []Export{export("c1", 0, nil)},
			want:    map[string][2]string{"c1": {"False/NoService", "-"}},
		},
		{
			name: "an ExternalName Service is not valid, and leaves the other cluster's export alone",
			exports: []Export{
				export("c1", 0, service(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName })),
				export("c2", 5, service()),
			},
			want:     map[string][2]string{"c1": {"False/InvalidServiceType", "-"}, "c2": {"True/Valid", "False/NoConflicts"}},
			wantType: mcsv1beta1.ClusterSetIP, clusters: []string{"c2"}, ports: []string{"tcp/TCP/42"},
		},
		{
			name:     "a type conflict is reported on both exports and the oldest, headless, wins",
			exports:  []Export{export("c2", 5, service()), export("c1", 0, service(headlessService))},
			want:     map[string][2]string{"c1": {"True/Valid", "True/TypeConflict"}, "c2": {"True/Valid", "True/TypeConflict"}},
			wantType: mcsv1beta1.Headless, clusters: []string{"c1", "c2"}, ports: []string{"tcp/TCP/42"},
		},
		{
			name:     "exports created in the same second: the cluster ID decides which is oldest",
			exports:  []Export{export("c2", 0, service(headlessService)), export("c1", 0, service())},
			want:     map[string][2]string{"c1": {"True/Valid", "True/TypeConflict"}, "c2": {"True/Valid", "True/TypeConflict"}},
			wantType: mcsv1beta1.ClusterSetIP, clusters: []string{"c1", "c2"}, ports: []string{"tcp/TCP/42"},
		},
		{
			name: "ports are merged; a port name used with another number keeps the oldest's; both are told",
			exports: []Export{
				export("c1", 0, service()),
				export("c2", 1, service(func(s *corev1.Service) {
					s.Spec.Ports = []corev1.ServicePort{{Name: "tcp", Port: 43, Protocol: corev1.ProtocolTCP},
						{Name: "sctp", Port: 142, Protocol: corev1.ProtocolSCTP}}
				})),
			},
			want:     map[string][2]string{"c1": {"True/Valid", "True/PortConflict"}, "c2": {"True/Valid", "True/PortConflict"}},
			wantType: mcsv1beta1.ClusterSetIP, clusters: []string{"c1", "c2"}, ports: []string{"tcp/TCP/42", "sctp/SCTP/142"},
		},
		{
			name: "session affinity and exported labels: the oldest wins, every reason is given",
			exports: []Export{
				export("c1", 0, service()),
				func() Export {
					e := export("c2", 1, service(func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }))
					e.Export.Spec.ExportedLabels = map[string]string{"team": "b"}
					return e
				}(),
			},
			want: map[string][2]string{
				"c1": {"True/Valid", "True/SessionAffinityConflict,LabelsConflict"},
				"c2": {"True/Valid", "True/SessionAffinityConflict,LabelsConflict"},
			},
			wantType: mcsv1beta1.ClusterSetIP, clusters: []string{"c1", "c2"}, ports: []string{"tcp/TCP/42"},
		},
		{
			name:     "a member without an export has no conditions and adds no cluster",
			exports:  []Export{export("c1", 0, service()), {Cluster: "c2", Service: service()}},
			want:     map[string][2]string{"c1": {"True/Valid", "False/NoConflicts"}, "c2": {"-", "-"}},
			wantType: mcsv1beta1.ClusterSetIP, clusters: []string{"c1"}, ports: []string{"tcp/TCP/42"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.exports)
			for cluster, want := range tc.want {
				got := [2]string{condition(d, cluster, mcsv1beta1.ServiceExportConditionValid),
					condition(d, cluster, mcsv1beta1.ServiceExportConditionConflict)}
				if got != want {
					t.Errorf("cluster %s: conditions %v, want %v", cluster, got, want)
				}
			}
			if tc.wantType == "" {
				if d.Import != nil {
					t.Fatalf("import %+v, want none", d.Import)
				}
				return
			}
			if d.Import == nil {
				t.Fatal("no import")
			}
			if d.Import.Spec.Type != tc.wantType {
				t.Errorf("type %s, want %s", d.Import.Spec.Type, tc.wantType)
			}
			if !slices.Equal(d.Import.Clusters, tc.clusters) {
				t.Errorf("clusters %v, want %v", d.Import.Clusters, tc.clusters)
			}
			var ports []string
			for _, p := range d.Import.Spec.Ports {
				ports = append(ports, p.Name+"/"+string(p.Protocol)+"/"+strconv.Itoa(int(p.Port)))
			}
			if !slices.Equal(ports, tc.ports) {
				t.Errorf("ports %v, want %v", ports, tc.ports)
			}
		})
	}
}

var keyHello = types.NamespacedName{Namespace: "ns", Name: "hello"}

func TestEndpointSlicesPerMember(t *testing.T) {
	lb := service(func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.5"}}
	})
	for _, tc := range []struct {
		name    string
		exports []Export
		member  string
		// want: slice name -> addresses
		want map[string][]string
	}{
		{
			name:    "a member routes its own pods and another cluster's load balancer",
			exports: []Export{export("c1", 0, service(), "10.1.0.1"), export("c2", 1, lb, "10.2.0.1", "10.2.0.2")},
			member:  "c1",
			want:    map[string][]string{"hello-c1-ipv4": {"10.1.0.1"}, "hello-c2-ipv4": {"192.0.2.5"}},
		},
		{
			name:    "another cluster's pods where it has no load balancer (a flat pod network), its load balancer where it has",
			exports: []Export{export("c1", 0, service(), "10.1.0.1"), export("c2", 1, lb, "10.2.0.1", "10.2.0.2")},
			member:  "c3",
			want:    map[string][]string{"hello-c1-ipv4": {"10.1.0.1"}, "hello-c2-ipv4": {"192.0.2.5"}},
		},
		{
			name:    "the exporting cluster routes its own pods, not its load balancer",
			exports: []Export{export("c2", 1, lb, "10.2.0.1", "10.2.0.2")},
			member:  "c2",
			want:    map[string][]string{"hello-c2-ipv4": {"10.2.0.1", "10.2.0.2"}},
		},
		{
			name: "a load balancer address no EndpointSlice may hold (loopback, link-local) is left out, not the import",
			exports: []Export{export("c1", 0, service(), "10.1.0.1"), export("c2", 1, service(func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeLoadBalancer
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "127.0.5.1"}, {IP: "169.254.0.1"}, {IP: "192.0.2.1"}}
			}), "10.2.0.1")},
			member: "c1",
			want:   map[string][]string{"hello-c1-ipv4": {"10.1.0.1"}, "hello-c2-ipv4": {"192.0.2.1"}},
		},
		{
			name: "a headless import holds every cluster's pods",
			exports: []Export{export("c1", 0, service(headlessService), "10.1.0.1"),
				export("c2", 1, service(headlessService), "10.2.0.1")},
			member: "c3",
			want:   map[string][]string{"hello-c1-ipv4": {"10.1.0.1"}, "hello-c2-ipv4": {"10.2.0.1"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.exports)
			owner := &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Name: "hello", UID: "u"}}
			got := map[string][]string{}
			for _, s := range endpointSlices("fed", keyHello, d.Import, tc.member, owner) {
				for _, ep := range s.Endpoints {
					got[s.Name] = append(got[s.Name], ep.Addresses...)
					if ep.NodeName != nil {
						t.Errorf("slice %s copies a node name of the source cluster", s.Name)
					}
				}
				if s.Labels[discoveryv1.LabelManagedBy] != ManagedBy || s.Labels[mcsv1beta1.LabelServiceName] != "hello" ||
					s.Labels[mcsv1beta1.LabelSourceCluster] == "" || len(s.OwnerReferences) != 1 {
					t.Errorf("slice %s: labels %v, owners %v", s.Name, s.Labels, s.OwnerReferences)
				}
				wantDerived := d.Import.Spec.Type == mcsv1beta1.ClusterSetIP
				if (s.Labels[discoveryv1.LabelServiceName] == DerivedName("hello")) != wantDerived {
					t.Errorf("slice %s: %s=%q", s.Name, discoveryv1.LabelServiceName, s.Labels[discoveryv1.LabelServiceName])
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("slices %v, want %v", got, tc.want)
			}
			for name, addrs := range tc.want {
				if !slices.Equal(got[name], addrs) {
					t.Errorf("slice %s: %v, want %v", name, got[name], addrs)
				}
			}
		})
	}
}

func TestDerivedName(t *testing.T) {
	long := "a-name-that-is-quite-long-for-a-service-but-still-valid-xyz"
	for _, tc := range []struct{ name, want string }{
		{"hello", "kfed-mcs-hello"},
		{long, DerivedName(long)},
	} {
		got := DerivedName(tc.name)
		if got != tc.want || len(got) > 63 {
			t.Errorf("DerivedName(%q) = %q (%d characters), want %q", tc.name, got, len(got), tc.want)
		}
	}
	if DerivedName(long) == DerivedName(long+"2") {
		t.Errorf("two long names share a derived name")
	}
}

func TestWarnings(t *testing.T) {
	valid := func(s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: "Valid", Status: s, Reason: reason}
	}
	conflict := func(s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: "Conflict", Status: s, Reason: reason}
	}
	for _, tc := range []struct {
		name        string
		before, now []metav1.Condition
		want        []string
	}{
		{"a new export that is not valid warns", nil, []metav1.Condition{valid("False", "NoService")}, []string{"NoService"}},
		{"one that stays not valid for the same reason does not warn again",
			[]metav1.Condition{valid("False", "NoService")}, []metav1.Condition{valid("False", "NoService")}, nil},
		{"another reason warns", []metav1.Condition{valid("False", "NoService")},
			[]metav1.Condition{valid("False", "InvalidServiceType")}, []string{"InvalidServiceType"}},
		{"a conflict warns, its end does not", []metav1.Condition{conflict("False", "NoConflicts")},
			[]metav1.Condition{conflict("True", "PortConflict")}, []string{"PortConflict"}},
		{"a valid export without conflicts is quiet", nil,
			[]metav1.Condition{valid("True", "Valid"), conflict("False", "NoConflicts")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range warnings(tc.before, tc.now) {
				got = append(got, c.Reason)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("warnings %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReady(t *testing.T) {
	for _, tc := range []struct {
		name  string
		o     outcome
		valid bool
		want  string
	}{
		{"an invalid export is not ready although another cluster's is imported",
			outcome{imported: []string{"c1", "c2"}}, false, "False/Failed"},
		{"a valid export imported everywhere is ready", outcome{imported: []string{"c1", "c2"}}, true, "True/Exported"},
		{"a member without the namespace does not hold it back", outcome{imported: []string{"c1"}, noNS: []string{"c2"}}, true, "True/Exported"},
		{"a write that failed leaves it pending", outcome{imported: []string{"c1"}, failed: map[string]error{"c2": errNoNamespace}}, true, "False/Pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.o.ready(tc.valid)
			if got := string(c.Status) + "/" + c.Reason; got != tc.want {
				t.Errorf("Ready %s (%s), want %s", got, c.Message, tc.want)
			}
		})
	}
}
