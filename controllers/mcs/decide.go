package mcs

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// Export is what one member holds of an exported name: the ServiceExport,
// the Service beside it and the Service's own EndpointSlices.
type Export struct {
	// Cluster is the member's cluster ID (ClusterID).
	Cluster string
	Export  *mcsv1beta1.ServiceExport
	// Service is nil when the member has none of the export's name.
	Service *corev1.Service
	// Slices are the Service's EndpointSlices in its cluster, as the
	// cluster's own EndpointSlice controller keeps them.
	Slices []discoveryv1.EndpointSlice
}

// Decision is what the exports of one name make: each export's conditions
// and the import every member gets, nil when no export is valid.
type Decision struct {
	// Conditions are the Valid and Conflict conditions of each export, by
	// cluster ID. Ready is the writer's to say (Ready).
	Conditions map[string][]metav1.Condition
	Import     *Import
}

// Import is the ServiceImport a name's valid exports make, the same in
// every member but for its ClusterSetIPs, which each member's derived
// Service gives (ADR 0011).
type Import struct {
	// Spec less IPs and, for ClusterSetIP, IPFamilies: the member's.
	Spec                mcsv1beta1.ServiceImportSpec
	Labels, Annotations map[string]string
	// Clusters export the name validly, sorted.
	Clusters []string
	// Sources are the endpoints of each exporting cluster.
	Sources []Source
}

// Source is one exporting cluster's endpoints.
type Source struct {
	Cluster string
	// Pods are the ready and not ready pod endpoints of its Service, one
	// entry per address type.
	Pods []Endpoints
	// Ingress, for a Service of type LoadBalancer with ingress IPs, is how
	// another cluster reaches it without a flat pod network.
	Ingress []Endpoints
	// Unhealthy is the health checkers' verdict on the cluster's load
	// balancer (as the federation's names take it, failing open): other
	// clusters' slices hold its ingress not ready and not serving.
	Unhealthy bool
}

// Endpoints are addresses of one type sharing ports.
type Endpoints struct {
	AddressType discoveryv1.AddressType
	Ports       []discoveryv1.EndpointPort
	Endpoints   []discoveryv1.Endpoint
}

// Decide resolves the exports of one name as KEP-1645 says: an export
// without a Service, or of an ExternalName Service, is not valid; among
// the valid ones the oldest (by creation time, then cluster ID) wins every
// property that must agree (type, session affinity, traffic policy and
// distribution, exported labels and annotations); ports are merged, the
// oldest export winning a port name or number two exports use differently;
// and every valid export is told of each conflict.
func Decide(exports []Export) Decision {
	d := Decision{Conditions: map[string][]metav1.Condition{}}
	var valid []Export
	for _, e := range exports {
		if e.Export == nil {
			continue
		}
		if c, ok := invalid(e); ok {
			d.Conditions[e.Cluster] = []metav1.Condition{c}
			continue
		}
		valid = append(valid, e)
	}
	if len(valid) == 0 {
		return d
	}
	slices.SortFunc(valid, func(a, b Export) int {
		return cmp.Or(a.Export.CreationTimestamp.Compare(b.Export.CreationTimestamp.Time), cmp.Compare(a.Cluster, b.Cluster))
	})
	winner := valid[0]
	imp := &Import{
		Spec:        importSpec(winner),
		Labels:      maps.Clone(winner.Export.Spec.ExportedLabels),
		Annotations: maps.Clone(winner.Export.Spec.ExportedAnnotations),
	}
	var ports []mcsv1beta1.ServicePort
	for _, e := range valid {
		ports = mergePorts(ports, e.Service.Spec.Ports)
		imp.Clusters = append(imp.Clusters, e.Cluster)
		imp.Sources = append(imp.Sources, sourceOf(e))
	}
	imp.Spec.Ports = ports
	slices.Sort(imp.Clusters)
	slices.SortFunc(imp.Sources, func(a, b Source) int { return cmp.Compare(a.Cluster, b.Cluster) })
	d.Import = imp

	conflict := conflictCondition(valid)
	for _, e := range valid {
		d.Conditions[e.Cluster] = []metav1.Condition{
			{Type: string(mcsv1beta1.ServiceExportConditionValid), Status: metav1.ConditionTrue,
				Reason: string(mcsv1beta1.ServiceExportReasonValid), Message: "the Service is exported"},
			conflict,
		}
	}
	return d
}

// invalid is the Valid condition of an export that cannot be exported.
func invalid(e Export) (metav1.Condition, bool) {
	c := metav1.Condition{Type: string(mcsv1beta1.ServiceExportConditionValid), Status: metav1.ConditionFalse}
	switch {
	case e.Service == nil:
		c.Reason = string(mcsv1beta1.ServiceExportReasonNoService)
		c.Message = fmt.Sprintf("there is no Service %s in this cluster", e.Export.Name)
	case e.Service.Spec.Type == corev1.ServiceTypeExternalName:
		c.Reason = string(mcsv1beta1.ServiceExportReasonInvalidServiceType)
		c.Message = "a Service of type ExternalName cannot be exported"
	default:
		return metav1.Condition{}, false
	}
	return c, true
}

func headless(s *corev1.Service) bool { return s.Spec.ClusterIP == corev1.ClusterIPNone }

// importSpec is the import's spec as the winning export says, without its
// ports.
func importSpec(e Export) mcsv1beta1.ServiceImportSpec {
	s := e.Service.Spec
	spec := mcsv1beta1.ServiceImportSpec{
		Type:                  mcsv1beta1.ClusterSetIP,
		SessionAffinity:       s.SessionAffinity,
		SessionAffinityConfig: s.SessionAffinityConfig.DeepCopy(),
		InternalTrafficPolicy: s.InternalTrafficPolicy,
		TrafficDistribution:   s.TrafficDistribution,
	}
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if headless(e.Service) {
		// A headless import has no ClusterSetIP: its families are the
		// exported Service's.
		spec.Type = mcsv1beta1.Headless
		spec.IPFamilies = slices.Clone(s.IPFamilies)
	}
	return spec
}

// mergePorts adds to have the ports of a younger export whose name, and
// whose number and protocol, no port of have uses.
func mergePorts(have []mcsv1beta1.ServicePort, ports []corev1.ServicePort) []mcsv1beta1.ServicePort {
	for _, p := range ports {
		if slices.ContainsFunc(have, func(h mcsv1beta1.ServicePort) bool {
			return h.Name == p.Name || (h.Port == p.Port && h.Protocol == p.Protocol)
		}) {
			continue
		}
		have = append(have, mcsv1beta1.ServicePort{Name: p.Name, Protocol: p.Protocol, AppProtocol: p.AppProtocol, Port: p.Port})
	}
	return have
}

// conflictCondition is the Conflict condition every valid export gets:
// the properties on which some export differs from the oldest, which wins.
func conflictCondition(valid []Export) metav1.Condition {
	w := valid[0]
	checks := []struct {
		reason mcsv1beta1.ServiceExportConditionReason
		differ func(Export) bool
	}{
		{mcsv1beta1.ServiceExportReasonTypeConflict, func(e Export) bool { return headless(e.Service) != headless(w.Service) }},
		{mcsv1beta1.ServiceExportReasonPortConflict, func(e Export) bool { return !samePorts(e.Service.Spec.Ports, w.Service.Spec.Ports) }},
		{mcsv1beta1.ServiceExportReasonSessionAffinityConflict, func(e Export) bool {
			return cmp.Or(e.Service.Spec.SessionAffinity, corev1.ServiceAffinityNone) != cmp.Or(w.Service.Spec.SessionAffinity, corev1.ServiceAffinityNone)
		}},
		{mcsv1beta1.ServiceExportReasonSessionAffinityConfigConflict, func(e Export) bool {
			return !reflect.DeepEqual(e.Service.Spec.SessionAffinityConfig, w.Service.Spec.SessionAffinityConfig)
		}},
		{mcsv1beta1.ServiceExportReasonInternalTrafficPolicyConflict, func(e Export) bool {
			return !reflect.DeepEqual(e.Service.Spec.InternalTrafficPolicy, w.Service.Spec.InternalTrafficPolicy)
		}},
		{mcsv1beta1.ServiceExportReasonTrafficDistributionConflict, func(e Export) bool {
			return !reflect.DeepEqual(e.Service.Spec.TrafficDistribution, w.Service.Spec.TrafficDistribution)
		}},
		{mcsv1beta1.ServiceExportReasonLabelsConflict, func(e Export) bool {
			return !maps.Equal(e.Export.Spec.ExportedLabels, w.Export.Spec.ExportedLabels)
		}},
		{mcsv1beta1.ServiceExportReasonAnnotationsConflict, func(e Export) bool {
			return !maps.Equal(e.Export.Spec.ExportedAnnotations, w.Export.Spec.ExportedAnnotations)
		}},
	}
	var reasons, what []string
	for _, c := range checks {
		var clusters []string
		for _, e := range valid[1:] {
			if c.differ(e) {
				clusters = append(clusters, e.Cluster)
			}
		}
		if len(clusters) > 0 {
			reasons = append(reasons, string(c.reason))
			what = append(what, fmt.Sprintf("%s (%s)", strings.TrimSuffix(string(c.reason), "Conflict"), strings.Join(clusters, ", ")))
		}
	}
	if len(reasons) == 0 {
		return metav1.Condition{Type: string(mcsv1beta1.ServiceExportConditionConflict), Status: metav1.ConditionFalse,
			Reason: string(mcsv1beta1.ServiceExportReasonNoConflicts), Message: "every export of the name agrees"}
	}
	return metav1.Condition{Type: string(mcsv1beta1.ServiceExportConditionConflict), Status: metav1.ConditionTrue,
		Reason: strings.Join(reasons, ","),
		Message: fmt.Sprintf("exports differ from the oldest, cluster %s's, which wins: %s (ports are merged)",
			w.Cluster, strings.Join(what, "; "))}
}

// samePorts reports whether two Services expose the same ports, in any order.
func samePorts(a, b []corev1.ServicePort) bool {
	key := func(p corev1.ServicePort) string {
		return fmt.Sprintf("%s/%s/%d/%s", p.Name, p.Protocol, p.Port, ptrString(p.AppProtocol))
	}
	ka, kb := make([]string, 0, len(a)), make([]string, 0, len(b))
	for _, p := range a {
		ka = append(ka, key(p))
	}
	for _, p := range b {
		kb = append(kb, key(p))
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// sourceOf is the endpoints e's cluster offers: its Service's pods, merged
// per address type, and its load balancer's ingress IPs.
func sourceOf(e Export) Source {
	src := Source{Cluster: e.Cluster}
	byType := map[discoveryv1.AddressType]int{}
	for _, s := range e.Slices {
		if s.AddressType == discoveryv1.AddressTypeFQDN {
			continue
		}
		i, ok := byType[s.AddressType]
		if !ok {
			i = len(src.Pods)
			byType[s.AddressType] = i
			src.Pods = append(src.Pods, Endpoints{AddressType: s.AddressType, Ports: slices.Clone(s.Ports)})
		}
		for _, ep := range s.Endpoints {
			// The pod, its node and hints belong to the source cluster:
			// only what another cluster can use is copied.
			src.Pods[i].Endpoints = append(src.Pods[i].Endpoints, discoveryv1.Endpoint{
				Addresses: slices.Clone(ep.Addresses), Conditions: ep.Conditions, Hostname: ep.Hostname, Zone: ep.Zone,
			})
		}
	}
	slices.SortFunc(src.Pods, func(a, b Endpoints) int { return cmp.Compare(a.AddressType, b.AddressType) })
	for i := range src.Pods {
		slices.SortFunc(src.Pods[i].Endpoints, func(a, b discoveryv1.Endpoint) int {
			return cmp.Compare(strings.Join(a.Addresses, ","), strings.Join(b.Addresses, ","))
		})
	}
	src.Ingress = ingress(e.Service)
	return src
}

// ingress is the load balancer ingress IPs of a LoadBalancer Service, with
// the Service's ports: a load balancer listens on those.
func ingress(s *corev1.Service) []Endpoints {
	if s.Spec.Type != corev1.ServiceTypeLoadBalancer || headless(s) {
		return nil
	}
	var ports []discoveryv1.EndpointPort
	for _, p := range s.Spec.Ports {
		ports = append(ports, discoveryv1.EndpointPort{Name: &p.Name, Protocol: &p.Protocol, Port: &p.Port, AppProtocol: p.AppProtocol})
	}
	ready := true
	var out []Endpoints
	for _, in := range s.Status.LoadBalancer.Ingress {
		if !endpointIP(in.IP) {
			continue
		}
		t := discoveryv1.AddressTypeIPv4
		if strings.Contains(in.IP, ":") {
			t = discoveryv1.AddressTypeIPv6
		}
		i := slices.IndexFunc(out, func(e Endpoints) bool { return e.AddressType == t })
		if i < 0 {
			i = len(out)
			out = append(out, Endpoints{AddressType: t, Ports: ports})
		}
		out[i].Endpoints = append(out[i].Endpoints, discoveryv1.Endpoint{
			Addresses: []string{in.IP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		})
	}
	return out
}

// endpointIP reports whether an EndpointSlice may hold ip: the API server
// refuses an unspecified, loopback or link-local address, and one would
// fail the whole import (a loopback load balancer, as kfed dev up's, is
// reached from no other cluster anyway).
func endpointIP(ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && !a.IsUnspecified() && !a.IsLoopback() && !a.IsLinkLocalUnicast() && !a.IsLinkLocalMulticast()
}

// EndpointsIn are the endpoints cluster (a member's cluster ID) routes to
// for one source cluster: its own pods; another cluster's load balancer
// when the import has a ClusterSetIP and that cluster's Service has one,
// as clusters reach each other through load balancers; else the other
// cluster's pods, which a flat pod network (Submariner, Cilium cluster
// mesh) reaches, as headless imports always need (ADR 0011).
//
// A load balancer the checkers find down is written not ready and not
// serving, so kube-proxy routes around it.
func (imp *Import) EndpointsIn(cluster string, s Source) []Endpoints {
	if s.Cluster == cluster || imp.Spec.Type == mcsv1beta1.Headless || len(s.Ingress) == 0 {
		return s.Pods
	}
	if !s.Unhealthy {
		return s.Ingress
	}
	out := make([]Endpoints, len(s.Ingress))
	for i, eps := range s.Ingress {
		out[i] = Endpoints{AddressType: eps.AddressType, Ports: eps.Ports}
		for _, ep := range eps.Endpoints {
			ep.Conditions = discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(false), Terminating: ptr.To(false)}
			out[i].Endpoints = append(out[i].Endpoints, ep)
		}
	}
	return out
}

// setConditions sets want on have, keeping each unchanged condition's
// transition time, and reports whether have changed.
func setConditions(have *[]metav1.Condition, want []metav1.Condition, generation int64) bool {
	before := slices.Clone(*have)
	for _, c := range want {
		c.ObservedGeneration = generation
		meta.SetStatusCondition(have, c)
	}
	return !conditionsEqual(before, *have)
}

func conditionsEqual(a, b []metav1.Condition) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.Condition) bool {
		return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message &&
			x.ObservedGeneration == y.ObservedGeneration
	})
}
