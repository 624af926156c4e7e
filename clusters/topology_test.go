package clusters

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTopology(t *testing.T) {
	node := func(region, zone string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}}
		if region != "" {
			n.Labels[corev1.LabelTopologyRegion] = region
		}
		if zone != "" {
			n.Labels[corev1.LabelTopologyZone] = zone
		}
		return n
	}
	tests := []struct {
		name  string
		nodes []corev1.Node
		want  string
	}{
		{"nodes in two zones of one region", []corev1.Node{node("us-east1", "us-east1-c"), node("us-east1", "us-east1-b"), node("us-east1", "us-east1-c")}, "us-east1 [us-east1-b us-east1-c]"},
		{"the most common region wins", []corev1.Node{node("a", "a-1"), node("b", "b-1"), node("b", "b-2")}, "b [a-1 b-1 b-2]"},
		{"a tie goes to the first region by name", []corev1.Node{node("b", ""), node("a", "")}, "a []"},
		{"nodes without labels count for nothing", []corev1.Node{node("", ""), node("r", "z")}, "r [z]"},
		{"no nodes", nil, " []"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			region, zones := Topology(tt.nodes)
			if got := fmt.Sprintf("%s %v", region, zones); got != tt.want {
				t.Errorf("Topology = %q, want %q", got, tt.want)
			}
		})
	}
}
