package mcs

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// The objects kfed writes in members for an import.
const (
	// ManagedBy is the endpointslice.kubernetes.io/managed-by of the
	// EndpointSlices kfed writes, as the MCS API asks: not the cluster's own
	// EndpointSlice controller.
	ManagedBy = "mcs-controller.kfed.io"
	// derivedPrefix begins the name of an import's derived Service.
	derivedPrefix = "kfed-mcs-"
)

// DerivedName is the name of the selectorless Service that holds a
// ClusterSetIP import's IPs in each member (ADR 0011): kfed-mcs-NAME, or,
// past a Service name's 63 characters, a cut of it and a hash of the name.
func DerivedName(name string) string {
	if len(derivedPrefix)+len(name) <= 63 {
		return derivedPrefix + name
	}
	sum := sha256.Sum256([]byte(name))
	return derivedPrefix + strings.TrimRight(name[:63-len(derivedPrefix)-11], "-") + "-" + hex.EncodeToString(sum[:])[:10]
}

// marks labels an object kfed writes for an import: kfed's, of federation,
// for the name.
func marks(federation, name string) map[string]string {
	return map[string]string{
		kfedv1alpha1.LabelManagedBy:  kfedv1alpha1.ManagedBy,
		kfedv1alpha1.LabelFederation: federation,
		mcsv1beta1.LabelServiceName:  name,
	}
}

// isOurs reports whether a member object is one kfed wrote for an import.
func isOurs(obj metav1.Object) bool {
	l := obj.GetLabels()
	return l[kfedv1alpha1.LabelManagedBy] == kfedv1alpha1.ManagedBy && l[mcsv1beta1.LabelServiceName] != ""
}

// derivedService is the selectorless Service whose cluster IPs are the
// import's ClusterSetIPs in a member: kube-proxy routes it to the
// EndpointSlices kfed writes, which carry its name.
func derivedService(federation string, key types.NamespacedName, imp *Import) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: DerivedName(key.Name), Labels: marks(federation, key.Name)},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP,
			// The member's own families: an IPv4 cluster gets an IPv4
			// ClusterSetIP, a dual-stack one both.
			IPFamilyPolicy:        ptr.To(corev1.IPFamilyPolicyPreferDualStack),
			SessionAffinity:       imp.Spec.SessionAffinity,
			SessionAffinityConfig: imp.Spec.SessionAffinityConfig.DeepCopy(),
			InternalTrafficPolicy: imp.Spec.InternalTrafficPolicy,
			TrafficDistribution:   imp.Spec.TrafficDistribution,
		},
	}
	for _, p := range imp.Spec.Ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, AppProtocol: p.AppProtocol, Port: p.Port})
	}
	return svc
}

// serviceImport is the import as written in a member; ips and families are
// the member's derived Service's, for a ClusterSetIP import.
func serviceImport(federation string, key types.NamespacedName, imp *Import, ips []string, families []corev1.IPFamily) *mcsv1beta1.ServiceImport {
	labels := marks(federation, key.Name)
	for k, v := range imp.Labels {
		if _, ours := labels[k]; !ours {
			labels[k] = v
		}
	}
	si := &mcsv1beta1.ServiceImport{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: labels, Annotations: maps.Clone(imp.Annotations)},
		Spec:       *imp.Spec.DeepCopy(),
	}
	if si.Spec.Type == mcsv1beta1.ClusterSetIP {
		si.Spec.IPs, si.Spec.IPFamilies = ips, families
	}
	for _, c := range imp.Clusters {
		si.Status.Clusters = append(si.Status.Clusters, mcsv1beta1.ClusterStatus{Cluster: c})
	}
	return si
}

// endpointSlices are the EndpointSlices of an import in cluster (a
// member's cluster ID): one per exporting cluster and address type, owned
// by the import so that they go with it. A ClusterSetIP import's also
// carry its derived Service's name, which kube-proxy routes by.
func endpointSlices(federation string, key types.NamespacedName, imp *Import, cluster string, owner *mcsv1beta1.ServiceImport) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, src := range imp.Sources {
		for _, eps := range imp.EndpointsIn(cluster, src) {
			labels := marks(federation, key.Name)
			labels[mcsv1beta1.LabelSourceCluster] = src.Cluster
			labels[discoveryv1.LabelManagedBy] = ManagedBy
			if imp.Spec.Type == mcsv1beta1.ClusterSetIP {
				labels[discoveryv1.LabelServiceName] = DerivedName(key.Name)
			}
			s := &discoveryv1.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: key.Namespace, Name: sliceName(key.Name, src.Cluster, eps.AddressType), Labels: labels,
				},
				AddressType: eps.AddressType,
				// Never null: the API requires the list, empty or not.
				Endpoints: append([]discoveryv1.Endpoint{}, eps.Endpoints...),
				Ports:     eps.Ports,
			}
			if owner != nil && owner.UID != "" {
				s.OwnerReferences = []metav1.OwnerReference{{
					APIVersion: mcsv1beta1.GroupVersion.String(), Kind: "ServiceImport", Name: owner.Name, UID: owner.UID,
				}}
			}
			out = append(out, s)
		}
	}
	return out
}

// sliceName is NAME-CLUSTER-ipv4 (or ipv6): one slice per source and type.
func sliceName(name, cluster string, t discoveryv1.AddressType) string {
	return name + "-" + cluster + "-" + strings.ToLower(string(t))
}
