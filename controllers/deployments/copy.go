package deployments

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/copies"
)

// desiredCopy is the member copy of d with replicas: the same spec, the
// same labels and annotations less kfed's own, and kfed's marks.
func desiredCopy(d *appsv1.Deployment, federation string, replicas int32) *appsv1.Deployment {
	c := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:        d.Name,
			Namespace:   d.Namespace,
			Labels:      map[string]string{},
			Annotations: map[string]string{},
		},
		Spec: *d.Spec.DeepCopy(),
	}
	maps.Copy(c.Labels, d.Labels)
	for k, v := range d.Annotations {
		if strings.HasPrefix(k, "kfed.io/") || k == corev1.LastAppliedConfigAnnotation ||
			k == "deployment.kubernetes.io/revision" {
			continue
		}
		c.Annotations[k] = v
	}
	copies.Mark(c, d.Namespace+"/"+d.Name, federation)
	c.Annotations[kfedv1alpha1.AnnotationSpecHash] = specHash(c)
	c.Spec.Replicas = &replicas
	return c
}

// specHash hashes what kfed sets on a copy, but spec.replicas.
func specHash(c *appsv1.Deployment) string {
	spec := c.Spec.DeepCopy()
	spec.Replicas = nil
	b, _ := json.Marshal(struct {
		Labels, Annotations map[string]string
		Spec                *appsv1.DeploymentSpec
	}{c.Labels, withoutHash(c.Annotations), spec})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func withoutHash(a map[string]string) map[string]string {
	out := maps.Clone(a)
	delete(out, kfedv1alpha1.AnnotationSpecHash)
	return out
}

// current reports whether copy c runs the spec hash names: it carries the
// hash and its Deployment controller has seen its latest generation.
func current(c *appsv1.Deployment, hash string) bool {
	return c.Annotations[kfedv1alpha1.AnnotationSpecHash] == hash && c.Status.ObservedGeneration >= c.Generation
}
