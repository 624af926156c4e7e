package publish

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/clusterreplicas"
	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
)

func tabledDeployment(name string, podLabels map[string]string, table string) appsv1.Deployment {
	d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
	d.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels}}
	if table != "" {
		d.Annotations = map[string]string{clusterreplicas.Annotation: table}
	}
	return d
}

func TestWeightsOf(t *testing.T) {
	web := map[string]string{"app": "web"}
	tests := []struct {
		name     string
		selector map[string]string
		deps     []appsv1.Deployment
		want     string
	}{
		{
			name: "weights are the ready replicas per cluster", selector: web,
			deps: []appsv1.Deployment{tabledDeployment("web", web,
				`{"a":{"planned":16,"ready":16,"reported":true},"b":{"planned":17,"ready":5,"reported":true}}`)},
			want: "map[a:16 b:5]",
		},
		{
			name: "a cluster whose pods are not yet made weighs its plan", selector: web,
			deps: []appsv1.Deployment{tabledDeployment("web", web, `{"a":{"planned":16,"ready":0,"reported":false}}`)},
			want: "map[a:16]",
		},
		{
			name: "no ready replica weighs 0", selector: web,
			deps: []appsv1.Deployment{tabledDeployment("web", web, `{"a":{"planned":16,"ready":0,"reported":true}}`)},
			want: "map[a:0]",
		},
		{
			name: "ready replicas above the plan are capped by it", selector: web,
			deps: []appsv1.Deployment{tabledDeployment("web", web, `{"a":{"planned":3,"ready":8,"reported":true}}`)},
			want: "map[a:3]",
		},
		{
			name: "every selected Deployment adds up", selector: web,
			deps: []appsv1.Deployment{
				tabledDeployment("web-v1", map[string]string{"app": "web", "v": "1"}, `{"a":{"planned":2,"ready":2,"reported":true}}`),
				tabledDeployment("web-v2", map[string]string{"app": "web", "v": "2"}, `{"a":{"planned":3,"ready":3,"reported":true},"b":{"planned":1,"ready":1,"reported":true}}`),
			},
			want: "map[a:5 b:1]",
		},
		{
			name: "a Deployment that is not federated is ignored", selector: web,
			deps: []appsv1.Deployment{tabledDeployment("web", web, "")},
			want: "none",
		},
		{
			name: "a Deployment whose pods the selector does not match is ignored", selector: web,
			deps: []appsv1.Deployment{tabledDeployment("api", map[string]string{"app": "api"}, `{"a":{"planned":2,"ready":2,"reported":true}}`)},
			want: "none",
		},
		{
			name: "a Service without a selector selects nothing", selector: nil,
			deps: []appsv1.Deployment{tabledDeployment("web", web, `{"a":{"planned":2,"ready":2,"reported":true}}`)},
			want: "none",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := WeightsOf([]map[string]string{tt.selector}, tt.deps)
			got := fmt.Sprint(map[string]int(w))
			if w == nil {
				got = "none"
			}
			if got != tt.want {
				t.Errorf("weights %s, want %s", got, tt.want)
			}
		})
	}
}

func TestWeighKeepsDefaultWithoutDeployments(t *testing.T) {
	shards := []dnsendpoint.Cluster{{Name: "a", Weight: 7}, {Name: "b"}}
	Weights(nil).Weigh(shards)
	if shards[0].Weight != 1 || shards[1].Weight != 1 {
		t.Errorf("without federated Deployments weights are %d and %d, want 1", shards[0].Weight, shards[1].Weight)
	}
	Weights{"a": 4}.Weigh(shards)
	if shards[0].Weight != 4 || shards[1].Weight != 0 {
		t.Errorf("weights %d and %d, want 4 and 0 for a cluster running none", shards[0].Weight, shards[1].Weight)
	}
}

// TestWeightsOfSeveralSelectors: the backends of a Gateway or Ingress name
// several Services; each cluster weighs the Deployments any of them
// selects, each Deployment once.
func TestWeightsOfSeveralSelectors(t *testing.T) {
	web, api := map[string]string{"app": "web"}, map[string]string{"app": "api"}
	deps := []appsv1.Deployment{
		tabledDeployment("web", web, `{"a":{"planned":2,"ready":2,"reported":true}}`),
		tabledDeployment("api", api, `{"a":{"planned":1,"ready":1,"reported":true},"b":{"planned":3,"ready":3,"reported":true}}`),
	}
	tests := []struct {
		name      string
		selectors []map[string]string
		want      string
	}{
		{"two backends add up per cluster", []map[string]string{web, api}, "map[a:3 b:3]"},
		{"two backends selecting one Deployment count it once", []map[string]string{web, {"app": "web"}}, "map[a:2]"},
		{"a backend selecting no federated Deployment adds nothing", []map[string]string{web, {"app": "static"}}, "map[a:2]"},
		{"backends selecting none weigh nothing: every cluster keeps the default", []map[string]string{{"app": "static"}, nil}, "nil"},
	}
	for _, tt := range tests {
		w := WeightsOf(tt.selectors, deps)
		got := fmt.Sprint(map[string]int(w))
		if w == nil {
			got = "nil"
		}
		if got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
	if WeightsOf(nil, deps).Of("a") != 1 {
		t.Errorf("without selectors a cluster weighs %d, want the default 1", WeightsOf(nil, deps).Of("a"))
	}
}
