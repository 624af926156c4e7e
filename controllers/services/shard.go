package services

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/clusters/registry"
)

// copyAction is what decideCopies says to do with one Ready member's
// shard.
type copyAction struct {
	read memberRead
	// placed is false for a member the Service is no longer placed in: the
	// shard kfed made there goes, one it adopted is let go.
	placed bool
	// want is the shard to write; nil to write none.
	want *corev1.Service
	// adopt is true when want takes over a matching Service kfed did not
	// make.
	adopt bool
	// problem says why a shard is left alone.
	problem *problem
}

// decideCopies says, for each Ready member, what its shard should be: the
// member copy of svc (desiredCopy) where it is placed and kfed may write
// it — its own, one it adopted, or a matching Service it adopts now — and
// nothing where another federation's or Service's, or a differing Service
// kfed did not make, holds the name.
func decideCopies(svc *corev1.Service, federation string, o observation) []copyAction {
	origin := o.key.String()
	out := make([]copyAction, 0, len(o.copies))
	for _, r := range o.copies {
		a := copyAction{read: r, placed: o.placed[r.member.Name]}
		name := r.member.Name
		switch {
		case !a.placed, r.err != nil:
		case r.standing == copies.Conflict:
			a.problem = &problem{name, reasonShardConflict, fmt.Sprintf("cluster %s has a Service %s that another federation or Service manages; left alone", name, origin)}
		case r.standing == copies.Foreign && !r.matches:
			a.problem = &problem{name, reasonShardConflict, fmt.Sprintf("cluster %s already has a Service %s that kfed did not create and that differs (type, selector or ports); left alone", name, origin)}
		default:
			a.want = desiredCopy(svc, federation)
			if r.standing == copies.Foreign || r.standing == copies.Adopted {
				a.want.Annotations[kfedv1alpha1.AnnotationAdopted] = "true"
				a.adopt = r.standing == copies.Foreign
			}
		}
		out = append(out, a)
	}
	return out
}

// removeCopies says to take kfed's shards out of every member of ready: the
// actions of a Service that is gone or no longer federated.
func removeCopies(ready []registry.Member) []copyAction {
	out := make([]copyAction, len(ready))
	for i, m := range ready {
		out[i] = copyAction{read: memberRead{member: m}}
	}
	return out
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
