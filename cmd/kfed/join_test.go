package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/test/framework"
)

// run runs the kfed CLI with args and returns its output and error.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// joinAndUnjoinAgainstRealAPIServers (TestJoinAndUnjoinAgainstRealAPIServers)
// joins cluster-1 with kfed join, checks what a failed join leaves (nothing)
// and what --renew replaces, and unjoins it. It needs members nobody has
// joined, and leaves none joined.
func joinAndUnjoinAgainstRealAPIServers(t *testing.T, f *framework.Federation) {
	fed := f.Client("federation")
	kc := f.Kubeconfig

	// A kubeconfig with an extra context whose server nobody listens on.
	raw, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	raw.Clusters["gone"] = raw.Clusters["cluster-1"].DeepCopy()
	raw.Clusters["gone"].Server = "https://127.0.0.1:1"
	raw.Contexts["gone"] = raw.Contexts["cluster-1"].DeepCopy()
	raw.Contexts["gone"].Cluster = "gone"
	withGone := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*raw, withGone); err != nil {
		t.Fatal(err)
	}

	if out, err := run(t, "join", "cluster-1", "--kubeconfig", kc, "--region", "us-east1", "--zone", "us-east1-b", "--location", "40.71,-74.01"); err != nil {
		t.Fatalf("join cluster-1: %v\n%s", err, out)
	}
	var c kfedv1alpha1.Cluster
	if err := fed.Get(context.Background(), client.ObjectKey{Name: "cluster-1"}, &c); err != nil {
		t.Fatalf("Cluster not created: %v", err)
	}
	if c.Spec.Region != "us-east1" || len(c.Spec.Zones) != 1 || c.Spec.Zones[0] != "us-east1-b" {
		t.Errorf("Cluster spec %+v", c.Spec)
	}
	if l := c.Spec.Location; l == nil || l.Latitude != "40.71" || l.Longitude != "-74.01" {
		t.Errorf("Cluster spec.location %+v, want 40.71,-74.01", l)
	}
	// The stored kubeconfig reaches the member on its own.
	cfg, _, err := clusters.LoadRESTConfig(context.Background(), fed, &c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.Probe(context.Background(), cfg); err != nil {
		t.Fatalf("stored kubeconfig does not reach cluster-1: %v", err)
	}

	bad := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"missing context", []string{"join", "cluster-9", "--kubeconfig", kc, "--region", "r1", "--zone", "z1"},
			`context "cluster-9" is not in the kubeconfig`},
		{"unreachable server", []string{"join", "gone", "--kubeconfig", withGone, "--region", "r1", "--zone", "z1"},
			"is unreachable"},
		{"duplicate name", []string{"join", "cluster-1", "--member-context", "cluster-2", "--kubeconfig", kc, "--region", "r1", "--zone", "z1"},
			`a cluster named "cluster-1" is already joined`},
		{"no zone", []string{"join", "cluster-2", "--kubeconfig", kc, "--region", "r1"},
			`no --zone given and no node of cluster "cluster-2" has the label topology.kubernetes.io/zone`},
		{"name not a DNS label", []string{"join", "Cluster_2", "--member-context", "cluster-2", "--kubeconfig", kc, "--region", "r1", "--zone", "z1"},
			`cluster name "Cluster_2"`},
		{"location off the map", []string{"join", "cluster-2", "--kubeconfig", kc, "--region", "r1", "--zone", "z1", "--location", "91,0"},
			"--location: latitude 91 is not within -90 to 90"},
		{"unknown federation context", []string{"join", "cluster-2", "--kubeconfig", kc, "--context", "nope", "--region", "r1", "--zone", "z1"},
			`federation context "nope"`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, fed)
			_, err := run(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if after := snapshot(t, fed); after != before {
				t.Errorf("a failed join changed the control plane:\nbefore %s\nafter  %s", before, after)
			}
		})
	}

	// --renew with the context's own credentials replaces only the stored
	// kubeconfig: the Cluster and its Secret stay the same objects, so the
	// controller keeps the cluster's shards and records.
	var secretBefore corev1.Secret
	ref := c.Spec.KubeconfigSecretRef
	if err := fed.Get(context.Background(), client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &secretBefore); err != nil {
		t.Fatal(err)
	}
	// As written before --context named the federation in every command:
	// with --federation-context, --context is still the member's.
	out, err := run(t, "join", "cluster-1", "--kubeconfig", kc, "--context", "cluster-1", "--federation-context", "federation", "--renew")
	if err != nil || !strings.Contains(out, "its shards and records are unchanged") || !strings.Contains(out, "write --member-context cluster-1 --context federation") {
		t.Fatalf("join --renew: %v\n%s", err, out)
	}
	var renewed kfedv1alpha1.Cluster
	var secretAfter corev1.Secret
	if err := fed.Get(context.Background(), client.ObjectKey{Name: "cluster-1"}, &renewed); err != nil {
		t.Fatal(err)
	}
	if err := fed.Get(context.Background(), client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &secretAfter); err != nil {
		t.Fatal(err)
	}
	if renewed.UID != c.UID || secretAfter.UID != secretBefore.UID || renewed.Spec.Region != "us-east1" {
		t.Errorf("join --renew replaced the Cluster or its Secret (UIDs %s → %s, %s → %s) or changed its spec %+v",
			c.UID, renewed.UID, secretBefore.UID, secretAfter.UID, renewed.Spec)
	}
	if renewed.Annotations[kfedv1alpha1.AnnotationKubeconfigRenewed] == "" {
		t.Errorf("join --renew did not mark the Cluster %s, which says when its kubeconfig was replaced", kfedv1alpha1.AnnotationKubeconfigRenewed)
	}
	if _, err := run(t, "join", "cluster-2", "--kubeconfig", kc, "--renew"); err == nil || !strings.Contains(err.Error(), `looking up cluster "cluster-2"`) {
		t.Errorf("join --renew of a cluster that is not joined: %v", err)
	}

	if out, err := run(t, "unjoin", "cluster-1", "--kubeconfig", kc, "--context", "federation"); err != nil || !strings.Contains(out, "deleting kfed's copies") {
		t.Fatalf("unjoin: %v\n%s", err, out)
	}
	if got := snapshot(t, fed); got != "clusters=[] secrets=[]" {
		t.Errorf("after unjoin: %s", got)
	}
	if _, err := run(t, "unjoin", "cluster-1", "--kubeconfig", kc); err == nil || !strings.Contains(err.Error(), `no cluster named "cluster-1"`) {
		t.Errorf("second unjoin: %v", err)
	}
}

// snapshot lists the Clusters and kfed Secrets of the control plane.
func snapshot(t *testing.T, fed client.Client) string {
	t.Helper()
	var cl kfedv1alpha1.ClusterList
	if err := fed.List(context.Background(), &cl); err != nil {
		t.Fatal(err)
	}
	var sl corev1.SecretList
	if err := fed.List(context.Background(), &sl, client.InNamespace(kfedv1alpha1.DefaultNamespace)); err != nil {
		t.Fatal(err)
	}
	var cs, ss []string
	for _, c := range cl.Items {
		cs = append(cs, c.Name)
	}
	for _, s := range sl.Items {
		ss = append(ss, s.Name)
	}
	return fmt.Sprintf("clusters=%v secrets=%v", cs, ss)
}
