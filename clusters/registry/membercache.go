package registry

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// memberCacheOptions are a member cache's. No object keeps its
// managedFields, which kfed never reads (an update without them keeps the
// server's), so a shard costs its spec and status, not its write history.
// Pods and ReplicaSets, a member's most numerous and largest objects, which
// kfed only reads (the capacity of a Deployment's copy, a Balancer's
// counts), keep only what those read, and pods that ended are not cached
// at all: every reader skips them.
func memberCacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {
				Field: fields.AndSelectors(
					fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
					fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed))),
				Transform: trimPod,
			},
			&appsv1.ReplicaSet{}: {Transform: trimReplicaSet},
		},
	}
}

// trimPod keeps of a pod what kfed reads: its metadata (labels, owner,
// creation and deletion times), the node it is bound to, its phase and
// conditions. Its containers, volumes and container statuses, most of a
// pod's bytes, go.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	p.ManagedFields = nil
	p.Spec = corev1.PodSpec{NodeName: p.Spec.NodeName}
	p.Status = corev1.PodStatus{Phase: p.Status.Phase, Conditions: p.Status.Conditions}
	return p, nil
}

// trimReplicaSet keeps of a ReplicaSet all but its pod template, which
// kfed never reads (it reads the Deployment's).
func trimReplicaSet(obj any) (any, error) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return obj, nil
	}
	rs.ManagedFields = nil
	rs.Spec.Template = corev1.PodTemplateSpec{}
	return rs, nil
}
