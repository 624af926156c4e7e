// Package identity tests, on a `kfed dev up` bed (devenv.StartDev), that
// each member's agents reach the control plane as that member alone (ADR
// 0013, docs/security.md): with cluster-1's credentials, as kfed
// agent-kubeconfig prints them, every forgery of another member's votes,
// of kfed-controller's Lease or of published records is refused by the API
// server, checkers beyond cluster-1's seat are not counted, and cluster-3
// stays in every answer; a renewed member keeps its vote without a gap and
// its old token is refused; an unjoined member's token is refused, and
// nothing of kfed's stays in it, of any kind.
//
// Like every package under test/e2e, it runs against real kube-apiserver and
// etcd processes on loopback, real CoreDNS with kfed's plugin and real
// kfed-healthcheck agents; test/fedtest holds what the packages share.
package identity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedscheme "github.com/kfed-io/kfed/api/scheme"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// freshness is the dev bed controller's (devenv: four 2 s heartbeats).
const freshness = 8 * time.Second

type bed struct {
	d     *devenv.Dev
	kfed  string // the kfed binary
	admin client.Client
}

func TestOneMemberOneVote(t *testing.T) {
	d, bin := fedtest.StartDevBed(t, "./cmd/kfed")
	b := &bed{d: d, kfed: filepath.Join(bin, "kfed"), admin: newClient(t, d.ControlPlane.Config)}
	// In this order: the unjoin takes cluster-3 away.
	t.Run("a member's credentials forge nothing and outvote nobody", b.forgeriesAreRefused)
	t.Run("a renewed member keeps its vote and its old token is refused", b.renewal)
	t.Run("a member holds an object of every kind kfed writes there", b.memberObjects)
	t.Run("an unjoined member's token is refused and none of kfed's objects stay there", b.unjoin)
}

func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	scheme, err := kfedscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs kfed against the bed's control plane.
func (b *bed) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(b.kfed, append(args, "--kubeconfig", b.d.Kubeconfig, "--context", devenv.ControlPlaneName)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kfed %s: %w\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// agent is a client with the credentials kfed agent-kubeconfig prints for
// cluster's component.
func (b *bed) agent(t *testing.T, cluster, component string) client.Client {
	t.Helper()
	out, err := b.run(t, "agent-kubeconfig", cluster, "--component", component)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(out))
	if err != nil {
		t.Fatalf("kfed agent-kubeconfig printed no kubeconfig (%v):\n%s", err, out)
	}
	return newClient(t, cfg)
}

func wantForbidden(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: %v, want Forbidden by the API server", what, err)
	}
}

func report(namespace, name, cluster string, down ...string) *kfedv1alpha1.HealthReport {
	r := &kfedv1alpha1.HealthReport{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
		kfedv1alpha1.LabelFederation: "dev", kfedv1alpha1.LabelChecker: name, kfedv1alpha1.LabelCluster: cluster}},
		Federation: "dev", Cluster: cluster, Endpoints: 6}
	for _, e := range down {
		r.Unhealthy = append(r.Unhealthy, kfedv1alpha1.UnhealthyEndpoint{Endpoint: e, Since: metav1.Now(), Reason: "connection refused"})
	}
	r.UnhealthyCount = int32(len(r.Unhealthy))
	return r
}

// forgeriesAreRefused tries, with cluster-1's credentials, what the issue
// found one shared identity could do, and more.
func (b *bed) forgeriesAreRefused(t *testing.T) {
	ctx := context.Background()
	hc, coredns := b.agent(t, "cluster-1", "healthcheck"), b.agent(t, "cluster-1", "coredns")
	own, other := kfedv1alpha1.MemberNamespace("cluster-1"), kfedv1alpha1.MemberNamespace("cluster-2")

	var theirs kfedv1alpha1.HealthReport
	var theirLease, leader coordinationv1.Lease
	var c3 kfedv1alpha1.Cluster
	for _, o := range []struct {
		key client.ObjectKey
		obj client.Object
	}{
		{client.ObjectKey{Namespace: other, Name: "healthcheck-cluster-2"}, &theirs},
		{client.ObjectKey{Namespace: other, Name: "healthcheck-cluster-2"}, &theirLease},
		{client.ObjectKey{Namespace: kfedv1alpha1.DefaultNamespace, Name: "kfed-controller"}, &leader},
		{client.ObjectKey{Name: "cluster-3"}, &c3},
	} {
		if err := b.admin.Get(ctx, o.key, o.obj); err != nil {
			t.Fatalf("%T %s: %v", o.obj, o.key, err)
		}
	}
	for _, o := range []client.Object{&theirs, &theirLease, &leader} {
		o.SetLabels(map[string]string{"kfed.io/forged": "true"})
	}
	wantForbidden(t, "relabelling cluster-2's HealthReport", hc.Update(ctx, &theirs))
	wantForbidden(t, "relabelling cluster-2's heartbeat Lease", hc.Update(ctx, &theirLease))
	wantForbidden(t, "creating a HealthReport in cluster-2's namespace", hc.Create(ctx, report(other, "fake", "cluster-2")))
	leader.Spec.HolderIdentity = new("cluster-1")
	wantForbidden(t, "taking kfed-controller's leader-election Lease", hc.Update(ctx, &leader))
	wantForbidden(t, "reading kfed-controller's leader-election Lease", hc.Get(ctx, client.ObjectKeyFromObject(&leader), &coordinationv1.Lease{}))
	wantForbidden(t, "listing Secrets", hc.List(ctx, &corev1.SecretList{}))
	wantForbidden(t, "listing Secrets in its own namespace", hc.List(ctx, &corev1.SecretList{}, client.InNamespace(own)))
	ep := &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "forged"}}
	wantForbidden(t, "creating a DNSEndpoint", hc.Create(ctx, ep))
	c3.Spec.Drained = true
	wantForbidden(t, "draining cluster-3", hc.Update(ctx, &c3))
	// kfed's CoreDNS only reads.
	wantForbidden(t, "CoreDNS creating a HealthReport in its own namespace", coredns.Create(ctx, report(own, "fake", "cluster-1")))
	wantForbidden(t, "CoreDNS creating a Lease in its own namespace",
		coredns.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: own, Name: "fake"}}))
	wantForbidden(t, "CoreDNS creating a DNSEndpoint", coredns.Create(ctx, ep))
	wantForbidden(t, "CoreDNS listing Secrets", coredns.List(ctx, &corev1.SecretList{}))

	// Six more checkers in cluster-1's own namespace, one saying it is
	// cluster-2's, each with a heartbeat kept fresh, all voting
	// cluster-3's demo endpoint down: the API server lets cluster-1 write
	// there, and the quorum counts one of cluster-1's, its oldest.
	down := kfedv1alpha1.EndpointKey("default", "demo", "cluster-3")
	var fakes []string
	for i := range 6 {
		name, says := fmt.Sprintf("fake-%d", i), "cluster-1"
		if i == 0 {
			says = "cluster-2"
		}
		if err := hc.Create(ctx, report(own, name, says, down)); err != nil {
			t.Fatalf("cluster-1 writing a report of its own: %v", err)
		}
		fakes = append(fakes, name)
	}
	stop := b.heartbeats(t, hc, own, fakes)
	defer stop()

	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var c1 kfedv1alpha1.Cluster
		if err := b.admin.Get(ctx, client.ObjectKey{Name: "cluster-1"}, &c1); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(c1.Status.Conditions, kfedv1alpha1.ClusterTooManyCheckers)
		if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "fake-5") {
			return fmt.Errorf("cluster-1's %s condition is %+v, want True naming the checkers not counted", kfedv1alpha1.ClusterTooManyCheckers, cond)
		}
		return nil
	})
	fedtest.Steady(t, 3*freshness, "cluster-3's demo endpoint in every member's answer", func() error {
		for i, addr := range b.d.DNS {
			r, err := fedtest.Query(addr, "udp", b.d.Demo+".", dns.TypeA)
			if err != nil {
				return err
			}
			if n := len(r.Answer); n != 3 {
				return fmt.Errorf("cluster-%d's CoreDNS answers %s with %v, want the three clusters' addresses", i+1, b.d.Demo, fedtest.AnswerStrings(r))
			}
		}
		return nil
	})
	// cluster-1's own checker still reports and is counted, fresh; no fake is.
	h, err := publish.ReadHealth(ctx, b.admin, "dev", time.Now(), freshness)
	if err != nil {
		t.Fatal(err)
	}
	ballots, _ := h.Ballots(down)
	var voters []string
	for _, bl := range ballots {
		voters = append(voters, bl.Checker)
		if bl.Age >= freshness {
			t.Errorf("checker %s's heartbeat is %v old", bl.Checker, bl.Age)
		}
	}
	want := []string{own + "/healthcheck-cluster-1", other + "/healthcheck-cluster-2", kfedv1alpha1.MemberNamespace("cluster-3") + "/healthcheck-cluster-3"}
	if !slices.Equal(voters, want) {
		t.Errorf("the ballots on %s are %v's, want %v's", down, voters, want)
	}
	// Events for a cluster-scoped object go to the default namespace.
	framework.Eventually(t, 10*time.Second, func(ctx context.Context) error {
		var events corev1.EventList
		if err := b.admin.List(ctx, &events, client.InNamespace("default")); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "cluster-1" && e.Reason == kfedv1alpha1.ClusterTooManyCheckers && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return errors.New("no Warning Event TooManyCheckers on cluster-1")
	})

	// Retired, the fakes leave cluster-1 within its seats again.
	stop()
	for _, name := range fakes {
		meta := metav1.ObjectMeta{Namespace: own, Name: name}
		for _, o := range []client.Object{&kfedv1alpha1.HealthReport{ObjectMeta: meta}, &coordinationv1.Lease{ObjectMeta: meta}} {
			if err := hc.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
				t.Errorf("cluster-1 retiring its own %T %s: %v", o, name, err)
			}
		}
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var c1 kfedv1alpha1.Cluster
		if err := b.admin.Get(ctx, client.ObjectKey{Name: "cluster-1"}, &c1); err != nil {
			return err
		}
		if !meta.IsStatusConditionFalse(c1.Status.Conditions, kfedv1alpha1.ClusterTooManyCheckers) {
			return fmt.Errorf("cluster-1's conditions %+v, want %s False", c1.Status.Conditions, kfedv1alpha1.ClusterTooManyCheckers)
		}
		return nil
	})
}

// heartbeats renews a fresh Lease for each of names in namespace every
// second, with c, until stop.
func (b *bed) heartbeats(t *testing.T, c client.Client, namespace string, names []string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			for _, name := range names {
				now := metav1.NewMicroTime(time.Now())
				l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
					kfedv1alpha1.LabelFederation: "dev", kfedv1alpha1.LabelChecker: name}},
					Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: new(int32(8)), RenewTime: &now}}
				if err := c.Create(ctx, l); apierrors.IsAlreadyExists(err) {
					var cur coordinationv1.Lease
					if c.Get(ctx, client.ObjectKeyFromObject(l), &cur) == nil {
						cur.Spec.RenewTime = &now
						_ = c.Update(ctx, &cur)
					}
				} else if err != nil && ctx.Err() == nil {
					t.Errorf("cluster-1 renewing a heartbeat of its own: %v", err)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { cancel(); wg.Wait() }) }
}

// renewal runs kfed join --renew for cluster-1, whose agents' tokens kfed
// writes into a namespace of the member as it would for the chart's
// agents; a stand-in for the kubelet copies the checker's into the file
// its kubeconfig reads. The checker's heartbeat never goes stale, and its
// old token is refused once the new one has had its time.
func (b *bed) renewal(t *testing.T) {
	ctx := context.Background()
	member := newClient(t, b.d.Members[0].Config)
	if err := member.Create(ctx, framework.Namespace("kfed-agents")); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(b.d.Dir, "agents", "cluster-1-healthcheck.token")
	old, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	kubelet, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for kubelet.Err() == nil {
			var s corev1.Secret
			if member.Get(kubelet, client.ObjectKey{Namespace: "kfed-agents", Name: "kfed-healthcheck-token"}, &s) == nil {
				if cur, _ := os.ReadFile(tokenFile); !bytes.Equal(cur, s.Data["token"]) {
					if err := devenv.WriteTokenFile(tokenFile, string(s.Data["token"])); err != nil {
						t.Error(err)
					}
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	// The checker's heartbeat, watched throughout.
	var oldest time.Duration
	watching, stopWatching := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for watching.Err() == nil {
			var l coordinationv1.Lease
			if b.admin.Get(watching, client.ObjectKey{Namespace: kfedv1alpha1.MemberNamespace("cluster-1"), Name: "healthcheck-cluster-1"}, &l) == nil {
				oldest = max(oldest, time.Since(publish.Heartbeat(&l)))
			}
			time.Sleep(250 * time.Millisecond)
		}
	})
	out, err := b.run(t, "join", "cluster-1", "--renew", "--member-context", "cluster-1", "--agents-namespace", "kfed-agents", "--revoke-after", "5s")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "old tokens are revoked") {
		t.Errorf("kfed join --renew printed\n%s\nwant it to say the old tokens are revoked", out)
	}
	// The API server caches a token's authentication for 10 s
	// (kube-apiserver's token cache): refused by then.
	oldClient := b.withToken(t, string(old))
	framework.Eventually(t, tokenCache+5*time.Second, func(ctx context.Context) error {
		err := oldClient.List(ctx, &kfedv1alpha1.HealthReportList{}, client.InNamespace(kfedv1alpha1.MemberNamespace("cluster-1")))
		if !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("the old token: %v, want Unauthorized", err)
		}
		return nil
	})
	// Two freshness windows more on the new token alone.
	time.Sleep(2 * freshness)
	stopWatching()
	wg.Wait()
	if oldest >= freshness {
		t.Errorf("cluster-1's checker went %v without a heartbeat (freshness %v) across the renewal", oldest, freshness)
	}
	t.Logf("oldest heartbeat seen across the renewal: %v", oldest)
}

// withToken is a client of the control plane with a bearer token alone.
func (b *bed) withToken(t *testing.T, token string) client.Client {
	t.Helper()
	cfg := rest.AnonymousClientConfig(b.d.ControlPlane.Config)
	cfg.BearerToken = token
	return newClient(t, cfg)
}

// tokenCache is how long kube-apiserver keeps a token's authentication.
const tokenCache = 10 * time.Second

// unjoin takes cluster-3 out: its checker's token is refused at once, by
// authorization (its bindings are gone) until the API server's cache of
// its authentication expires, by authentication after that.
func (b *bed) unjoin(t *testing.T) {
	token, err := os.ReadFile(filepath.Join(b.d.Dir, "agents", "cluster-3-healthcheck.token"))
	if err != nil {
		t.Fatal(err)
	}
	c := b.withToken(t, string(token))
	ns := kfedv1alpha1.MemberNamespace("cluster-3")
	if err := c.List(context.Background(), &kfedv1alpha1.HealthReportList{}, client.InNamespace(ns)); err != nil {
		t.Fatalf("cluster-3's checker token before the unjoin: %v", err)
	}
	if _, err := b.run(t, "unjoin", "cluster-3", "--wait", "2m"); err != nil {
		t.Fatal(err)
	}
	b.nothingOfKfedsIn(t, leaver) // the unjoin waited for the cleanup
	if err := c.List(context.Background(), &kfedv1alpha1.HealthReportList{}, client.InNamespace(ns)); !apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err) {
		t.Errorf("cluster-3's checker token just after the unjoin: %v, want it refused", err)
	}
	framework.Eventually(t, tokenCache+5*time.Second, func(ctx context.Context) error {
		if err := c.List(ctx, &kfedv1alpha1.HealthReportList{}, client.InNamespace(ns)); !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("cluster-3's checker token after the unjoin: %v, want Unauthorized", err)
		}
		return nil
	})
	b.nothingOfKfedsIn(t, leaver) // and nothing wrote there since
}
