package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kfed-io/kfed/internal/geo"
)

func TestCoordinates(t *testing.T) {
	tests := []struct {
		name    string
		spec    ClusterSpec
		status  ClusterStatus
		want    geo.Point
		wantOK  bool
		wantErr bool
	}{
		{name: "spec.location wins over the region",
			spec: ClusterSpec{Region: "us-east1", Location: &GeoLocation{Latitude: "40.71", Longitude: "-74.01"}},
			want: geo.Point{Latitude: 40.71, Longitude: -74.01}, wantOK: true},
		{name: "a known cloud region places a cluster without a location",
			spec: ClusterSpec{Region: "europe-west1"},
			want: geo.Point{Latitude: 50.45, Longitude: 3.82}, wantOK: true},
		{name: "the region read from the nodes places it too",
			status: ClusterStatus{Region: "ap-northeast-1"},
			want:   geo.Point{Latitude: 35.68, Longitude: 139.69}, wantOK: true},
		{name: "an unknown region without a location has no place",
			spec: ClusterSpec{Region: "on-prem-basement"}},
		{name: "an unreadable location is an error, and the region still places it",
			spec: ClusterSpec{Region: "us-east1", Location: &GeoLocation{Latitude: "north", Longitude: "0"}},
			want: geo.Point{Latitude: 33.20, Longitude: -80.01}, wantOK: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Cluster{Spec: tt.spec, Status: tt.status}
			got, ok, err := c.Coordinates()
			if got != tt.want || ok != tt.wantOK || (err != nil) != tt.wantErr {
				t.Errorf("Coordinates() = %v, %v, %v; want %v, %v, error %v", got, ok, err, tt.want, tt.wantOK, tt.wantErr)
			}
		})
	}
}

func TestNewGeoLocationReadsBack(t *testing.T) {
	for _, p := range []geo.Point{{Latitude: 40.71, Longitude: -74.01}, {Latitude: -90, Longitude: 180}, {Latitude: 0.000001, Longitude: -0.5}} {
		c := &Cluster{Spec: ClusterSpec{Location: NewGeoLocation(p)}}
		if got, ok, err := c.Coordinates(); !ok || err != nil || got != p {
			t.Errorf("%v as %+v reads back as %v, %v, %v", p, *c.Spec.Location, got, ok, err)
		}
	}
}

func TestWithdrawn(t *testing.T) {
	cond := func(status metav1.ConditionStatus, reason string) *Cluster {
		return &Cluster{Status: ClusterStatus{Conditions: []metav1.Condition{{Type: ClusterReady, Status: status, Reason: reason}}}}
	}
	tests := []struct {
		name    string
		cluster *Cluster
		want    bool
	}{
		{"its inventory says the control plane is unhealthy", cond(metav1.ConditionFalse, ReasonControlPlaneUnhealthy), true},
		{"merely unreachable keeps its records", cond(metav1.ConditionFalse, ReasonProbeFailed), false},
		{"ready", cond(metav1.ConditionTrue, ReasonProbeSucceeded), false},
		{"no Cluster (unjoined meanwhile)", nil, false},
	}
	for _, tt := range tests {
		if got := tt.cluster.Withdrawn(); got != tt.want {
			t.Errorf("%s: Withdrawn() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
