package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kfed-io/kfed/ops/drain"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func TestDrainPrintSaysWhereAndForHowLong(t *testing.T) {
	var b bytes.Buffer
	s := drain.State{Objects: []string{"default/demo", "default/solo"}, Kept: []string{"default/solo"}, Providers: []string{"rfc2136", "route53"}, TTL: 30}
	if err := printDrain(&b, s, "cluster-1", true, 2300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"drain of cluster-1 in every DNSEndpoint, which every member's CoreDNS watches, and published to rfc2136, route53, in 2.3s: 2 object(s)",
		"kept in cluster-1, as no other cluster can answer them: default/solo", "resolvers may still answer with cluster-1 for up to 30s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output\n%s\nlacks %q", b.String(), want)
		}
	}
}

func TestStatusShowsSinceWhenAMemberIsDrained(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC))
	members := []kfedv1alpha1.Cluster{
		{ObjectMeta: metav1.ObjectMeta{Name: "cluster-1"}, Spec: kfedv1alpha1.ClusterSpec{Region: "us-east1", Drained: true},
			Status: kfedv1alpha1.ClusterStatus{Conditions: []metav1.Condition{{Type: kfedv1alpha1.ClusterDrained, Status: metav1.ConditionTrue, LastTransitionTime: since}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "cluster-2"}, Spec: kfedv1alpha1.ClusterSpec{Region: "us-east1", Drained: true}},
		{ObjectMeta: metav1.ObjectMeta{Name: "cluster-3"}, Spec: kfedv1alpha1.ClusterSpec{Region: "europe-west1"}},
	}
	var b bytes.Buffer
	if err := printMembers(&b, members, palette{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for i, want := range []string{"DRAINED", "since 2026-11-27T14:00:00Z", "yes", "-"} {
		if i >= len(lines) || !strings.HasSuffix(strings.TrimSpace(lines[i]), want) {
			t.Errorf("line %d of\n%s\ndoes not end in %q", i, b.String(), want)
		}
	}
}
