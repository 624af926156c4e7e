package manager

import (
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

type countingRecorder struct{ n int }

func (r *countingRecorder) Eventf(_, _ runtime.Object, _, _, _, _ string, _ ...any) { r.n++ }

var _ events.EventRecorder = (*countingRecorder)(nil)

func TestEachEventIsLoggedWithItsObjectAndCluster(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	cluster := &kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster-2"}}
	tests := []struct {
		name    string
		related runtime.Object
		want    []string
	}{
		{"about a member cluster", cluster, []string{`"msg"="endpoint 127.0.0.1 voted down by 2 of 3"`, `"reason"="EndpointUnhealthy"`, `"type"="Warning"`,
			`"kind"="Service"`, `"object"={"name"="web" "namespace"="shop"}`, `"cluster"="cluster-2"`}},
		{"about the object alone", nil, []string{`"reason"="EndpointUnhealthy"`, `"object"={"name"="web" "namespace"="shop"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines []string
			log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
			inner := &countingRecorder{}
			r := loggedRecorder{EventRecorder: inner, log: log}
			r.Eventf(svc, tt.related, corev1.EventTypeWarning, "EndpointUnhealthy", "Reconcile", "endpoint %s voted down by %d of %d", "127.0.0.1", 2, 3)
			if inner.n != 1 {
				t.Fatalf("%d Events recorded, want 1", inner.n)
			}
			if len(lines) != 1 {
				t.Fatalf("%d log lines, want 1: %q", len(lines), lines)
			}
			for _, w := range tt.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("log line %s lacks %s", lines[0], w)
				}
			}
		})
	}
}
