package v1alpha1

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestMemberNamespaceIsAValidNamespaceOfItsOwn(t *testing.T) {
	long := strings.Repeat("a", 63)
	for _, tc := range []struct{ cluster, want string }{
		{"cluster-1", "kfed-member-cluster-1"},
		{strings.Repeat("a", 51), "kfed-member-" + strings.Repeat("a", 51)},
		{long, ""}, // cut, with a hash
	} {
		got := MemberNamespace(tc.cluster)
		if tc.want != "" && got != tc.want {
			t.Errorf("MemberNamespace(%q) = %q, want %q", tc.cluster, got, tc.want)
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("MemberNamespace(%q) = %q: %v", tc.cluster, got, errs)
		}
	}
	if a, b := MemberNamespace(long), MemberNamespace(long[:62]+"b"); a == b {
		t.Errorf("two long names share namespace %s", a)
	}
}

func TestSeatsCountAClustersOldestReportsUpToItsLimit(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	report := func(cluster, name string, age int, claims string) HealthReport {
		return HealthReport{ObjectMeta: metav1.ObjectMeta{Namespace: MemberNamespace(cluster), Name: name,
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Duration(age) * time.Minute))}, Cluster: claims}
	}
	two, off := int32(2), false
	clusters := []Cluster{
		{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Spec: ClusterSpec{Region: "us-east1"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c2"}, Spec: ClusterSpec{Region: "europe-west1", HealthCheck: HealthCheckSpec{MaxCheckers: &two}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c3"}, Spec: ClusterSpec{HealthCheck: HealthCheckSpec{Enabled: &off}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "c4"}},
	}
	for _, tc := range []struct {
		name    string
		reports []HealthReport
		counted []string // Checker, sorted
		over    map[string][]string
	}{
		{"one checker a cluster: all count", []HealthReport{report("c1", "a", 5, "c1"), report("c2", "b", 5, "c2")},
			[]string{"kfed-member-c1/a", "kfed-member-c2/b"}, nil},
		{"a cluster's checkers beyond its seat are not counted, the oldest is",
			[]HealthReport{report("c1", "fake-1", 1, "c1"), report("c1", "own", 9, "c1"), report("c1", "fake-2", 2, "c2")},
			[]string{"kfed-member-c1/own"}, map[string][]string{"c1": {"fake-2", "fake-1"}}},
		{"maxCheckers 2 seats two, oldest first", []HealthReport{report("c2", "x", 1, ""), report("c2", "y", 3, ""), report("c2", "z", 2, "")},
			[]string{"kfed-member-c2/y", "kfed-member-c2/z"}, map[string][]string{"c2": {"x"}}},
		{"a report's cluster field speaks for nobody: its namespace does",
			[]HealthReport{report("c1", "own", 9, "c1"), report("c1", "says-c2", 1, "c2")},
			[]string{"kfed-member-c1/own"}, map[string][]string{"c1": {"says-c2"}}},
		{"reports outside member namespaces, of unknown clusters or with health checking off count for nobody",
			[]HealthReport{{ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: "old"}, Cluster: "c1"},
				report("c9", "gone", 1, "c9"), report("c3", "off", 1, "c3")},
			nil, nil},
		{"same age: by name", []HealthReport{report("c1", "b", 1, ""), report("c1", "a", 1, "")},
			[]string{"kfed-member-c1/a"}, map[string][]string{"c1": {"b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counted, over := Seats(tc.reports, clusters)
			var got []string
			for _, r := range counted {
				got = append(got, r.Checker)
				if MemberNamespace(r.Cluster.Name) != r.Namespace {
					t.Errorf("%s speaks for %s", r.Checker, r.Cluster.Name)
				}
			}
			if !slices.Equal(got, tc.counted) {
				t.Errorf("counted %v, want %v", got, tc.counted)
			}
			gotOver := map[string][]string{}
			for c, rs := range over {
				for _, r := range rs {
					gotOver[c] = append(gotOver[c], r.Name)
				}
			}
			if len(gotOver) != len(tc.over) {
				t.Errorf("over %v, want %v", gotOver, tc.over)
			}
			for c, want := range tc.over {
				if !slices.Equal(gotOver[c], want) {
					t.Errorf("over %v, want %v", gotOver, tc.over)
				}
			}
		})
	}
}

func TestFailureDomainIsTheClustersRegion(t *testing.T) {
	r := &HealthReport{Region: "forged-region", Cluster: "forged"}
	for _, tc := range []struct {
		cluster Cluster
		want    string
	}{
		{Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Spec: ClusterSpec{Region: "us-east1"}}, "us-east1"},
		{Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Status: ClusterStatus{Region: "europe-west1"}}, "europe-west1"},
		{Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}, "cluster/c1"},
	} {
		if got := (CountedReport{HealthReport: r, Cluster: &tc.cluster}).FailureDomain(); got != tc.want {
			t.Errorf("FailureDomain = %q, want %q", got, tc.want)
		}
	}
}

// BenchmarkSeats sorts out the seats of a fleet of clusters with one
// checker each and as many more beyond their seat: the work the boundary
// adds to each reconcile that judges health (publish.ReadHealth) and to
// each agent's retarget.
func BenchmarkSeats(b *testing.B) {
	for _, n := range []int{3, 30, 1000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			clusters := make([]Cluster, n)
			var reports []HealthReport
			t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			for i := range clusters {
				name := fmt.Sprintf("cluster-%d", i)
				clusters[i] = Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: ClusterSpec{Region: fmt.Sprintf("region-%d", i%5)}}
				for j := range 2 {
					reports = append(reports, HealthReport{ObjectMeta: metav1.ObjectMeta{Namespace: MemberNamespace(name),
						Name: fmt.Sprintf("checker-%d", j), CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(j) * time.Minute))}})
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if counted, _ := Seats(reports, clusters); len(counted) != n {
					b.Fatalf("%d counted, want %d", len(counted), n)
				}
			}
		})
	}
}
