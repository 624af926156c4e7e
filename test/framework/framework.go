// Package framework starts real local federations for tests: etcd and
// kube-apiserver processes on loopback (through package devenv), optionally
// with schedulers, KWOK nodes and the loopback load balancer per member, and
// tears them down when the test ends, pass or fail; and it gives tests
// kfed's own binaries (Build).
//
// The Kubernetes binaries come from hack/test-binaries.sh ($KFED_TEST_BIN). A test
// that needs them fails when they are missing, rather than skipping: `make
// test` and CI build them first.
package framework

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	aboutv1alpha1 "github.com/kfed-io/kfed/api/about/v1alpha1"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/deploy/crds"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/devenv/loopbacklb"
)

// Federation is a running test federation.
type Federation struct {
	*devenv.Env
	// Scheme knows core, kfed and DNSEndpoint types.
	Scheme *k8sruntime.Scheme
	// LBBase is the second octet of member 0's load-balancer block;
	// member i's block is loopbacklb.Block(LBBase, i).
	LBBase int

	t       testing.TB
	clients sync.Map
}

type config struct {
	members    int
	workloads  bool
	lb         bool
	zones      []string
	memberCRDs bool
	opts       devenv.Options
}

// Option configures Start.
type Option func(*config)

// Members asks for n member clusters (default 3), named cluster-1 … cluster-n,
// placed as devenv.Members places them.
func Members(n int) Option { return func(c *config) { c.members = n } }

// Workloads starts a controller manager, scheduler and KWOK per member, with
// nodes nodes of the given cpu each.
func Workloads(nodes int, cpu string) Option {
	return func(c *config) { c.workloads, c.opts.Nodes, c.opts.NodeCPU = true, nodes, cpu }
}

// Zones gives every member these zones (simulated nodes are spread over
// them round-robin) instead of devenv.DefaultMembers' one zone each.
func Zones(zones ...string) Option { return func(c *config) { c.zones = zones } }

// MemberCRDs installs the CRDs members need (crds.Member(): the Balancer)
// in every member before its workloads start.
func MemberCRDs() Option { return func(c *config) { c.memberCRDs = true } }

// LoadBalancer runs the loopback load balancer in every member.
func LoadBalancer() Option { return func(c *config) { c.lb = true } }

// Start starts a federation for t and stops it when t ends.
func Start(t testing.TB, opts ...Option) *Federation {
	t.Helper()
	cfg := config{members: 3}
	for _, o := range opts {
		o(&cfg)
	}
	members := devenv.Members(cfg.members)
	if cfg.zones != nil {
		for i := range members {
			members[i].Zones = cfg.zones
		}
	}
	cfg.opts.Members = members
	cfg.opts.Workloads = cfg.workloads
	if cfg.memberCRDs {
		cfg.opts.MemberCRDs = crds.Member()
	}
	cfg.opts.BinDir = BinDir(t)
	// Tests run several beds of four API servers on a few cores.
	cfg.opts.APIServerProcs = 1
	// Each API server starts from the bootstrap objects of the first: a
	// quarter less of its start (devenv's seed.go).
	cfg.opts.SeedDir = devenv.DefaultSeedDir()
	cfg.opts.Dir = t.TempDir()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := devenv.Start(ctx, cfg.opts)
	if err != nil {
		t.Fatalf("starting federation: %v", err)
	}
	t.Cleanup(env.Stop)
	if err := env.InstallCRDs(ctx, env.ControlPlane, crds.FS); err != nil {
		t.Fatalf("installing CRDs: %v", err)
	}
	f := &Federation{Env: env, Scheme: NewScheme(t), t: t, LBBase: ClaimLBBase(t, len(members))}
	if cfg.lb {
		f.startLoadBalancers()
	}
	return f
}

func (f *Federation) startLoadBalancers() {
	log := Logger(f.t) // before the cleanup below, so it looks after they stop
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	f.t.Cleanup(func() { cancel(); wg.Wait() })
	for i, m := range f.Members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := loopbacklb.Run(ctx, loopbacklb.Options{
				Cluster: m.Name,
				Block:   loopbacklb.Block(f.LBBase, i),
				Config:  m.Config,
				Logger:  log.WithName(m.Name),
			})
			if err != nil && ctx.Err() == nil {
				f.t.Errorf("loopback load balancer of %s: %v", m.Name, err)
			}
		}()
	}
}

// Client returns a controller-runtime client for the named cluster.
func (f *Federation) Client(name string) client.Client {
	f.t.Helper()
	if c, ok := f.clients.Load(name); ok {
		return c.(client.Client)
	}
	cl := f.Cluster(name)
	if cl == nil {
		f.t.Fatalf("no cluster %q", name)
	}
	c, err := client.New(cl.Config, client.Options{Scheme: f.Scheme})
	if err != nil {
		f.t.Fatalf("client for %s: %v", name, err)
	}
	f.clients.Store(name, c)
	return c
}

// Clientset returns a client-go clientset for the named cluster.
func (f *Federation) Clientset(name string) kubernetes.Interface {
	f.t.Helper()
	cs, err := kubernetes.NewForConfig(f.Cluster(name).Config)
	if err != nil {
		f.t.Fatalf("clientset for %s: %v", name, err)
	}
	return cs
}

// NewScheme returns a scheme with core, kfed, DNSEndpoint, Cluster Inventory
// API, MCS API and ClusterProperty types.
func NewScheme(t testing.TB) *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{
		clientgoscheme.AddToScheme, kfedv1alpha1.AddToScheme, extdnsv1alpha1.AddToScheme, inventoryv1alpha1.AddToScheme,
		mcsv1beta1.Install, aboutv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// Eventually calls f every 100 ms until it returns nil or timeout passes, and
// fails the test with f's last error, and the one before it when the last
// only ran out of time.
func Eventually(t testing.TB, timeout time.Duration, f func(ctx context.Context) error) {
	t.Helper()
	var last, told error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = f(ctx)
		if last != nil && ctx.Err() == nil && !deadlineError(last) {
			told = last
		}
		return last == nil, nil
	})
	if err != nil {
		if told != nil && told != last {
			// The last try ran out of time (a client's rate limiter
			// refuses to wait past the deadline): what the condition said
			// before is what went wrong.
			t.Fatalf("not true after %v: %v (the last try: %v)", timeout, told, last)
			return
		}
		t.Fatalf("not true after %v: %v", timeout, last)
	}
}

// deadlineError reports whether err says a deadline ran out, as
// client-go's rate limiter does when its wait would pass it.
func deadlineError(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "would exceed context deadline")
}

// BinDir is where the test binaries are: $KFED_TEST_BIN, else what
// hack/test-binaries.sh --print says.
func BinDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("KFED_TEST_BIN"); d != "" {
		return d
	}
	out, err := exec.Command(filepath.Join(RepoRoot(t), "hack", "test-binaries.sh"), "--print").Output()
	if err != nil {
		t.Fatalf("test binaries are missing: run hack/test-binaries.sh (or make test) first: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// RepoRoot is the root of the kfed checkout: the nearest folder above the
// test's working directory (its package's folder) that holds kfed's go.mod.
// It does not use the source file's path, which -trimpath (hack/test.sh)
// takes out of the binary.
func RepoRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("locating the kfed checkout: %v", err)
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(mod), "module github.com/kfed-io/kfed\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no kfed go.mod above the test's working directory")
		}
		dir = parent
	}
}

// Namespace is a shorthand for a Namespace object.
func Namespace(name string) *corev1.Namespace {
	ns := &corev1.Namespace{}
	ns.Name = name
	return ns
}

// LogWriter is an io.Writer that logs each write through t.Log, for loggers
// of components a test runs in-process.
func LogWriter(t testing.TB) io.Writer { return testWriter{t} }

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
