package check

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// renewKeepsEveryRecordAndCopy follows the runbook for a member whose
// credentials expire, on `kfed dev up`'s bed with its controller running:
// `kfed join cluster-2 --renew` with a new ServiceAccount token replaces
// only the stored kubeconfig. The Cluster, its Secret, the demo Service's
// copy in cluster-2 and its DNSEndpoint keep their UIDs; every member's
// CoreDNS answers demo with all three clusters throughout; and the
// controller goes on acting in cluster-2 with the new token (a Service
// created after the renewal gets its copy there).
func renewKeepsEveryRecordAndCopy(t *testing.T, d *devenv.Dev, bin string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	scheme := framework.NewScheme(t)
	fed, err := client.New(d.ControlPlane.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	member, err := client.New(d.Members[1].Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	// The ServiceAccount the chart installs in a member (role=member), here
	// with cluster-admin.
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kfed-system"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: "kfed-member"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kfed-member"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "kfed-system", Name: "kfed-member"}}},
	} {
		if err := member.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %T: %v", o, err)
		}
	}

	demo := types.NamespacedName{Namespace: "default", Name: "demo"}
	var cl kfedv1alpha1.Cluster
	if err := fed.Get(ctx, client.ObjectKey{Name: "cluster-2"}, &cl); err != nil {
		t.Fatal(err)
	}
	ref := cl.Spec.KubeconfigSecretRef
	var secret corev1.Secret
	if err := fed.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &secret); err != nil {
		t.Fatal(err)
	}
	var copyBefore corev1.Service
	if err := member.Get(ctx, demo, &copyBefore); err != nil {
		t.Fatalf("demo's copy in cluster-2: %v", err)
	}
	var epBefore extdnsv1alpha1.DNSEndpoint
	if err := fed.Get(ctx, demo, &epBefore); err != nil {
		t.Fatalf("demo's DNSEndpoint: %v", err)
	}
	// every member's CoreDNS answers demo with its three clusters.
	threeEverywhere := func(context.Context) error {
		for i, addr := range d.DNS {
			r, err := fedtest.Query(addr, "udp", dns.Fqdn(d.Demo), dns.TypeA)
			if err != nil {
				return err
			}
			if len(r.Answer) != 3 {
				return fmt.Errorf("cluster-%d's CoreDNS answers %s with %d records, want 3: %v", i+1, d.Demo, len(r.Answer), r.Answer)
			}
		}
		return nil
	}
	framework.Eventually(t, 30*time.Second, threeEverywhere)

	// The bed's agents read their tokens from files kfed dev up wrote,
	// not from the member's Secrets: no agent tokens are written (and so
	// none revoked) there; test/e2e/identity renews those.
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "kfed"), "join", "cluster-2", "--renew",
		"--member-context", "cluster-2", "--context", "federation", "--kubeconfig", d.Kubeconfig,
		"--service-account", "kfed-system/kfed-member", "--agents-namespace=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kfed join --renew: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "shards and records are unchanged") {
		t.Errorf("kfed join --renew says\n%s\nwithout that the shards and records are unchanged", out)
	}

	var after corev1.Secret
	if err := fed.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &after); err != nil {
		t.Fatal(err)
	}
	key := ref.Key
	if key == "" {
		key = "kubeconfig"
	}
	if after.UID != secret.UID || bytes.Equal(after.Data[key], secret.Data[key]) || !bytes.Contains(after.Data[key], []byte("token:")) {
		t.Fatalf("the Secret after --renew: UID %s (was %s), kubeconfig changed %v, holds a token %v; want the same Secret with a token kubeconfig",
			after.UID, secret.UID, !bytes.Equal(after.Data[key], secret.Data[key]), bytes.Contains(after.Data[key], []byte("token:")))
	}

	// For a while after the renewal (the controller rebuilding its
	// client of cluster-2), nothing is lost: answers, copy and records.
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if err := threeEverywhere(ctx); err != nil {
			t.Fatalf("after --renew: %v", err)
		}
		var c kfedv1alpha1.Cluster
		var cp corev1.Service
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(ctx, client.ObjectKey{Name: "cluster-2"}, &c); err != nil || c.UID != cl.UID {
			t.Fatalf("after --renew the Cluster is %s (%v), was %s", c.UID, err, cl.UID)
		}
		if err := member.Get(ctx, demo, &cp); err != nil || cp.UID != copyBefore.UID {
			t.Fatalf("after --renew demo's copy in cluster-2 is %s (%v), was %s", cp.UID, err, copyBefore.UID)
		}
		if err := fed.Get(ctx, demo, &ep); err != nil || ep.UID != epBefore.UID {
			t.Fatalf("after --renew demo's DNSEndpoint is %s (%v), was %s", ep.UID, err, epBefore.UID)
		}
		time.Sleep(time.Second)
	}

	// The controller acts in cluster-2 with the new token.
	svc := fedtest.FederatedService("default", "after-renew")
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		return member.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{})
	})
	// The bed's later tests see the demo Service alone again.
	if err := fed.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		err := fed.Get(ctx, client.ObjectKeyFromObject(svc), &extdnsv1alpha1.DNSEndpoint{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("after-renew's DNSEndpoint is still there (%v)", err)
	})
}
