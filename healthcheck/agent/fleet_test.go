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
		{"the region changes", func(r *kfedv1alpha1.HealthReport) { r.Region = "europe-west1" }, true},
		{"checkers per endpoint changes", func(r *kfedv1alpha1.HealthReport) { r.CheckersPerEndpoint = 5 }, true},
		{"the cluster changes but the region does not", func(r *kfedv1alpha1.HealthReport) { r.Cluster = "c9" }, false},
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
	r := &kfedv1alpha1.HealthReport{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{kfedv1alpha1.LabelFederation: "dev"}},
		Cluster: "c1", Region: "us-east1", CheckersPerEndpoint: 15,
		Unhealthy: []kfedv1alpha1.UnhealthyEndpoint{{Endpoint: "ns/web/c2"}}, RTTs: []kfedv1alpha1.ClusterRTT{{Cluster: "c2"}}}
	want := checker(r)
	got, err := keepAssignment(r)
	if err != nil {
		t.Fatal(err)
	}
	kept := got.(*kfedv1alpha1.HealthReport)
	if checker(kept) != want || kept.Unhealthy != nil || kept.RTTs != nil || kept.Labels[kfedv1alpha1.LabelFederation] != "dev" {
		t.Errorf("kept %+v", kept)
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
	must(c.Create(ctx, &kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster-1"}, Spec: kfedv1alpha1.ClusterSpec{
		Region: "us-east1", KubeconfigSecretRef: kfedv1alpha1.SecretKeyRef{Namespace: "kfed-system", Name: "cluster-1"}}}))
	var peers []healthcheck.Checker
	for i := range 12 {
		r := &kfedv1alpha1.HealthReport{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("peer-%02d", i), Namespace: "kfed-system",
				Labels: map[string]string{kfedv1alpha1.LabelFederation: "dev", kfedv1alpha1.LabelChecker: fmt.Sprintf("peer-%02d", i)}},
			Federation: "dev", Cluster: fmt.Sprintf("member-%d", i), Region: fmt.Sprintf("region-%d", i%6), CheckersPerEndpoint: 3,
		}
		must(c.Create(ctx, r))
		peers = append(peers, checker(r))
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
		me := healthcheck.Checker{Name: "me", Domain: "us-east1", PerEndpoint: 3}
		fleet := healthcheck.NewFleet(append(slices.Clone(peers), me))
		var want []string
		for _, k := range keys {
			if fleet.Probes("me", k) {
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
			if err := c.Get(ctx, client.ObjectKey{Namespace: "kfed-system", Name: "me"}, &r); err != nil {
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
		must(c.Delete(ctx, &kfedv1alpha1.HealthReport{ObjectMeta: metav1.ObjectMeta{Name: peers[i].Name, Namespace: "kfed-system"}}))
		peers = slices.Delete(peers, i, i+1)
		wantProbed(peers)
	})
	t.Run("a fleet of three, K: every endpoint", func(t *testing.T) {
		for _, p := range peers[2:] {
			must(c.Delete(ctx, &kfedv1alpha1.HealthReport{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: "kfed-system"}}))
		}
		wantProbed(peers[:2])
	})
}
