// Package nodes runs pods on real nodes of `kfed dev up --real-nodes`'s bed:
// a kubelet, containerd and runc, CNI and kube-proxy per member, with the
// member's cluster DNS (kfed's CoreDNS with the kubernetes plugin) behind
// the kube-dns Service, and checks what a user checks first from inside a
// cluster: that a pod resolves and reaches a federated name, and an
// export's clusterset.local name through its ClusterSetIP.
//
// It needs root, cgroups, network namespaces and the node binaries, and
// costs minutes, so it runs only with KFED_REAL_NODES=1 (make test-nodes).
package nodes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	kfedscheme "github.com/kfed-io/kfed/api/scheme"
	"github.com/kfed-io/kfed/controllers/mcs"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/framework"
)

// realNodeOptions builds or finds every binary and image a real node needs,
// as make test-nodes does: the hack scripts' cached builds, Debian's runc
// and CNI plugins, kfed's CoreDNS with -tags kubernetes, and the node
// images.
func realNodeOptions(t *testing.T, bin string) devenv.RealNodeOptions {
	t.Helper()
	root := framework.RepoRoot(t)
	script := func(name string) string {
		cmd := exec.Command(filepath.Join(root, "hack", name))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("hack/%s: %v", name, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return lines[len(lines)-1]
	}
	o := devenv.RealNodeOptions{
		KubeletDir:    filepath.Dir(script("kubelet.sh")),
		ContainerdDir: filepath.Dir(script("containerd.sh")),
		Runc:          script("install-runc.sh"),
		CNIDir:        script("install-cni.sh"),
		CoreDNS:       filepath.Join(bin, "coredns-kubernetes"),
	}
	build := exec.Command("go", "build", "-tags", "kubernetes", "-o", o.CoreDNS, "./cmd/coredns")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building CoreDNS with the kubernetes plugin: %v\n%s", err, out)
	}
	images := filepath.Join(bin, "nodeimages")
	gen := exec.Command("go", "run", "./hack/nodeimages", "-out", images)
	gen.Dir = root
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("building the node images: %v\n%s", err, out)
	}
	for _, name := range []string{"pause", "netshoot", "socat"} {
		o.Images = append(o.Images, filepath.Join(images, name))
	}
	return o
}

// TestPodsResolveAndReachThroughTheirClusterDNS starts one bed of three
// members with a real node each and checks, from pods on those nodes, what
// a user checks first: that a federated Service's global name and an
// export's clusterset.local name resolve through the pod's own resolv.conf
// and that what they name answers.
func TestPodsResolveAndReachThroughTheirClusterDNS(t *testing.T) {
	if !realNodes() {
		t.Skip("real nodes need root and minutes: KFED_REAL_NODES=1 (make test-nodes)")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/coredns", "./cmd/kfed-healthcheck")
	build.Dir = framework.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building CoreDNS: %v\n%s", err, out)
	}
	nodes := realNodeOptions(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	lbBase := framework.ClaimLBBase(t, 3)
	// Without simulated workloads (no controller manager, scheduler or
	// KWOK) the bed is lighter: the pods name their node, and the test
	// writes the EndpointSlices of its Services itself.
	d, err := devenv.StartDev(ctx, devenv.DevOptions{
		Dir: t.TempDir(), BinDir: framework.BinDir(t), Members: 3, Federation: "dev", Domain: "kfed.test",
		LBBase:  lbBase,
		CoreDNS: filepath.Join(bin, "coredns"), Checker: filepath.Join(bin, "kfed-healthcheck"),
		Log: logr.Discard(), RealNodes: &nodes,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	// BENCHMARKS.md, "Real nodes": each node's start, and what its own
	// processes hold and used by then and at the end.
	usage := func(when string) {
		for _, n := range d.Nodes {
			rss, cpu, err := n.Usage()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: RSS %d MiB, CPU %s", n.Name, when, rss>>20, cpu.Round(10*time.Millisecond))
		}
	}
	for _, n := range d.Nodes {
		t.Logf("%s Ready with its cluster DNS in %s", n.Name, n.Started.Round(100*time.Millisecond))
	}
	usage("once Ready")
	defer usage("at the end")
	t.Run("a pod in cluster-2 resolves the demo's global name and fetches the page", func(t *testing.T) {
		demoFromCluster2(ctx, t, d, lbBase)
	})
	t.Run("a pod in cluster-3 resolves an export's clusterset.local name and connects through the ClusterSetIP", func(t *testing.T) {
		clustersetFromCluster3(ctx, t, d)
	})
}

// demoFromCluster2: in cluster-2, a pod in its own network namespace
// resolves the demo Service's global name through the resolv.conf the
// kubelet wrote (nameserver: the kube-dns Service, which kube-proxy sends
// to the member's CoreDNS), gets cluster-2's endpoint first (its shard's
// cluster IP) and fetches the demo page through it, from a pod behind it;
// a host-network pod resolves the same and reaches cluster-1's endpoint, a
// loopback load balancer on the host.
func demoFromCluster2(ctx context.Context, t *testing.T, d *devenv.Dev, lbBase int) {
	m := onNode(t, d, 1)
	// The demo's page in cluster-2 comes from a pod on the real node
	// behind the shard's cluster IP.
	backend := toolsPod("demo", m.node.Name, false)
	backend.Labels = map[string]string{"app": "demo"}
	backend.Spec.Containers[0].Command = serve("cluster-2 default/demo")
	pod := toolsPod("resolver", m.node.Name, false)
	hostPod := toolsPod("fetcher", m.node.Name, true)
	running := m.start(ctx, t, backend, pod, hostPod)
	shard, err := m.cs.CoreV1().Services("default").Get(ctx, "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.endpoints(ctx, t, "demo", running["demo"])
	resolv, err := m.run(ctx, "exec", pod.Name, "--", "cat", "/etc/resolv.conf")
	if err != nil {
		t.Fatalf("reading the pod's resolv.conf: %v\n%s", err, resolv)
	}
	if !strings.Contains(resolv, "nameserver "+devenv.ClusterDNSIP) || !strings.Contains(resolv, "search default.svc.cluster.local") {
		t.Fatalf("the pod's resolv.conf does not name the cluster DNS:\n%s", resolv)
	}
	// Inside cluster-2 its own endpoint is its shard's cluster IP (so that
	// its clients stay inside it), first; cluster-1's and cluster-3's
	// load-balancer addresses (127.(lbBase+i).0.0/16) follow.
	name := d.Demo + "."
	cluster1 := fmt.Sprintf("127.%d.", lbBase)
	var addrs []string
	var lb1 string // cluster-1's load balancer
	for _, p := range []*corev1.Pod{pod, hostPod} {
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
			out, err := m.run(ctx, "exec", p.Name, "--", "nslookup", name)
			if err != nil {
				return fmt.Errorf("nslookup in %s: %v\n%s", p.Name, err, out)
			}
			addrs = nslookupAddresses(out)
			lb1 = ""
			for _, a := range addrs {
				if strings.HasPrefix(a, cluster1) {
					lb1 = a
				}
			}
			if len(addrs) != 3 || addrs[0] != shard.Spec.ClusterIP || lb1 == "" {
				return fmt.Errorf("%s in %s: want cluster-2's cluster IP %s first, and cluster-1's %s* among three; got %v\n%s",
					name, p.Name, shard.Spec.ClusterIP, cluster1, addrs, out)
			}
			return nil
		})
	}
	// The first address, through kube-proxy, from the pod's own network.
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		page, err := m.httpGet(ctx, pod.Name, addrs[0], 8080)
		if err != nil || !strings.Contains(page, "cluster-2 default/demo") {
			return fmt.Errorf("the demo page from %s: %v: %q", addrs[0], err, page)
		}
		return nil
	})
	// cluster-1's address is its loopback load balancer's on the host: a
	// pod's own loopback is not the host's, so only a host-network pod
	// reaches it (through the node's forwarder).
	page, err := m.httpGet(ctx, hostPod.Name, lb1, 8080)
	if err != nil || !strings.Contains(page, "cluster-1 default/demo") {
		t.Fatalf("the demo page from cluster-1's %s: %v: %q", lb1, err, page)
	}
}

// clustersetFromCluster3: cluster-3 exports a Service of type ClusterIP
// whose endpoint is a pod on its real node; kfed imports it in every
// member, with a derived Service holding the ClusterSetIP in each (ADR
// 0011). A pod in cluster-3 resolves echo.default.svc.clusterset.local
// through its own resolv.conf (the clusterset plugin of the member's
// cluster DNS), gets the ClusterSetIP, and connects to it: only
// kube-proxy's rules for the derived Service take it to the pod (the
// node's namespace drops any Service address they do not translate).
// The export is cluster-3's own: another member's pod addresses, which a
// ClusterSetIP import routes to for a ClusterIP export, are on another
// node's bridge, which no node reaches here (no flat pod network).
func clustersetFromCluster3(ctx context.Context, t *testing.T, d *devenv.Dev) {
	m := onNode(t, d, 2)
	backend := toolsPod("echo", m.node.Name, false)
	backend.Labels = map[string]string{"app": "echo"}
	backend.Spec.Containers[0].Command = serve("cluster-3 default/echo")
	pod := toolsPod("client", m.node.Name, false)
	running := m.start(ctx, t, backend, pod)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "echo"},
			// The Service's port is not the pod's: the ClusterSetIP serves
			// the Service's.
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	svc, err := m.cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.endpoints(ctx, t, "echo", running["echo"])
	scheme, err := kfedscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(m.member.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	export := &mcsv1beta1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default"}}
	if err := c.Create(ctx, export); err != nil {
		t.Fatal(err)
	}
	// The import's ClusterSetIP is the derived Service's cluster IP, not
	// the exported Service's.
	var ip string
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		var imp mcsv1beta1.ServiceImport
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "echo"}, &imp); err != nil {
			return fmt.Errorf("the import in cluster-3: %w", err)
		}
		var derived corev1.Service
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: mcs.DerivedName("echo")}, &derived); err != nil {
			return fmt.Errorf("the derived Service in cluster-3: %w", err)
		}
		if len(imp.Spec.IPs) == 0 || imp.Spec.IPs[0] != derived.Spec.ClusterIP || imp.Spec.IPs[0] == svc.Spec.ClusterIP {
			return fmt.Errorf("import ips %v, derived Service's cluster IP %s, the Service's %s",
				imp.Spec.IPs, derived.Spec.ClusterIP, svc.Spec.ClusterIP)
		}
		ip = imp.Spec.IPs[0]
		return nil
	})
	// The name as an application writes it: relative, through the
	// resolv.conf's search list and ndots to the absolute name.
	name := "echo.default.svc.clusterset.local"
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		out, err := m.run(ctx, "exec", pod.Name, "--", "nslookup", name)
		if err != nil {
			return fmt.Errorf("nslookup in %s: %v\n%s", pod.Name, err, out)
		}
		if addrs := nslookupAddresses(out); len(addrs) != 1 || addrs[0] != ip {
			return fmt.Errorf("%s in %s: want the ClusterSetIP %s, got %v\n%s", name, pod.Name, ip, addrs, out)
		}
		return nil
	})
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		page, err := m.httpGet(ctx, pod.Name, ip, 80)
		if err != nil || !strings.Contains(page, "cluster-3 default/echo") {
			return fmt.Errorf("the echo page through the ClusterSetIP %s:80: %v: %q", ip, err, page)
		}
		return nil
	})
	// And by name, as the MCS conformance suite connects: the stand-in's
	// nc, whose resolver (glibc's) walks the search list itself.
	out, err := m.run(ctx, "exec", pod.Name, "--", "sh", "-c", "echo hi | nc -v -w 3 -4 "+name+" 80 2>&1")
	if err != nil || !strings.Contains(out, "cluster-3 default/echo") {
		t.Fatalf("nc to %s:80: %v: %q", name, err, out)
	}
}

// realNodes says whether real-node tests run: KFED_REAL_NODES=1.
func realNodes() bool { return os.Getenv("KFED_REAL_NODES") != "" }

// memberNode is a member with its real node, as the tests use them.
type memberNode struct {
	kubeconfig string // with a context named after the member
	member     *devenv.Cluster
	node       *devenv.RealNode
	cs         kubernetes.Interface
	kubectl    string // its path
}

// onNode is member i (0-based) and its node, with the default namespace's
// ServiceAccount, which no controller manager makes here (the pods mount
// no token, but the API server wants the account).
func onNode(t *testing.T, d *devenv.Dev, i int) *memberNode {
	t.Helper()
	m := &memberNode{kubeconfig: d.Kubeconfig, member: d.Members[i], node: d.Nodes[i], kubectl: filepath.Join(framework.BinDir(t), "kubectl")}
	cs, err := kubernetes.NewForConfig(m.member.Config)
	if err != nil {
		t.Fatal(err)
	}
	m.cs = cs
	m.defaultServiceAccount(t)
	return m
}

// defaultServiceAccount creates the default namespace's ServiceAccount
// unless a controller manager did.
func (m *memberNode) defaultServiceAccount(t *testing.T) {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default"}}
	if _, err := m.cs.CoreV1().ServiceAccounts("default").Create(context.Background(), sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// start creates the pods and returns them once each is Running, by name.
func (m *memberNode) start(ctx context.Context, t *testing.T, pods ...*corev1.Pod) map[string]*corev1.Pod {
	t.Helper()
	running := map[string]*corev1.Pod{}
	for _, p := range pods {
		if _, err := m.cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods {
		framework.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
			got, err := m.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("pod %s is %s: %+v", p.Name, got.Status.Phase, got.Status.ContainerStatuses)
			}
			running[p.Name] = got
			return nil
		})
	}
	return running
}

// endpoints writes the EndpointSlice of Service name that a controller
// manager would: the pod, ready, on port 8080 named http.
func (m *memberNode) endpoints(ctx context.Context, t *testing.T, name string, pod *corev1.Pod) {
	t.Helper()
	ready, port, proto, portName := true, int32(8080), corev1.ProtocolTCP, "http"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-real-node", Namespace: pod.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "test.kfed.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{pod.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}, NodeName: &m.node.Name, TargetRef: &corev1.ObjectReference{
				Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}},
		Ports: []discoveryv1.EndpointPort{{Name: &portName, Protocol: &proto, Port: &port}},
	}
	if _, err := m.cs.DiscoveryV1().EndpointSlices(pod.Namespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// run runs kubectl on the member.
func (m *memberNode) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, m.kubectl,
		append([]string{"--kubeconfig", m.kubeconfig, "--context", m.member.Name}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// httpGet is an HTTP GET from pod with socat: Debian's static busybox wget
// crashes (SIGSEGV) in a container without glibc's NSS modules.
func (m *memberNode) httpGet(ctx context.Context, pod, addr string, port int) (string, error) {
	return m.run(ctx, "exec", pod, "--", "sh", "-c",
		fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | socat -T 3 - TCP:%s:%d`, addr, port))
}

// serve is a tools pod's command answering every connection on port 8080
// with an HTTP page saying text.
func serve(text string) []string {
	return []string{"sh", "-c",
		`printf 'HTTP/1.0 200 OK\r\n\r\n` + text + `\n' >/tmp/page && exec socat TCP-LISTEN:8080,fork,reuseaddr 'SYSTEM:cat /tmp/page'`}
}

// toolsPod is a pod of the netshoot stand-in that sleeps on node, in its
// own network namespace or the node's.
func toolsPod(name, node string, hostNetwork bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:    node,
			HostNetwork: hostNetwork,
			Containers: []corev1.Container{{
				Name: "tools", Image: "docker.io/nicolaka/netshoot:v0.15", ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sleep", "3600"},
			}},
			TerminationGracePeriodSeconds: new(int64),
			AutomountServiceAccountToken:  new(false),
		},
	}
	if hostNetwork {
		p.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	return p
}

// nslookupAddresses are the addresses of busybox nslookup's answer, in its
// order (the server's own address comes before "Name:" and is skipped).
func nslookupAddresses(out string) []string {
	var addrs []string
	answer := false
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "Name:") {
			answer = true
			continue
		}
		if a, ok := strings.CutPrefix(line, "Address:"); ok && answer {
			addrs = append(addrs, strings.TrimSpace(a))
		}
	}
	return addrs
}
