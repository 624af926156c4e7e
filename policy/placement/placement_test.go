package placement

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func TestPlacement(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		places      map[string]bool // cluster → placed; c1 us-east1 tier=gold, c2 us-east1, c3 europe-west1
		errHas      string
	}{
		{name: "no annotation places everywhere", places: map[string]bool{"c1": true, "c2": true, "c3": true}},
		{name: "names are trimmed and deduplicated", annotations: map[string]string{kfedv1alpha1.AnnotationClusters: " c1, c3 ,c1"},
			places: map[string]bool{"c1": true, "c2": false, "c3": true}},
		{name: "the selector sees the implicit region label", annotations: map[string]string{kfedv1alpha1.AnnotationClusterSelector: "kfed.io/region=us-east1"},
			places: map[string]bool{"c1": true, "c2": true, "c3": false}},
		{name: "names and selector both apply", annotations: map[string]string{kfedv1alpha1.AnnotationClusters: "c1,c3", kfedv1alpha1.AnnotationClusterSelector: "tier=gold"},
			places: map[string]bool{"c1": true, "c2": false, "c3": false}},
		{name: "a name that is not a DNS label is refused", annotations: map[string]string{kfedv1alpha1.AnnotationClusters: "Cluster_1"}, errHas: `"Cluster_1" is not a cluster name`},
		{name: "names naming nothing are refused", annotations: map[string]string{kfedv1alpha1.AnnotationClusters: " , "}, errHas: "names no cluster"},
		{name: "a PlacementDecision places where it lists", annotations: map[string]string{kfedv1alpha1.AnnotationPlacementDecision: "fleet", kfedv1alpha1.AnnotationPlacementDecided: "fleet=c1,c3"},
			places: map[string]bool{"c1": true, "c2": false, "c3": true}},
		{name: "a selector narrows a PlacementDecision", annotations: map[string]string{kfedv1alpha1.AnnotationPlacementDecision: "fleet", kfedv1alpha1.AnnotationPlacementDecided: "fleet=c1,c3", kfedv1alpha1.AnnotationClusterSelector: "kfed.io/region=us-east1"},
			places: map[string]bool{"c1": true, "c2": false, "c3": false}},
		{name: "a PlacementDecision not read yet places nowhere", annotations: map[string]string{kfedv1alpha1.AnnotationPlacementDecision: "fleet"},
			places: map[string]bool{"c1": false, "c2": false, "c3": false}},
		{name: "the record of another decision is not used", annotations: map[string]string{kfedv1alpha1.AnnotationPlacementDecision: "fleet", kfedv1alpha1.AnnotationPlacementDecided: "old=c1,c2,c3"},
			places: map[string]bool{"c1": false, "c2": false, "c3": false}},
		{name: "a PlacementDecision listing nothing places nowhere", annotations: map[string]string{kfedv1alpha1.AnnotationPlacementDecision: "fleet", kfedv1alpha1.AnnotationPlacementDecided: "fleet="},
			places: map[string]bool{"c1": false, "c2": false, "c3": false}},
		{name: "names and a PlacementDecision are refused together", annotations: map[string]string{kfedv1alpha1.AnnotationClusters: "c1", kfedv1alpha1.AnnotationPlacementDecision: "fleet"}, errHas: "both name the clusters"},
		{name: "a malformed selector is refused", annotations: map[string]string{kfedv1alpha1.AnnotationClusterSelector: "tier in (a"}, errHas: kfedv1alpha1.AnnotationClusterSelector},
	}
	where := map[string]struct {
		region string
		labels map[string]string
	}{"c1": {"us-east1", map[string]string{"tier": "gold"}}, "c2": {"us-east1", nil}, "c3": {"europe-west1", nil}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.annotations)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("error %v, want one containing %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tt.places {
				if got := p.Places(name, where[name].region, where[name].labels); got != want {
					t.Errorf("%s placed: %v, want %v", name, got, want)
				}
			}
		})
	}
}

func TestSelect(t *testing.T) {
	cluster := func(name, region string, lbls map[string]string) kfedv1alpha1.Cluster {
		c := kfedv1alpha1.Cluster{Spec: kfedv1alpha1.ClusterSpec{Region: region}}
		c.Name, c.Labels = name, lbls
		return c
	}
	leaving := cluster("c4", "us-east1", nil)
	leaving.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	clusters := []kfedv1alpha1.Cluster{
		cluster("c1", "us-east1", nil), cluster("c2", "us-east1", nil),
		cluster("c3", "europe-west1", map[string]string{"tier": "gold"}), leaving,
	}
	sel := func(s string) labels.Selector {
		l, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	tests := []struct {
		name    string
		p       Placement
		placed  []string
		unknown []string
	}{
		{"no placement annotations place every cluster not being deleted", Placement{}, []string{"c1", "c2", "c3"}, nil},
		{"names place those clusters", Placement{Names: []string{"c1", "c3"}}, []string{"c1", "c3"}, nil},
		{"names of no Cluster are unknown, the known ones placed", Placement{Names: []string{"c1", "gone"}}, []string{"c1"}, []string{"gone"}},
		{"a Cluster being deleted is placed nowhere, and not unknown", Placement{Names: []string{"c4"}}, nil, nil},
		{"a selector matches the implicit region label", Placement{Selector: sel("kfed.io/region=us-east1")}, []string{"c1", "c2"}, nil},
		{"a selector matches the Cluster's labels", Placement{Selector: sel("tier=gold")}, []string{"c3"}, nil},
		{"names and selector both apply", Placement{Names: []string{"c1", "c3"}, Selector: sel("kfed.io/region=us-east1")}, []string{"c1"}, nil},
		{"an empty name list places nothing", Placement{Names: []string{}}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placed, unknown := tt.p.Select(clusters)
			var got []string
			for _, c := range placed {
				got = append(got, c.Name)
			}
			if !slices.Equal(got, tt.placed) || !slices.Equal(unknown, tt.unknown) {
				t.Errorf("placed %v unknown %v, want %v and %v", got, unknown, tt.placed, tt.unknown)
			}
		})
	}
}
