package publish

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/policy/failover"
)

func TestFailoverServesTheFirstPlaceUpAndKeepsThePublishedState(t *testing.T) {
	now := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	rows := func(downs ...string) []dnsendpoint.Cluster {
		out := []dnsendpoint.Cluster{{Name: "c1", Region: "us-east1", Weight: 1}, {Name: "c2", Region: "europe-west1", Weight: 1}}
		for i := range out {
			out[i].Unhealthy = slices.Contains(downs, out[i].Name)
		}
		return out
	}
	published := func(s failover.State) *extdnsv1alpha1.DNSEndpoint {
		return &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{dnsendpoint.AnnotationFailover: s.Encode()}}}
	}
	policy := failover.Policy{Order: []string{"us-east1", "europe-west1"}, Hold: time.Minute}
	tests := []struct {
		name       string
		rows       []dnsendpoint.Cluster
		drainedOut []string
		published  *extdnsv1alpha1.DNSEndpoint
		active     string
		prev       string
	}{
		{"the first place of the order serves", rows(), nil, nil, "us-east1", ""},
		{"a place found down does not", rows("c1"), nil, nil, "europe-west1", ""},
		{"a drained place does not", rows(), []string{"c1"}, nil, "europe-west1", ""},
		{"the published state is where it starts: a failback waits out its hold", rows(),
			nil, published(failover.State{Active: "europe-west1", Since: now.Add(-time.Hour)}), "europe-west1", "europe-west1"},
		{"a state kfed did not write reads as none", rows(), nil,
			&extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{dnsendpoint.AnnotationFailover: "{not json"}}}, "us-east1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, prev := failoverOf(policy, tt.rows, tt.drainedOut, tt.published, now)
			if d.State.Active != tt.active || prev.Active != tt.prev {
				t.Errorf("active %q from %q, want %q from %q (%s)", d.State.Active, prev.Active, tt.active, tt.prev, d.Message)
			}
		})
	}
}
