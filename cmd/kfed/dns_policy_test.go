package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/failover"
	"github.com/kfed-io/kfed/gateways"
)

func TestPlanNamesPolicyAndOwner(t *testing.T) {
	ep := func(annotations map[string]string) *extdnsv1alpha1.DNSEndpoint {
		return &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", Annotations: annotations}}
	}
	tests := []struct {
		name          string
		ep            *extdnsv1alpha1.DNSEndpoint
		policy, owner string
	}{
		{"a Service routed by weight", ep(nil), "weighted", "default/db"},
		{"by proximity", ep(map[string]string{dnsendpoint.AnnotationRouting: dnsendpoint.RoutingProximity}), "proximity", "default/db"},
		{"by failover, serving a place", ep(map[string]string{dnsendpoint.AnnotationFailover: failover.State{Active: "europe-west1"}.Encode()}),
			"failover: europe-west1", "default/db"},
		{"by failover, no place up", ep(map[string]string{dnsendpoint.AnnotationFailover: failover.State{}.Encode()}),
			"failover (no place up: all)", "default/db"},
		{"a Gateway's names", ep(map[string]string{gateways.AnnotationOrigin: "Gateway shop/front"}), "weighted", "Gateway shop/front"},
	}
	for _, tt := range tests {
		if got := policy(tt.ep); got != tt.policy {
			t.Errorf("%s: policy %q, want %q", tt.name, got, tt.policy)
		}
		if got := owner(tt.ep); got != tt.owner {
			t.Errorf("%s: owner %q, want %q", tt.name, got, tt.owner)
		}
	}
}
