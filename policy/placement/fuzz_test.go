package placement

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// FuzzParse feeds arbitrary kfed.io/clusters and
// kfed.io/cluster-selector values (present says which annotations exist at
// all: bit 0 the names, bit 1 the selector). Parse must not panic;
// every error names the annotation at fault; an accepted list holds only
// valid, distinct names taken from the value; an accepted selector prints
// back to one that parses the same; and Places never puts an object in a
// cluster its list does not name.
func FuzzParse(f *testing.F) {
	for _, s := range []struct {
		present                                      uint8
		names, selector, cluster, region, key, value string
	}{
		{1, "c1, c2 ,c1", "", "c2", "eu", "tier", "gold"},
		{2, "", "kfed.io/region in (eu, us),tier!=bronze", "c1", "eu", "tier", "gold"},
		{3, "c1", "!gpu", "c1", "us", "gpu", "true"},
		{1, " , ,", "", "c1", "", "", ""},
		{1, "Upper,under_score,-dash", "", "c1", "", "", ""},
		{2, "", "a in (", "c1", "", "", ""},
		{2, "", "x=y,x notin (z),y", "c1", "", "y", ""},
		{2, "", "", "c1", "r", "", ""},
	} {
		f.Add(s.present, s.names, s.selector, s.cluster, s.region, s.key, s.value)
	}
	f.Fuzz(func(t *testing.T, present uint8, names, selector, cluster, region, key, value string) {
		annotations := map[string]string{}
		if present&1 != 0 {
			annotations[kfedv1alpha1.AnnotationClusters] = names
		}
		if present&2 != 0 {
			annotations[kfedv1alpha1.AnnotationClusterSelector] = selector
		}
		p, err := Parse(annotations)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, kfedv1alpha1.AnnotationClusters) && !strings.Contains(msg, kfedv1alpha1.AnnotationClusterSelector) {
				t.Fatalf("error %q names no annotation", msg)
			}
		}
		again, err2 := Parse(annotations)
		if (err == nil) != (err2 == nil) || !slices.Equal(p.Names, again.Names) {
			t.Fatalf("two reads of %v differ: %v %v, %v %v", annotations, p.Names, err, again.Names, err2)
		}
		if present&1 == 0 && p.Names != nil {
			t.Fatalf("names %q without the annotation", p.Names)
		}
		if present&2 == 0 && p.Selector != nil {
			t.Fatalf("selector %v without the annotation", p.Selector)
		}
		if err == nil && present&1 != 0 && len(p.Names) == 0 {
			t.Fatalf("%s=%q accepted naming no cluster", kfedv1alpha1.AnnotationClusters, names)
		}
		given := strings.Split(names, ",")
		for i, n := range p.Names {
			if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
				t.Fatalf("accepted cluster name %q: %s", n, msgs[0])
			}
			if slices.Contains(p.Names[:i], n) {
				t.Fatalf("cluster name %q twice in %q", n, p.Names)
			}
			if !slices.ContainsFunc(given, func(g string) bool { return strings.TrimSpace(g) == n }) {
				t.Fatalf("cluster name %q is not in %q", n, names)
			}
		}
		if p.Selector != nil {
			printed := p.Selector.String()
			back, err := labels.Parse(printed)
			if err != nil {
				t.Fatalf("selector %q prints as %q, which does not parse: %v", selector, printed, err)
			}
			if back.String() != printed {
				t.Fatalf("selector %q prints as %q, which reads back as %q", selector, printed, back.String())
			}
		}
		clusterLabels := map[string]string{key: value}
		places := p.Places(cluster, region, clusterLabels)
		if p.Names != nil && !slices.Contains(p.Names, cluster) && places {
			t.Fatalf("placement %q puts the object in cluster %q", p.Names, cluster)
		}
		if p.Names == nil && p.Selector == nil && !places {
			t.Fatalf("no placement, yet cluster %q is left out", cluster)
		}
		if p.Selector != nil && places && !p.Selector.Matches(labels.Set{"kfed.io/region": region, key: value}) {
			t.Fatalf("selector %q does not match %s=%s region %s, yet places", p.Selector, key, value, region)
		}
	})
}
