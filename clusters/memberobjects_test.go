package clusters

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// TestClassify is the member-object rule over a member Service of a
// federated Service's name.
func TestClassify(t *testing.T) {
	service := func(mutate ...func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
		for _, m := range mutate {
			m(s)
		}
		return s
	}
	mark := func(federation, origin, adopted string) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Labels = map[string]string{kfedv1alpha1.LabelFederation: federation}
			s.Annotations = map[string]string{AnnotationOrigin: origin}
			if adopted != "" {
				s.Annotations[AnnotationAdopted] = adopted
			}
		}
	}
	tests := []struct {
		name     string
		existing *corev1.Service
		want     Standing
	}{
		{"no member Service: absent", nil, Absent},
		{"made by kfed for this Service in this federation: ours", service(mark("fed", "ns/web", "")), Ours},
		{"taken over by kfed: adopted", service(mark("fed", "ns/web", "true")), Adopted},
		{"another federation's: conflict", service(mark("other", "ns/web", "")), Conflict},
		{"this federation's, for another Service: conflict", service(mark("fed", "ns/other", "")), Conflict},
		{"nobody's: may be adopted if it matches", service(), Foreign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.existing, "ns/web", "fed"); got != tt.want {
				t.Errorf("Classify = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestMergeMeta: what the user removes from the origin goes from the copy;
// what others put on the copy stays.
func TestMergeMeta(t *testing.T) {
	origin := func(labels, annotations map[string]string) metav1.ObjectMeta {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}}
		Mark(s, "ns/web", "fed")
		Record(s)
		return s.ObjectMeta
	}
	tests := []struct {
		name        string
		cur, want   metav1.ObjectMeta
		changed     bool
		labels      map[string]string // a subset cur must have after
		annotations map[string]string
		gone        []string // keys, label or annotation, cur must lack after
	}{
		{
			name:    "unchanged",
			cur:     origin(map[string]string{"app": "web"}, map[string]string{"team": "shop"}),
			want:    origin(map[string]string{"app": "web"}, map[string]string{"team": "shop"}),
			changed: false,
		},
		{
			name:    "a label and an annotation removed from the origin go",
			cur:     origin(map[string]string{"app": "web", "tier": "front"}, map[string]string{"team": "shop", "note": "x"}),
			want:    origin(map[string]string{"app": "web"}, map[string]string{"team": "shop"}),
			changed: true, labels: map[string]string{"app": "web"}, annotations: map[string]string{"team": "shop"},
			gone: []string{"tier", "note"},
		},
		{
			name: "what another put on the copy stays",
			cur: func() metav1.ObjectMeta {
				m := origin(map[string]string{"app": "web"}, nil)
				m.Labels["mesh"] = "on"
				m.Annotations["cloud/lb"] = "internal"
				return m
			}(),
			want:    origin(nil, nil),
			changed: true, labels: map[string]string{"mesh": "on"}, annotations: map[string]string{"cloud/lb": "internal"},
			gone: []string{"app"},
		},
		{
			name:    "a copy without a record (an older kfed's) loses nothing and gets one",
			cur:     metav1.ObjectMeta{Labels: map[string]string{"tier": "front"}},
			want:    origin(map[string]string{"app": "web"}, nil),
			changed: true, labels: map[string]string{"tier": "front", "app": "web"},
			annotations: map[string]string{AnnotationCopiedLabels: "app,app.kubernetes.io/managed-by,kfed.io/federation"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := *tt.cur.DeepCopy()
			if got := MergeMeta(&cur, tt.want); got != tt.changed {
				t.Errorf("changed = %v, want %v", got, tt.changed)
			}
			for k, v := range tt.labels {
				if cur.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, cur.Labels[k], v)
				}
			}
			for k, v := range tt.annotations {
				if cur.Annotations[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, cur.Annotations[k], v)
				}
			}
			for _, k := range tt.gone {
				if _, ok := cur.Labels[k]; ok {
					t.Errorf("label %s stayed", k)
				}
				if _, ok := cur.Annotations[k]; ok {
					t.Errorf("annotation %s stayed", k)
				}
			}
			if MergeMeta(&cur, tt.want) {
				t.Error("a second merge changed something")
			}
		})
	}
}
