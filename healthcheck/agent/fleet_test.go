package agent

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/healthcheck"
	"github.com/kfed-io/kfed/test/framework"
)

func TestFleetChanged(t *testing.T) {
	base := kfedv1alpha1.HealthReport{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Cluster: "c1", Region: "us-east1", CheckersPerEndpoint: 15}
	for _, tc := range []struct {
		name   string
		change func(r *kfedv1alpha1.HealthReport)
		want   bool
	}{
		{"a verdict changes: the assignment does not", func(r *kfedv1alpha1.HealthReport) {
			r.Unhealthy = []kfedv1alpha1.UnhealthyEndpoint{{Endpoint: "ns/web/c2"}}
			r.Degraded, r.Endpoints = true, 7
		}, false},
		{"checkers per endpoint changes", func(r *kfedv1alpha1.HealthReport) { r.CheckersPerEndpoint = 5 }, true},
		// The domain is the Cluster's region, whatever the report says.
		{"the region the report says changes", func(r *kfedv1alpha1.HealthReport) { r.Region = "europe-west1" }, false},
		{"the cluster the report says changes", func(r *kfedv1alpha1.HealthReport) { r.Cluster = "c9" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := base.DeepCopy()
			tc.change(cur)
			if got := fleetChanged(&base, cur); got != tc.want {
				t.Errorf("fleetChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCacheKeepsOnlyWhatTheAssignmentReads(t *testing.T) {
	r := &kfedv1alpha1.HealthReport{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: kfedv1alpha1.MemberNamespace("c1"),
		Labels: map[string]string{kfedv1alpha1.LabelFederation: "dev"}, CreationTimestamp: metav1.Now()},
		Cluster: "c1", Region: "us-east1", CheckersPerEndpoint: 15,
		Unhealthy: []kfedv1alpha1.UnhealthyEndpoint{{Endpoint: "ns/web/c2"}}, RTTs: []kfedv1alpha1.ClusterRTT{{Cluster: "c2"}}}
	clusters := []kfedv1alpha1.Cluster{{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Spec: kfedv1alpha1.ClusterSpec{Region: "us-east1"}}}
	seated := func(r *kfedv1alpha1.HealthReport) []healthcheck.Checker {
		counted, _ := kfedv1alpha1.Seats([]kfedv1alpha1.HealthReport{*r}, clusters)
		var out []healthcheck.Checker
		for _, c := range counted {
			out = append(out, checkerOf(c))
		}
		return out
	}
	want := seated(r)
	got, err := keepAssignment(r.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	kept := got.(*kfedv1alpha1.HealthReport)
	if !slices.Equal(seated(kept), want) || len(want) != 1 || kept.Unhealthy != nil || kept.RTTs != nil || kept.Labels[kfedv1alpha1.LabelFederation] != "dev" {
		t.Errorf("kept %+v, seated as %v, want %v", kept, seated(kept), want)
	}
}

// TestProbesOnlyItsAssignedEndpoints runs an agent against a real API
// server, in a fleet of twelve other checkers (their HealthReports) that
// assign each endpoint three: it probes, and reports down, exactly the
// endpoints whose panel seats it, and every endpoint once the fleet shrinks
// to three.
func TestProbesOnlyItsAssignedEndpoints(t *testing.T) {
	f := framework.Start(t, framework.Members(0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := f.Client("federation")
	for _, ns := range []string{"kfed-system", "shop"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cluster := func(name, region string) {
		t.Helper()
		must(c.Create(ctx, &kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kfedv1alpha1.ClusterSpec{
			Region: region, KubeconfigSecretRef: kfedv1alpha1.SecretKeyRef{Namespace: "kfed-system", Name: name}}}))
		must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kfedv1alpha1.MemberNamespace(name)}}))
	}
	cluster("cluster-1", "us-east1")
	// Twelve peers, each the one checker of a member of its own, in six
	// regions: the Clusters' regions are the domains.
	var peers []healthcheck.Checker
	var peerKeys []client.ObjectKey
	for i := range 12 {
		member := fmt.Sprintf("member-%d", i)
		cluster(member, fmt.Sprintf("region-%d", i%6))
		r := &kfedv1alpha1.HealthReport{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("peer-%02d", i), Namespace: kfedv1alpha1.MemberNamespace(member),
				Labels: map[string]string{kfedv1alpha1.LabelFederation: "dev", kfedv1alpha1.LabelChecker: fmt.Sprintf("peer-%02d", i)}},
			Federation: "dev", Cluster: member, CheckersPerEndpoint: 3,
		}
		must(c.Create(ctx, r))
		peers = append(peers, healthcheck.Checker{Name: kfedv1alpha1.CheckerName(r.Namespace, r.Name), Domain: fmt.Sprintf("region-%d", i%6), PerEndpoint: 3})
		peerKeys = append(peerKeys, client.ObjectKeyFromObject(r))
	}

	// Every endpoint refuses connections, so a probed one is reported down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	port := ln.Addr().(*net.TCPAddr).Port
	must(ln.Close())
	var keys []string
	for i := range 40 {
		name := fmt.Sprintf("web-%d", i)
		ep := endpoint(name, nil, dnsendpoint.Cluster{Name: "cluster-1", Addresses: []netip.Addr{netip.MustParseAddr("127.0.0.1")},
			Ports: []dnsendpoint.Port{{Name: "http", Protocol: "TCP", Port: int32(port)}}})
		ep.Labels = dnsendpoint.Selector("dev")
		must(c.Create(ctx, &ep))
		keys = append(keys, kfedv1alpha1.EndpointKey("shop", name, "cluster-1"))
	}

	defaults := healthcheck.Defaults()
	defaults.Interval, defaults.Timeout, defaults.Fall = time.Second, 500*time.Millisecond, 1
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Config: f.ControlPlane.Config, Checker: "me", Cluster: "cluster-1", Federation: "dev",
			Namespace: "kfed-system", Defaults: defaults, CheckersPerEndpoint: 3, Logger: testr.New(t)})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}()

	// wantProbed waits for the agent's report to list down exactly what the
	// fleet (the peers and the agent as it reports itself) assigns it.
	assigned := func(peers []healthcheck.Checker) []string {
		me := healthcheck.Checker{Name: kfedv1alpha1.CheckerName(kfedv1alpha1.MemberNamespace("cluster-1"), "me"), Domain: "us-east1", PerEndpoint: 3}
		fleet := healthcheck.NewFleet(append(slices.Clone(peers), me))
		var want []string
		for _, k := range keys {
			if fleet.Probes(me.Name, k) {
				want = append(want, k)
			}
		}
		slices.Sort(want) // as the report lists them
		return want
	}
	wantProbed := func(peers []healthcheck.Checker) {
		t.Helper()
		want := assigned(peers)
		var got []string
		var r kfedv1alpha1.HealthReport
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKey{Namespace: kfedv1alpha1.MemberNamespace("cluster-1"), Name: "me"}, &r); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			got = got[:0]
			for _, u := range r.Unhealthy {
				got = append(got, u.Endpoint)
			}
			return slices.Equal(got, want) && int(r.Endpoints) == len(want), nil
		})
		if err != nil {
			t.Fatalf("report lists down %v (probing %d), want the %d assigned: %v", got, r.Endpoints, len(want), want)
		}
		if r.Region != "us-east1" || r.CheckersPerEndpoint != 3 {
			t.Errorf("report says region %q, %d per endpoint; want us-east1, 3", r.Region, r.CheckersPerEndpoint)
		}
		t.Logf("probing %d of %d endpoints among %d checkers", len(want), len(keys), len(peers)+1)
	}

	t.Run("in a fleet of thirteen, only the endpoints whose panel seats it", func(t *testing.T) {
		wantProbed(peers)
	})
	t.Run("a peer leaves: the agent takes up its share", func(t *testing.T) {
		// The first peer whose leaving gives the agent more to probe.
		i := slices.IndexFunc(peers, func(p healthcheck.Checker) bool {
			return len(assigned(slices.DeleteFunc(slices.Clone(peers), func(q healthcheck.Checker) bool { return q == p }))) > len(assigned(peers))
		})
		if i < 0 {
			t.Fatal("no peer's leaving moves a seat to the agent")
		}
		must(c.Delete(ctx, &kfedv1alpha1.HealthReport{ObjectMeta: metav1.ObjectMeta{Name: peerKeys[i].Name, Namespace: peerKeys[i].Namespace}}))
		peers, peerKeys = slices.Delete(peers, i, i+1), slices.Delete(peerKeys, i, i+1)
		wantProbed(peers)
	})
	t.Run("a fleet of three, K: every endpoint", func(t *testing.T) {
		for _, k := range peerKeys[2:] {
			must(c.Delete(ctx, &kfedv1alpha1.HealthReport{ObjectMeta: metav1.ObjectMeta{Name: k.Name, Namespace: k.Namespace}}))
		}
		wantProbed(peers[:2])
	})
}
