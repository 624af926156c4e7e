package serviceconfig

import (
	"slices"
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/policy/failover"
)

func TestParseRouting(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		routing     Routing
		order       []string
		pin         string
		hold        time.Duration
		errHas      string
	}{
		{"weighted by default", nil, RoutingWeighted, nil, "", failover.DefaultHold, ""},
		{"proximity", map[string]string{kfedv1alpha1.AnnotationRouting: "proximity"}, RoutingProximity, nil, "", failover.DefaultHold, ""},
		{"failover with its order, a hold and a pin",
			map[string]string{kfedv1alpha1.AnnotationRouting: "failover", kfedv1alpha1.AnnotationFailoverOrder: "europe-west1, us-east1,cluster-9", kfedv1alpha1.AnnotationFailbackHold: "2m", kfedv1alpha1.AnnotationFailoverPin: "us-east1"},
			RoutingFailover, []string{"europe-west1", "us-east1", "cluster-9"}, "us-east1", 2 * time.Minute, ""},
		{"an unknown routing", map[string]string{kfedv1alpha1.AnnotationRouting: "random"}, RoutingWeighted, nil, "", failover.DefaultHold, "want weighted, proximity or failover"},
		{"failover without an order", map[string]string{kfedv1alpha1.AnnotationRouting: "failover"}, RoutingFailover, nil, "", failover.DefaultHold, "failover needs kfed.io/failover-order"},
		{"an order without failover", map[string]string{kfedv1alpha1.AnnotationFailoverOrder: "us-east1"}, RoutingWeighted, []string{"us-east1"}, "", failover.DefaultHold, "applies only with kfed.io/routing: failover"},
		{"a place listed twice", map[string]string{kfedv1alpha1.AnnotationRouting: "failover", kfedv1alpha1.AnnotationFailoverOrder: "a,b,a"}, RoutingFailover, []string{"a", "b"}, "", failover.DefaultHold, `"a" is listed twice`},
		{"a place that is no name", map[string]string{kfedv1alpha1.AnnotationRouting: "failover", kfedv1alpha1.AnnotationFailoverOrder: "a,B_c"}, RoutingFailover, []string{"a"}, "", failover.DefaultHold, `"B_c" is not a region, zone or cluster name`},
		{"a hold that is no duration", map[string]string{kfedv1alpha1.AnnotationRouting: "failover", kfedv1alpha1.AnnotationFailoverOrder: "a", kfedv1alpha1.AnnotationFailbackHold: "soon"}, RoutingFailover, []string{"a"}, "", failover.DefaultHold, "want a duration"},
		{"a pin outside the order", map[string]string{kfedv1alpha1.AnnotationRouting: "failover", kfedv1alpha1.AnnotationFailoverOrder: "a,b", kfedv1alpha1.AnnotationFailoverPin: "c"}, RoutingFailover, []string{"a", "b"}, "", failover.DefaultHold, `"c": not a place`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(tt.annotations)
			if tt.errHas == "" && err != nil || tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)) {
				t.Fatalf("error %v, want one containing %q", err, tt.errHas)
			}
			if cfg.Routing != tt.routing || !slices.Equal(cfg.Failover.Order, tt.order) || cfg.Failover.Pin != tt.pin || cfg.Failover.Hold != tt.hold {
				t.Errorf("config %+v %+v, want %s %v pin %q hold %v", cfg.Routing, cfg.Failover, tt.routing, tt.order, tt.pin, tt.hold)
			}
		})
	}
}
