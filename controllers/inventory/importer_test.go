package inventory

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/policy/planner"
)

func TestDesiredCluster(t *testing.T) {
	prop := func(kv ...string) []inventoryv1alpha1.Property {
		var out []inventoryv1alpha1.Property
		for i := 0; i < len(kv); i += 2 {
			out = append(out, inventoryv1alpha1.Property{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		name              string
		props             []inventoryv1alpha1.Property
		healthy           metav1.ConditionStatus
		region, zones     string
		location, problem string
		wantHealthy       string
	}{
		{name: "region, zones and location come from the properties",
			props:  prop(PropertyRegion, "us-east1", PropertyZone, "us-east1-b, us-east1-c", PropertyLocation, "40.71,-74.01"),
			region: "us-east1", zones: "us-east1-b,us-east1-c", location: "40.71,-74.01", healthy: metav1.ConditionTrue, wantHealthy: "True"},
		{name: "absent properties leave the place to the nodes", wantHealthy: "Unknown"},
		{name: "ControlPlaneHealthy=False is carried to the Cluster", healthy: metav1.ConditionFalse, wantHealthy: "False"},
		{name: "an unreadable property is left out and described",
			props:   prop(PropertyRegion, "US_EAST", PropertyLocation, "north"),
			problem: "property topology.kubernetes.io/region=\"US_EAST\"", wantHealthy: "Unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "c1", Labels: map[string]string{"tier": "gold"}}}
			p.Status.Properties = tt.props
			if tt.healthy != "" {
				p.Status.Conditions = []metav1.Condition{{Type: inventoryv1alpha1.ConditionControlPlaneHealthy, Status: tt.healthy, Reason: "R"}}
			}
			c, problem := desiredCluster(p)
			if tt.problem == "" && problem != "" || !strings.Contains(problem, tt.problem) {
				t.Errorf("problem %q, want one containing %q", problem, tt.problem)
			}
			loc := ""
			if c.Spec.Location != nil {
				loc = c.Spec.Location.Latitude + "," + c.Spec.Location.Longitude
			}
			if c.Spec.Region != tt.region || strings.Join(c.Spec.Zones, ",") != tt.zones || loc != tt.location {
				t.Errorf("region %q zones %q location %q, want %q %q %q", c.Spec.Region, c.Spec.Zones, loc, tt.region, tt.zones, tt.location)
			}
			if got := c.Annotations[kfedv1alpha1.AnnotationControlPlaneHealthy]; got != tt.wantHealthy {
				t.Errorf("control-plane-healthy %q, want %q", got, tt.wantHealthy)
			}
			if c.Labels["tier"] != "gold" || c.Labels[kfedv1alpha1.LabelInventory] != kfedv1alpha1.InventoryClusterProfile {
				t.Errorf("labels %v: want the profile's and %s", c.Labels, kfedv1alpha1.LabelInventory)
			}
			if r := c.Spec.ClusterProfileRef; r == nil || r.Namespace != "fleet" || r.Name != "c1" {
				t.Errorf("clusterProfileRef %+v, want fleet/c1", r)
			}
		})
	}
}

func TestPlannable(t *testing.T) {
	tests := []struct {
		name  string
		prefs map[string]int64 // cluster → max (-1: no cap)
		want  map[string]bool
	}{
		{"a star entry covers every cluster", map[string]int64{"*": -1}, map[string]bool{"a": true, "b": true}},
		{"without a star only named clusters", map[string]int64{"a": -1}, map[string]bool{"a": true, "b": false}},
		{"a zero maximum is never planned", map[string]int64{"*": -1, "b": 0}, map[string]bool{"a": true, "b": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefs := newPrefs(tt.prefs)
			for c, want := range tt.want {
				if got := plannable(prefs, c); got != want {
					t.Errorf("%s: %v, want %v", c, got, want)
				}
			}
		})
	}
}

func newPrefs(m map[string]int64) planner.Preferences {
	p := planner.Preferences{Clusters: map[string]planner.ClusterPreferences{}}
	for c, max := range m {
		cp := planner.ClusterPreferences{Weight: 1}
		if max >= 0 {
			cp.MaxReplicas = &max
		}
		p.Clusters[c] = cp
	}
	return p
}
