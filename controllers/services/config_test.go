package services

import (
	"strings"
	"testing"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseConfig(t *testing.T) {
	svc := func(annotations map[string]string, mutate ...func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: annotations},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
		}
		for _, m := range mutate {
			m(s)
		}
		return s
	}
	tests := []struct {
		name     string
		svc      *corev1.Service
		ttl      int64
		clusters []string
		errHas   []string
	}{
		{name: "no annotations takes defaults", svc: svc(nil), ttl: publish.DefaultTTL},
		{name: "ttl annotation sets the TTL", svc: svc(map[string]string{kfedv1alpha1.AnnotationTTL: "120"}), ttl: 120},
		{name: "clusters annotation lists names, trimmed and deduplicated",
			svc: svc(map[string]string{kfedv1alpha1.AnnotationClusters: " c1, c2 ,c1"}), ttl: publish.DefaultTTL, clusters: []string{"c1", "c2"}},
		{name: "malformed ttl is refused with the value", svc: svc(map[string]string{kfedv1alpha1.AnnotationTTL: "30s"}),
			errHas: []string{`kfed.io/ttl="30s": not a whole number`}},
		{name: "ttl of zero is refused", svc: svc(map[string]string{kfedv1alpha1.AnnotationTTL: "0"}),
			errHas: []string{"between 1 and 604800"}},
		{name: "clusters annotation naming nothing is refused", svc: svc(map[string]string{kfedv1alpha1.AnnotationClusters: " , "}),
			errHas: []string{"names no cluster"}},
		{name: "cluster name that is not a DNS label is refused", svc: svc(map[string]string{kfedv1alpha1.AnnotationClusters: "Cluster_1"}),
			errHas: []string{`"Cluster_1" is not a cluster name`}},
		{name: "malformed selector is refused", svc: svc(map[string]string{kfedv1alpha1.AnnotationClusterSelector: "region in (a"}),
			errHas: []string{"kfed.io/cluster-selector"}},
		{name: "ExternalName cannot be federated",
			svc:    svc(nil, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }),
			errHas: []string{"ExternalName"}},
		{name: "headless cannot be federated yet",
			svc:    svc(nil, func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }),
			errHas: []string{"headless"}},
		{name: "health annotations are checked", svc: svc(map[string]string{"kfed.io/health-check": "http", "kfed.io/health-path": "/healthz"}), ttl: publish.DefaultTTL},
		{name: "malformed health interval is refused with the value", svc: svc(map[string]string{"kfed.io/health-interval": "often"}),
			errHas: []string{`kfed.io/health-interval="often"`}},
		{name: "unknown health check kind is refused", svc: svc(map[string]string{"kfed.io/health-check": "icmp"}),
			errHas: []string{`kfed.io/health-check="icmp"`}},
		{name: "every problem is reported at once",
			svc:    svc(map[string]string{kfedv1alpha1.AnnotationTTL: "x", kfedv1alpha1.AnnotationClusterSelector: "=="}),
			errHas: []string{"kfed.io/ttl", "kfed.io/cluster-selector"}},
		{name: "spec and annotation problems are reported together",
			svc:    svc(map[string]string{kfedv1alpha1.AnnotationTTL: "0"}, func(s *corev1.Service) { s.Spec.Ports = nil }),
			errHas: []string{"no ports", "kfed.io/ttl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseConfig(tt.svc)
			if len(tt.errHas) > 0 {
				if err == nil {
					t.Fatal("no error")
				}
				for _, want := range tt.errHas {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.TTL != tt.ttl || strings.Join(cfg.Placement.Names, ",") != strings.Join(tt.clusters, ",") {
				t.Errorf("got ttl %d clusters %v, want %d %v", cfg.TTL, cfg.Placement.Names, tt.ttl, tt.clusters)
			}
		})
	}
}
