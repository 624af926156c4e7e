package registry

import (
	"testing"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func TestPlaceChangedSeesALocationChange(t *testing.T) {
	at := func(region, lat, lon string) *kfedv1alpha1.Cluster {
		c := &kfedv1alpha1.Cluster{Spec: kfedv1alpha1.ClusterSpec{Region: region, Zones: []string{"z"}}}
		if lat != "" {
			c.Spec.Location = &kfedv1alpha1.GeoLocation{Latitude: lat, Longitude: lon}
		}
		return c
	}
	member := func(c *kfedv1alpha1.Cluster) Member {
		region, zones := c.Location()
		return Member{Region: region, Zones: zones, Location: coordinates(c)}
	}
	tests := []struct {
		name     string
		was, now *kfedv1alpha1.Cluster
		want     bool
	}{
		{"nothing changed", at("us-east1", "", ""), at("us-east1", "", ""), false},
		{"a location given where the region placed it", at("us-east1", "", ""), at("us-east1", "40.71", "-74.01"), true},
		{"a location moved", at("x", "40.71", "-74.01"), at("x", "50.11", "8.68"), true},
		{"a location taken away from a region the table does not know", at("x", "40.71", "-74.01"), at("x", "", ""), true},
		{"the same place written differently", at("x", "40.710", "-74.01"), at("x", "40.71", "-74.010"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := placeChanged(member(tt.was), tt.now); got != tt.want {
				t.Errorf("placeChanged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRegistryNoticesADrainOfAnyCluster(t *testing.T) {
	r := &Registry{}
	for _, step := range []struct {
		name    string
		drained bool
		changed bool
	}{
		{"cluster-1", false, false}, {"cluster-1", true, true}, {"cluster-1", true, false},
		{"cluster-2", true, true}, {"cluster-1", false, true}, {"cluster-1", false, false},
	} {
		if got := r.drainChanged(step.name, step.drained); got != step.changed {
			t.Errorf("%s drained %v: changed %v, want %v", step.name, step.drained, got, step.changed)
		}
	}
}
