// Package devenv starts a local federation on loopback: one etcd, a
// kube-apiserver for the federation control plane and one per member cluster
// (each under its own etcd prefix), and, where asked, a kube-controller-manager,
// kube-scheduler and KWOK per member so that Deployments get real Pods on
// simulated nodes. `kfed dev up` and the e2e test framework both use it.
// StartDev runs the whole of `kfed dev up` on top: kfed's controller, the
// members' loopback load balancers and Gateways, a checker and a CoreDNS per
// member, the edge CoreDNS, the demo Service and Gateway, and DIR/env.
//
// Every server binds 127.0.0.1 on a free port; Stop ends every process it
// started, API servers before etcd (an API server whose etcd is gone hangs in
// graceful shutdown).
package devenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
)

// ControlPlaneName is the kubeconfig context of the federation control plane.
const ControlPlaneName = "federation"

// Member describes one member cluster to start.
type Member struct {
	Name   string
	Region string
	Zones  []string
}

// DefaultMembers are the three clusters of `kfed dev up`: two zones of one
// region and a second region.
func DefaultMembers() []Member {
	return []Member{
		{Name: "cluster-1", Region: "us-east1", Zones: []string{"us-east1-b"}},
		{Name: "cluster-2", Region: "us-east1", Zones: []string{"us-east1-c"}},
		{Name: "cluster-3", Region: "europe-west1", Zones: []string{"europe-west1-b"}},
	}
}

// Members are n member clusters named cluster-1 … cluster-n, placed as
// DefaultMembers' three in turn: us-east1-b, us-east1-c (both us-east1),
// europe-west1-b, then again from the first.
func Members(n int) []Member {
	defaults := DefaultMembers()
	members := make([]Member, n)
	for i := range members {
		m := defaults[i%len(defaults)]
		m.Name = fmt.Sprintf("cluster-%d", i+1)
		m.Zones = append([]string(nil), m.Zones...)
		members[i] = m
	}
	return members
}

// Options say what to start.
type Options struct {
	// Dir holds certificates, kubeconfig, etcd data and logs. Required.
	Dir string
	// BinDir holds kube-apiserver, etcd, kubectl and, with Workloads,
	// kube-controller-manager, kube-scheduler and kwok.
	BinDir string
	// Members to start beside the control plane.
	Members []Member
	// Workloads starts a controller manager, scheduler and KWOK per member and
	// registers simulated nodes, so Deployments create Pods that run.
	Workloads bool
	// Nodes per member (per zone round-robin) and the capacity of each, used
	// with Workloads. Defaults: 2 nodes of 4 CPU, 8Gi, 110 pods.
	Nodes    int
	NodeCPU  string
	NodeMem  string
	NodePods string
	// MemberCRDs, if set, are installed in every member before its
	// workloads start, so its controller manager (the HPA controller's REST
	// mapper) knows them from the start instead of after its next refresh.
	MemberCRDs fs.FS
	// APIServerProcs, if set, is each API server's GOMAXPROCS: a test bed
	// runs many API servers side by side on a few cores, where one thread
	// of Go code each spends less CPU (measured: BENCHMARKS.md, "The test
	// loop").
	APIServerProcs int
	// ControlPlaneWatchCache keeps the control plane's watch cache, as every
	// real API server does; members run without theirs. A fleet needs it:
	// each member's CoreDNS watches every DNSEndpoint, and without the
	// cache each of those watches is an etcd watch of its own, every change
	// sent and decoded once a watcher.
	ControlPlaneWatchCache bool
	// SeedDir keeps the bootstrap objects of an API server's first start
	// (default RBAC, flow schemas, APIServices), keyed by its binary and
	// flags, and writes them into each new cluster before its API server
	// starts, which then has less to do (see seed.go). "" keeps none.
	SeedDir string
}

// Cluster is one running API server.
type Cluster struct {
	Member
	// URL of the API server, https://127.0.0.1:PORT.
	URL string
	// Config is an admin client config (system:masters).
	Config *rest.Config

	apiserver *child
	workloads []*child
	node      interface{ Stop() } // its RealNode, with real nodes
}

// Env is a running local federation.
type Env struct {
	Dir string
	// Kubeconfig is the path of a kubeconfig with one context per cluster,
	// "federation" current.
	Kubeconfig   string
	ControlPlane *Cluster
	Members      []*Cluster

	opts     Options
	binDir   string
	logDir   string
	etcd     *child
	etcdURL  string
	etcdCli  *clientv3.Client // made on first use
	seed     *seed            // nil when the bed found none
	seedFile string           // where the seed is kept; "" for none
	certDir  string
	saKey    string
	saPub    string
	pki      *pki
	adminCrt []byte
	adminKey []byte

	mu      sync.Mutex
	stopped bool
}

// Start brings up the federation and returns when every API server answers
// /readyz (and, with Workloads, every simulated node is Ready). On error it
// stops whatever it had started.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	if err := platformSupported(); err != nil {
		return nil, err
	}
	e, err := newEnv(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	if err := e.issueCredentials(); err != nil {
		return nil, err
	}
	if err := e.startEtcd(ctx); err != nil {
		return nil, err
	}
	e.loadSeed()
	if err := e.startAPIServers(ctx); err != nil {
		return nil, err
	}
	if err := e.writeKubeconfig(); err != nil {
		return nil, err
	}
	if err := e.prepareMembers(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// newEnv checks opts, fills in their defaults and creates the folders of
// the logs and the certificates.
func newEnv(opts Options) (*Env, error) {
	if opts.Dir == "" || opts.BinDir == "" {
		return nil, errors.New("devenv: Dir and BinDir are required")
	}
	if opts.Nodes == 0 {
		opts.Nodes = 2
	}
	opts.NodeCPU = cmp.Or(opts.NodeCPU, "4")
	opts.NodeMem = cmp.Or(opts.NodeMem, "8Gi")
	opts.NodePods = cmp.Or(opts.NodePods, "110")
	e := &Env{
		Dir:     opts.Dir,
		opts:    opts,
		binDir:  opts.BinDir,
		logDir:  filepath.Join(opts.Dir, "logs"),
		certDir: filepath.Join(opts.Dir, "pki"),
	}
	for _, d := range []string{e.logDir, e.certDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	return e, nil
}

// issueCredentials creates the federation's CA (written to pki/ca.crt), the
// service-account signing key and the admin client certificate.
func (e *Env) issueCredentials() (err error) {
	if e.pki, err = newPKI(); err != nil {
		return err
	}
	if e.saKey, e.saPub, err = serviceAccountKey(e.certDir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.certDir, "ca.crt"), e.pki.caPEM, 0o644); err != nil {
		return err
	}
	e.adminCrt, e.adminKey, err = e.pki.issue("kfed-admin", []string{"system:masters"}, nil, nil)
	return err
}

// startAPIServers starts the control plane's API server and each member's,
// and returns once all answer /readyz.
func (e *Env) startAPIServers(ctx context.Context) error {
	e.ControlPlane = &Cluster{Member: Member{Name: ControlPlaneName}}
	all := []*Cluster{e.ControlPlane}
	for _, m := range e.opts.Members {
		c := &Cluster{Member: m}
		e.Members = append(e.Members, c)
		all = append(all, c)
	}
	// API servers start together: four take 8-9 s side by side against 3.5 s
	// for one, so starting them in sequence would double the wait.
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	bound := readyBound(len(all))
	for i, c := range all {
		wg.Go(func() { errs[i] = e.startAPIServer(ctx, c, bound) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// prepareMembers installs Options.MemberCRDs in every member, then, with
// Options.Workloads, starts its controller manager, scheduler and nodes.
func (e *Env) prepareMembers(ctx context.Context) error {
	if e.opts.MemberCRDs != nil {
		if err := e.InstallCRDsIn(ctx, e.opts.MemberCRDs, e.Members...); err != nil {
			return err
		}
	}
	if e.opts.Workloads {
		for i, c := range e.Members {
			if err := e.startWorkloads(ctx, c, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// startWorkloads runs a controller manager, a scheduler and KWOK for member c
// (index i picks its pod CIDR) and registers its simulated nodes.
func (e *Env) startWorkloads(ctx context.Context, c *Cluster, i int) error {
	kubeconfig := e.memberKubeconfig(c)
	stages := filepath.Join(e.Dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, []byte(kwokStages), 0o644); err != nil {
		return err
	}
	procs := []*child{
		newChild(c.Name+"-kube-controller-manager", filepath.Join(e.binDir, "kube-controller-manager"), e.logDir,
			"--kubeconfig="+kubeconfig,
			"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
			"--bind-address=127.0.0.1", "--secure-port=0",
			"--leader-elect=false",
			"--cluster-name="+c.Name,
			// No kubelets heartbeat here; the node lifecycle controller would
			// taint KWOK's nodes and evict their pods.
			"--controllers=*,-node-lifecycle-controller,-node-ipam-controller",
			"--service-account-private-key-file="+e.saKey,
			"--root-ca-file="+filepath.Join(e.certDir, "ca.crt"),
			"--use-service-account-credentials=false",
			"--v=0"),
		newChild(c.Name+"-kube-scheduler", filepath.Join(e.binDir, "kube-scheduler"), e.logDir,
			"--kubeconfig="+kubeconfig,
			"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
			"--bind-address=127.0.0.1", "--secure-port=0",
			"--leader-elect=false", "--v=0"),
		newChild(c.Name+"-kwok", filepath.Join(e.binDir, "kwok"), e.logDir,
			"--kubeconfig="+kubeconfig,
			"--config="+stages,
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector="+kwokNodeAnnotation+"=fake",
			"--node-ip=127.0.0.1",
			fmt.Sprintf("--cidr=10.%d.0.0/16", 64+i),
			"--node-lease-duration-seconds=0"),
	}
	for _, p := range procs {
		if err := p.start(); err != nil {
			return err
		}
		c.workloads = append(c.workloads, p)
	}
	return e.registerNodes(ctx, c)
}

// registerNodes creates the member's simulated nodes, spread over its zones,
// and waits for KWOK to make them Ready.
func (e *Env) registerNodes(ctx context.Context, c *Cluster) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	quantity := func(s string) resource.Quantity { return resource.MustParse(s) }
	res := corev1.ResourceList{
		corev1.ResourceCPU:    quantity(e.opts.NodeCPU),
		corev1.ResourceMemory: quantity(e.opts.NodeMem),
		corev1.ResourcePods:   quantity(e.opts.NodePods),
	}
	var names []string
	for n := range e.opts.Nodes {
		zone := c.Zones[n%len(c.Zones)]
		name := fmt.Sprintf("%s-node-%d", c.Name, n)
		names = append(names, name)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{kwokNodeAnnotation: "fake"},
				Labels: map[string]string{
					"kubernetes.io/hostname":   name,
					"kubernetes.io/os":         "linux",
					"type":                     "kwok",
					corev1.LabelTopologyRegion: c.Region,
					corev1.LabelTopologyZone:   zone,
				},
			},
			Status: corev1.NodeStatus{Capacity: res, Allocatable: res},
		}
		created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("registering node %s: %w", name, err)
		}
		// Status given at create may be dropped; set it through the
		// subresource. KWOK may update the node in between: retry then.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			created.Status.Capacity, created.Status.Allocatable = res, res
			_, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				if cur, gerr := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); gerr == nil {
					created = cur
				}
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("setting capacity of node %s: %w", name, err)
		}
	}
	kwok := c.workloads[len(c.workloads)-1]
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for _, name := range names {
		err := poll(wctx, 200*time.Millisecond, kwok, func(ctx context.Context) error {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("node %s not Ready yet", name)
		})
		if err != nil {
			return fmt.Errorf("waiting for simulated nodes of %s: %w", c.Name, err)
		}
	}
	return nil
}

func (e *Env) startEtcd(ctx context.Context) error {
	var lastErr error
	for range 3 { // a free port can be taken before etcd binds it
		client, err := freePort()
		if err != nil {
			return err
		}
		peer, err := freePort()
		if err != nil {
			return err
		}
		e.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", client)
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
		dataDir := filepath.Join(e.Dir, "etcd")
		_ = os.RemoveAll(dataDir)
		p := newChild("etcd", filepath.Join(e.binDir, "etcd"), e.logDir,
			"--name=kfed", "--data-dir="+dataDir,
			"--listen-client-urls="+e.etcdURL, "--advertise-client-urls="+e.etcdURL,
			"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
			"--initial-cluster=kfed="+peerURL,
			"--unsafe-no-fsync", "--log-level=warn", "--quota-backend-bytes=4294967296")
		if err := p.start(); err != nil {
			return err
		}
		e.etcd = p
		lastErr = poll(ctx, 100*time.Millisecond, p, func(ctx context.Context) error {
			return httpGetOK(ctx, nil, e.etcdURL+"/health")
		})
		if lastErr == nil {
			return nil
		}
		p.stop(time.Second)
	}
	return fmt.Errorf("starting etcd: %w", lastErr)
}

func (e *Env) startAPIServer(ctx context.Context, c *Cluster, bound time.Duration) error {
	crt, key, err := e.pki.issue(c.Name+"-apiserver", nil,
		[]net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		return err
	}
	crtFile := filepath.Join(e.certDir, c.Name+"-apiserver.crt")
	keyFile := filepath.Join(e.certDir, c.Name+"-apiserver.key")
	if err := os.WriteFile(crtFile, crt, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		return err
	}
	if err := e.plantSeed(ctx, c); err != nil {
		return wrapStart(c, err)
	}
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return err
		}
		c.URL = fmt.Sprintf("https://127.0.0.1:%d", port)
		c.Config = &rest.Config{
			Host: c.URL,
			TLSClientConfig: rest.TLSClientConfig{
				CAData: e.pki.caPEM, CertData: e.adminCrt, KeyData: e.adminKey,
			},
			QPS: 200, Burst: 400,
		}
		c.apiserver = newChild(c.Name+"-kube-apiserver", filepath.Join(e.binDir, "kube-apiserver"), e.logDir,
			e.apiserverArgs(c, port, crtFile, keyFile)...)
		// Collecting garbage a quarter as often, within a soft limit, cut
		// an API server's CPU from start to idle by a fifth; memory is
		// what a local bed has to spare.
		c.apiserver.env = []string{"GOGC=400", "GOMEMLIMIT=1GiB"}
		if e.opts.APIServerProcs > 0 {
			c.apiserver.env = append(c.apiserver.env, "GOMAXPROCS="+strconv.Itoa(e.opts.APIServerProcs))
		}
		if err := c.apiserver.start(); err != nil {
			return err
		}
		lastErr = e.waitReady(ctx, c, bound)
		if lastErr == nil && c == e.ControlPlane {
			lastErr = e.keepSeed(ctx, c)
		}
		if lastErr == nil || c.apiserver.running() {
			// Still running and not ready is slowness, not a taken port:
			// starting it again would only start its work again.
			return wrapStart(c, lastErr)
		}
		c.apiserver.stop(2 * time.Second)
	}
	return wrapStart(c, lastErr)
}

// apiserverArgs are the flags of cluster c's API server on port, serving
// with the certificate crtFile and its key keyFile.
func (e *Env) apiserverArgs(c *Cluster, port int, crtFile, keyFile string) []string {
	return []string{
		"--etcd-servers=" + e.etcdURL,
		"--etcd-prefix=/kfed/" + c.Name,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + crtFile, "--tls-private-key-file=" + keyFile,
		"--client-ca-file=" + filepath.Join(e.certDir, "ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + e.saPub,
		"--service-account-signing-key-file=" + e.saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--endpoint-reconciler-type=none",
		// A real node (StartRealNode) is reached for exec and logs at
		// its address: its name resolves nowhere.
		"--kubelet-preferred-address-types=InternalIP",
		"--authorization-mode=RBAC",
		// New nodes get a not-ready taint that only the node lifecycle
		// controller lifts; KWOK's nodes run without it (see startWorkloads).
		"--disable-admission-plugins=TaintNodesByCondition",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--v=0",
		// Each watch is served by etcd: a local bed has a handful of
		// watchers per resource, and keeping a cache of every resource
		// was most of an idle API server's CPU (but see
		// ControlPlaneWatchCache).
		"--watch-cache=" + strconv.FormatBool(c == e.ControlPlane && e.opts.ControlPlaneWatchCache),
	}
}

func wrapStart(c *Cluster, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("starting kube-apiserver for %s: %w", c.Name, err)
}

// readyBound is how long n API servers starting side by side are given to
// answer /readyz: 90 s, and 10 s more for each beyond the fourth. Thirty-one
// on two cores take minutes; a fixed 90 s stopped them all at once and
// started them all again, three times, before giving up.
func readyBound(n int) time.Duration {
	return 90*time.Second + time.Duration(max(0, n-4))*10*time.Second
}

func (e *Env) waitReady(ctx context.Context, c *Cluster, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	return poll(ctx, 200*time.Millisecond, c.apiserver, func(ctx context.Context) error {
		return httpGetOK(ctx, c.Config, c.URL+"/readyz")
	})
}

// StopAPIServer stops a cluster's API server (etcd keeps its data), as a
// test does to cut a member off.
func (e *Env) StopAPIServer(name string) error {
	c := e.Cluster(name)
	if c == nil {
		return fmt.Errorf("no cluster %q", name)
	}
	c.apiserver.stop(5 * time.Second)
	return nil
}

// RestartAPIServer starts a stopped API server again on the same port.
func (e *Env) RestartAPIServer(ctx context.Context, name string) error {
	c := e.Cluster(name)
	if c == nil {
		return fmt.Errorf("no cluster %q", name)
	}
	if c.apiserver.running() {
		return nil
	}
	if err := c.apiserver.start(); err != nil {
		return err
	}
	return e.waitReady(ctx, c, readyBound(1))
}

// KillEtcd ends etcd at once with SIGKILL, as a crash would, for fault
// tests; its data stays on disk for RestartEtcd.
func (e *Env) KillEtcd() { e.etcd.kill() }

// RestartEtcd starts a killed etcd again, on the same port with the same
// data, and returns once it is healthy.
func (e *Env) RestartEtcd(ctx context.Context) error {
	if e.etcd.running() {
		return nil
	}
	if err := e.etcd.start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return poll(ctx, 100*time.Millisecond, e.etcd, func(ctx context.Context) error {
		return httpGetOK(ctx, nil, e.etcdURL+"/health")
	})
}

// FreezeAPIServer stops (SIGSTOP) or, with freeze false, continues
// (SIGCONT) a cluster's API server, as a laptop that sleeps or a paused VM
// does: connections stay open and nothing answers.
func (e *Env) FreezeAPIServer(name string, freeze bool) error {
	c := e.Cluster(name)
	if c == nil {
		return fmt.Errorf("no cluster %q", name)
	}
	if !c.apiserver.running() {
		return fmt.Errorf("the API server of %s is not running", name)
	}
	sig, err := freezeSignal(freeze)
	if err != nil {
		return err
	}
	return c.apiserver.p.Signal(sig)
}

// Cluster returns the cluster named name (or the control plane), or nil.
func (e *Env) Cluster(name string) *Cluster {
	if e.ControlPlane != nil && e.ControlPlane.Name == name {
		return e.ControlPlane
	}
	for _, c := range e.Members {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Stop ends every process: workloads, then API servers, then etcd. It is safe
// to call more than once.
func (e *Env) Stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return
	}
	e.stopped = true
	all := append([]*Cluster{e.ControlPlane}, e.Members...)
	var wg sync.WaitGroup
	for _, c := range all {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.node != nil {
				c.node.Stop()
			}
			for _, p := range c.workloads {
				p.stop(3 * time.Second)
			}
			if c.apiserver != nil {
				c.apiserver.stop(5 * time.Second)
			}
		}()
	}
	wg.Wait()
	if e.etcdCli != nil {
		e.etcdCli.Close()
	}
	if e.etcd != nil {
		e.etcd.stop(5 * time.Second)
	}
}

// writeKubeconfig writes one context per cluster, each with the admin
// credentials embedded so the file works from anywhere.
func (e *Env) writeKubeconfig() error {
	cfg := clientcmdapi.NewConfig()
	for _, c := range append([]*Cluster{e.ControlPlane}, e.Members...) {
		cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: e.pki.caPEM}
		cfg.AuthInfos[c.Name] = &clientcmdapi.AuthInfo{ClientCertificateData: e.adminCrt, ClientKeyData: e.adminKey}
		cfg.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: c.Name}
	}
	cfg.CurrentContext = ControlPlaneName
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, e.Kubeconfig); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	// Each member also gets a kubeconfig of its own for its controllers.
	for _, c := range e.Members {
		one := cfg.DeepCopy()
		one.CurrentContext = c.Name
		if err := clientcmd.WriteToFile(*one, e.memberKubeconfig(c)); err != nil {
			return fmt.Errorf("writing kubeconfig of %s: %w", c.Name, err)
		}
	}
	return nil
}

func (e *Env) memberKubeconfig(c *Cluster) string {
	return filepath.Join(e.Dir, c.Name+".kubeconfig")
}

func httpGetOK(ctx context.Context, cfg *rest.Config, url string) error {
	client, err := httpClient(cfg)
	if err != nil {
		return err
	}
	req, err := newGet(ctx, url)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
