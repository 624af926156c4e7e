// Package nodes runs pods on real nodes of `kfed dev up --real-nodes`'s bed:
// a kubelet, containerd and runc, CNI and kube-proxy per member, with the
// member's cluster DNS (kfed's CoreDNS with the kubernetes plugin) behind
// the kube-dns Service, and checks what a user checks first from inside a
// cluster: that a pod resolves and reaches a federated name.
//
// It needs root, cgroups, network namespaces and the node binaries, and
// costs minutes, so it runs only with KFED_REAL_NODES=1 (make test-nodes).
package nodes

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	"k8s.io/client-go/kubernetes"

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

// TestPodResolvesAndReachesTheDemoThroughItsClusterDNS: in cluster-2, a pod
// in its own network namespace resolves the demo Service's global name
// through the resolv.conf the kubelet wrote (nameserver: the kube-dns
// Service, which kube-proxy sends to the member's CoreDNS), gets cluster-2's
// endpoint first (its shard's cluster IP) and fetches the demo page through
// it, from a pod behind it; a host-network pod resolves the same and reaches
// cluster-1's endpoint, a loopback load balancer on the host.
func TestPodResolvesAndReachesTheDemoThroughItsClusterDNS(t *testing.T) {
	if os.Getenv("KFED_REAL_NODES") == "" {
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
	lbBase := 16 + rand.IntN(200)
	// Two members are enough for cluster-2 to have its own endpoint first,
	// and without simulated workloads (no controller manager, scheduler
	// or KWOK) the bed is lighter: the pods name their node.
	d, err := devenv.StartDev(ctx, devenv.DevOptions{
		Dir: t.TempDir(), BinDir: framework.BinDir(t), Members: 2, Federation: "dev", Domain: "kfed.test",
		LBBase:  lbBase,
		CoreDNS: filepath.Join(bin, "coredns"), Checker: filepath.Join(bin, "kfed-healthcheck"),
		Log: logr.Discard(), RealNodes: &nodes,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	// BENCHMARKS.md, "Real nodes": each node's start, and what its own
	// processes hold and used by then and a minute later, idle.
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
	member := d.Members[1]
	node := d.Nodes[1]
	cs, err := kubernetes.NewForConfig(member.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The demo's page in cluster-2 comes from a pod on the real node
	// behind the shard's cluster IP. No controller manager runs here, so
	// the test writes the shard's EndpointSlice itself.
	backend := toolsPod("demo", node.Name, false)
	backend.Labels = map[string]string{"app": "demo"}
	backend.Spec.Containers[0].Command = []string{"sh", "-c",
		`printf 'HTTP/1.0 200 OK\r\n\r\ncluster-2 default/demo\n' >/tmp/page && exec socat TCP-LISTEN:8080,fork,reuseaddr 'SYSTEM:cat /tmp/page'`}
	pod := toolsPod("resolver", node.Name, false)
	hostPod := toolsPod("fetcher", node.Name, true)
	// No controller manager makes the namespace's ServiceAccount; the
	// pods mount no token.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default"}}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	running := map[string]*corev1.Pod{}
	for _, p := range []*corev1.Pod{backend, pod, hostPod} {
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
			got, err := cs.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
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
	shard, err := cs.CoreV1().Services("default").Get(ctx, "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready, port, proto, portName := true, int32(8080), corev1.ProtocolTCP, "http"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-real-node", Namespace: "default",
			Labels: map[string]string{discoveryv1.LabelServiceName: "demo", discoveryv1.LabelManagedBy: "test.kfed.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{running["demo"].Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}, NodeName: &node.Name}},
		Ports: []discoveryv1.EndpointPort{{Name: &portName, Protocol: &proto, Port: &port}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(framework.BinDir(t), "kubectl"),
			append([]string{"--kubeconfig", d.Kubeconfig, "--context", member.Name}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// An HTTP GET with socat: Debian's static busybox wget crashes
	// (SIGSEGV) in a container without glibc's NSS modules.
	httpGet := func(pod, addr string) (string, error) {
		return kubectl("exec", pod, "--", "sh", "-c",
			`printf 'GET / HTTP/1.0\r\n\r\n' | socat -T 3 - TCP:`+addr+`:8080`)
	}
	resolv, err := kubectl("exec", pod.Name, "--", "cat", "/etc/resolv.conf")
	if err != nil {
		t.Fatalf("reading the pod's resolv.conf: %v\n%s", err, resolv)
	}
	if !strings.Contains(resolv, "nameserver "+devenv.ClusterDNSIP) || !strings.Contains(resolv, "search default.svc.cluster.local") {
		t.Fatalf("the pod's resolv.conf does not name the cluster DNS:\n%s", resolv)
	}
	// Inside cluster-2 its own endpoint is its shard's cluster IP (so that
	// its clients stay inside it), first; cluster-1's load-balancer address
	// (127.(lbBase).0.0/16) follows.
	name := d.Demo + "."
	other := fmt.Sprintf("127.%d.", lbBase)
	var addrs []string
	for _, p := range []*corev1.Pod{pod, hostPod} {
		framework.Eventually(t, 60*time.Second, func(context.Context) error {
			out, err := kubectl("exec", p.Name, "--", "nslookup", name)
			if err != nil {
				return fmt.Errorf("nslookup in %s: %v\n%s", p.Name, err, out)
			}
			addrs = nslookupAddresses(out)
			if len(addrs) != 2 || addrs[0] != shard.Spec.ClusterIP || !strings.HasPrefix(addrs[1], other) {
				return fmt.Errorf("%s in %s: want cluster-2's cluster IP %s, then cluster-1's %s*; got %v\n%s",
					name, p.Name, shard.Spec.ClusterIP, other, addrs, out)
			}
			return nil
		})
	}
	// The first address, through kube-proxy, from the pod's own network.
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		page, err := httpGet(pod.Name, addrs[0])
		if err != nil || !strings.Contains(page, "cluster-2 default/demo") {
			return fmt.Errorf("the demo page from %s: %v: %q", addrs[0], err, page)
		}
		return nil
	})
	// cluster-1's address is its loopback load balancer's on the host: a
	// pod's own loopback is not the host's, so only a host-network pod
	// reaches it (through the node's forwarder).
	page, err := httpGet(hostPod.Name, addrs[1])
	if err != nil || !strings.Contains(page, "cluster-1 default/demo") {
		t.Fatalf("the demo page from cluster-1's %s: %v: %q", addrs[1], err, page)
	}
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
