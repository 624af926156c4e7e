package services

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/clusters/copies"
)

// matches reports whether an existing Service that kfed did not create is
// close enough to the federated one to be taken over: a load balancer with
// the same selector and the same ports.
func matches(existing, svc *corev1.Service) bool {
	if existing.Spec.Type != corev1.ServiceTypeLoadBalancer || !maps.Equal(existing.Spec.Selector, svc.Spec.Selector) {
		return false
	}
	key := func(ps []corev1.ServicePort) []string {
		var out []string
		for _, p := range ps {
			out = append(out, string(p.Protocol)+"/"+p.Name+"/"+strconv.Itoa(int(p.Port)))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(existing.Spec.Ports), key(svc.Spec.Ports))
}

// desiredCopy is the member copy of svc: the same spec less what each
// cluster allocates for itself (cluster IPs, node ports) and the class that
// kept cloud controllers off the original, as a LoadBalancer so that each
// member gives it an external address.
func desiredCopy(svc *corev1.Service, federation string) *corev1.Service {
	shard := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:        svc.Name,
			Namespace:   svc.Namespace,
			Labels:      map[string]string{},
			Annotations: map[string]string{},
		},
	}
	for k, v := range svc.Labels {
		shard.Labels[k] = v
	}
	for k, v := range svc.Annotations {
		if strings.HasPrefix(k, "kfed.io/") || k == corev1.LastAppliedConfigAnnotation {
			continue
		}
		shard.Annotations[k] = v
	}
	copies.Mark(shard, svc.Namespace+"/"+svc.Name, federation)

	spec := svc.Spec.DeepCopy()
	spec.Type = corev1.ServiceTypeLoadBalancer
	spec.ClusterIP, spec.ClusterIPs = "", nil
	spec.IPFamilies = nil
	spec.LoadBalancerClass = nil
	spec.HealthCheckNodePort = 0
	spec.ExternalName = ""
	for i := range spec.Ports {
		spec.Ports[i].NodePort = 0
	}
	shard.Spec = *spec
	return shard
}
