package copies

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func TestOrigin(t *testing.T) {
	obj := func(federation, origin string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{kfedv1alpha1.LabelFederation: federation}, Annotations: map[string]string{kfedv1alpha1.AnnotationOrigin: origin},
		}}
	}
	if key, ok := Origin(obj("fed", "shop/web"), "fed"); !ok || key.String() != "shop/web" {
		t.Errorf("Origin = %v, %v; want shop/web", key, ok)
	}
	for _, o := range []*corev1.Service{obj("other", "shop/web"), obj("fed", ""), obj("fed", "no-slash")} {
		if _, ok := Origin(o, "fed"); ok {
			t.Errorf("Origin of %v/%v is not this federation's", o.Labels, o.Annotations)
		}
	}
}
