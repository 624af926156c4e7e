package devenv

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// RealNode is a running real node of one member.
type RealNode struct {
	// Name is the Node's name: <member>-node.
	Name    string
	Cluster string
	// NodeIP is the node's InternalIP, reachable from the host through the
	// veth pair; its cluster DNS listens there on port 53.
	NodeIP string
	// Netns is the node's network namespace (ip netns NAME).
	Netns string
	// Started is how long the node took from nothing to Ready with its
	// cluster DNS answering.
	Started time.Duration

	net      nodeNet
	dir      string // files, logs, containerd's root
	state    string // containerd's state and socket, the kubelet's root: short, for unix socket paths
	sock     string
	ctr      string
	procs    []*child // containerd first, stopped last
	kubelet  *child
	fwd      net.Listener
	fwdDone  sync.WaitGroup
	mu       sync.Mutex
	exposed  []net.Listener // Expose's
	stopped  bool           // by Stop: Expose opens no more
	cgroups  []string       // the cgroup roots made in each hierarchy
	stopOnce sync.Once
}

// StartRealNode gives member c a real node: a network namespace wired to
// the host by a veth pair, containerd with the CRI plugin, the images of
// o.Images, a kubelet registering the node with c's API server, kube-proxy
// and c's cluster DNS (kfed's CoreDNS with the kubernetes, kfed and
// clusterset plugins) behind the kube-dns Service at ClusterDNSIP. It
// returns once the node is Ready and the DNS answers. Env.Stop stops it
// before the API servers; on error what was made is undone.
func (e *Env) StartRealNode(ctx context.Context, c *Cluster, index int, o RealNodeOptions, fed KfedZone) (_ *RealNode, err error) {
	start := time.Now()
	n := &RealNode{Name: c.Name + "-node", Cluster: c.Name, net: newNodeNet(e.Dir, index)}
	n.NodeIP, n.Netns = n.net.NodeIP.String(), n.net.Netns
	n.dir = filepath.Join(e.Dir, "nodes", c.Name)
	n.state = filepath.Join("/run", n.net.Tag)
	n.sock = filepath.Join(n.state, "containerd.sock")
	n.ctr = filepath.Join(o.ContainerdDir, "ctr")
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil, errors.New("devenv: the environment is stopped")
	}
	c.node = n
	e.mu.Unlock()
	defer func() {
		if err != nil {
			n.Stop()
		}
	}()
	if err := n.makeNetwork(); err != nil {
		return nil, fmt.Errorf("real node of %s: network: %w", c.Name, err)
	}
	if err := n.makeCgroups(); err != nil {
		return nil, fmt.Errorf("real node of %s: cgroups: %w", c.Name, err)
	}
	if err := n.startContainerd(ctx, e.logDir, o); err != nil {
		return nil, fmt.Errorf("real node of %s: %w", c.Name, err)
	}
	for _, img := range o.Images {
		if err := n.importImage(ctx, img); err != nil {
			return nil, fmt.Errorf("real node of %s: %w", c.Name, err)
		}
	}
	kubeconfig := e.memberKubeconfig(c)
	if err := n.startKubelet(e.logDir, o, c, kubeconfig); err != nil {
		return nil, fmt.Errorf("real node of %s: %w", c.Name, err)
	}
	if err := n.startKubeProxy(e.logDir, o, kubeconfig); err != nil {
		return nil, fmt.Errorf("real node of %s: %w", c.Name, err)
	}
	if err := n.startClusterDNS(ctx, e.logDir, o, c, fed, kubeconfig); err != nil {
		return nil, fmt.Errorf("real node of %s: cluster DNS: %w", c.Name, err)
	}
	if err := n.waitReady(ctx, c); err != nil {
		return nil, fmt.Errorf("real node of %s: %w", c.Name, err)
	}
	n.Started = time.Since(start)
	return n, nil
}

// inNode runs the command in the node's network namespace, and nothing
// else of it: the node shares the host's mounts, so that what the kubelet
// mounts containerd sees.
func (n *RealNode) inNode(path string, args ...string) (string, []string) {
	return "nsenter", append([]string{"--net=/run/netns/" + n.net.Netns, "--", path}, args...)
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// makeNetwork creates the node's namespace and veth pair, a route for the
// Service range (the node's own connections to a Service need one to reach
// kube-proxy's rules; this kernel has no dummy devices), and the loopback
// forwarder.
func (n *RealNode) makeNetwork() error {
	nn := n.net
	ns := []string{"netns", "exec", nn.Netns, "ip"}
	steps := [][]string{
		{"netns", "add", nn.Netns},
		{"link", "add", nn.HostVeth, "type", "veth", "peer", "name", "eth0", "netns", nn.Netns},
		{"addr", "add", nn.HostIP.String() + "/24", "dev", nn.HostVeth},
		{"link", "set", nn.HostVeth, "up"},
		append(ns, "link", "set", "lo", "up"),
		append(ns, "addr", "add", nn.NodeIP.String()+"/24", "dev", "eth0"),
		append(ns, "link", "set", "eth0", "up"),
		append(ns, "route", "add", ServiceCIDR, "dev", "eth0"),
	}
	for _, s := range steps {
		if err := run("ip", s...); err != nil {
			return err
		}
	}
	// The veth carries nothing but to the host's end: a Service address
	// kube-proxy did not translate is dropped, not sent to the host. In
	// OUTPUT a packet kube-proxy translated (DNAT) is let through: the
	// kernel routes it anew to the pod, but OUTPUT's chains still see the
	// interface of its first route, the Service range's (eth0), so without
	// the exception the node's own connections to a Service whose endpoint
	// is a pod (its cluster DNS forwarding to one) fail with EPERM.
	link := netip.PrefixFrom(nn.HostIP, 24).Masked().String()
	for _, rule := range [][]string{
		{"OUTPUT", "-o", "eth0", "!", "-d", link, "-m", "conntrack", "!", "--ctstate", "DNAT", "-j", "DROP"},
		{"FORWARD", "-o", "eth0", "!", "-d", link, "-j", "DROP"},
	} {
		if err := run("ip", append([]string{"netns", "exec", nn.Netns, "iptables", "-w", "-A"}, rule...)...); err != nil {
			return err
		}
	}
	// Connections in the node to 127.0.0.0/8 (the API servers, the load
	// balancers) go to the forwarder, but for the node's own local ports
	// (kubelet 10248 and 10250, kube-proxy 10249 and 10256).
	ipt := []string{"netns", "exec", nn.Netns, "iptables", "-w", "-t", "nat"}
	fwd := strconv.Itoa(nodeForwardPort)
	for _, r := range [][]string{
		{"-N", "KFED-LOOPBACK"},
		{"-A", "OUTPUT", "-d", "127.0.0.0/8", "-p", "tcp", "-j", "KFED-LOOPBACK"},
		{"-A", "KFED-LOOPBACK", "-p", "tcp", "-m", "multiport", "--dports", "10248:" + fwd, "-j", "RETURN"},
		{"-A", "KFED-LOOPBACK", "-p", "tcp", "-j", "REDIRECT", "--to-ports", fwd},
	} {
		if err := run("ip", append(ipt, r...)...); err != nil {
			return err
		}
	}
	l, err := listenInNetns(nn.Netns, "127.0.0.1:"+fwd)
	if err != nil {
		return err
	}
	n.fwd = l
	n.fwdDone.Go(func() { forwardLoopback(l) })
	return nil
}

// listenInNetns opens a TCP listener inside the named network namespace;
// the socket stays there while this process lives in its own.
func listenInNetns(netns, addr string) (net.Listener, error) {
	target, err := os.Open("/run/netns/" + netns)
	if err != nil {
		return nil, err
	}
	defer target.Close()
	runtime.LockOSThread()
	self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer self.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("entering %s: %w", netns, err)
	}
	l, lerr := net.Listen("tcp", addr)
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked, so Go ends it rather than reuse it in
		// the node's namespace.
		if l != nil {
			l.Close()
		}
		return nil, fmt.Errorf("leaving %s: %w", netns, err)
	}
	runtime.UnlockOSThread()
	return l, lerr
}

// forwardLoopback accepts connections that the node's REDIRECT rule sent
// and joins each to the address it was meant for (SO_ORIGINAL_DST), dialled
// on the host's loopback: so the node reaches 127.x.y.z:p of the host.
func forwardLoopback(l net.Listener) {
	for {
		in, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			dst, err := originalDst(in.(*net.TCPConn))
			if err != nil {
				in.Close()
				return
			}
			joinConn(in.(*net.TCPConn), dst)
		}()
	}
}

// joinConn dials dst on the host and copies both ways until both sides
// are done, then closes in.
func joinConn(in *net.TCPConn, dst string) {
	defer in.Close()
	out, err := net.DialTimeout("tcp", dst, 5*time.Second)
	if err != nil {
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(out, in); out.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); in.CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

// originalDst is the address a redirected connection was sent to.
func originalDst(c *net.TCPConn) (string, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return "", err
	}
	var addr string
	var serr error
	err = raw.Control(func(fd uintptr) {
		// SO_ORIGINAL_DST (80) fills a sockaddr_in, which the 16-byte
		// IPv6Mreq getter carries.
		m, err := unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, 80)
		if err != nil {
			serr = err
			return
		}
		port := binary.BigEndian.Uint16(m.Multiaddr[2:4])
		ip := net.IP(m.Multiaddr[4:8])
		addr = net.JoinHostPort(ip.String(), strconv.Itoa(int(port)))
	})
	if err == nil {
		err = serr
	}
	return addr, err
}

// cgroupHierarchies are the cgroup v1 hierarchies (and v2's, if mounted)
// under /sys/fs/cgroup.
func cgroupHierarchies() ([]string, error) {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil, err
	}
	var hs []string
	for _, e := range entries {
		p := filepath.Join("/sys/fs/cgroup", e.Name())
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			hs = append(hs, p)
		}
	}
	return hs, nil
}

// makeCgroups creates the kubelet's cgroup root in every hierarchy: the
// kubelet requires it to exist, and puts kubepods below it.
func (n *RealNode) makeCgroups() error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		p := filepath.Join(h, n.net.Tag)
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			continue // a hierarchy that takes no child (read-only) is not the kubelet's either
		}
		n.cgroups = append(n.cgroups, p)
		// A new cpuset has no CPUs or memory nodes, and no task may join
		// it, nor its children inherit any: give it its parent's.
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(p, f), v, 0o644); err != nil {
					return fmt.Errorf("%s: %w", filepath.Join(p, f), err)
				}
			}
		}
	}
	return nil
}

func (n *RealNode) startContainerd(ctx context.Context, logDir string, o RealNodeOptions) error {
	cniConf := filepath.Join(n.dir, "cni")
	for _, d := range []string{n.state, cniConf, filepath.Join(n.dir, "containerd")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(cniConf, "10-kfed.conflist"),
		[]byte(cniConfig(n.net, filepath.Join(n.state, "cni"))), 0o644); err != nil {
		return err
	}
	cfg := filepath.Join(n.dir, "containerd.toml")
	if err := os.WriteFile(cfg, []byte(containerdConfig(filepath.Join(n.dir, "containerd"), n.state, n.sock,
		o.Runc, o.CNIDir, cniConf, n.net)), 0o644); err != nil {
		return err
	}
	// containerd finds its shim on PATH.
	path, args := n.inNode("env", "PATH="+o.ContainerdDir+":/usr/sbin:/usr/bin:/sbin:/bin",
		filepath.Join(o.ContainerdDir, "containerd"), "--config", cfg)
	p := newChild(n.Cluster+"-containerd", path, logDir, args...)
	if err := p.start(); err != nil {
		return err
	}
	n.procs = append(n.procs, p)
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return poll(wctx, 100*time.Millisecond, p, func(ctx context.Context) error {
		return exec.CommandContext(ctx, n.ctr, "--address", n.sock, "version").Run()
	})
}

// importImage loads an OCI layout into the node's containerd, in the CRI's
// namespace, under the name its index.json gives (io.containerd.image.name).
func (n *RealNode) importImage(ctx context.Context, layout string) error {
	f, err := os.CreateTemp("", "kfed-image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := tarDir(f, layout); err != nil {
		f.Close()
		return fmt.Errorf("archiving %s: %w", layout, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, n.ctr, "--address", n.sock, "-n", "k8s.io", "images", "import", f.Name()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("importing %s: %w: %s", layout, err, out)
	}
	return nil
}

// tarDir writes dir's files as a tar stream, paths relative to dir.
func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func (n *RealNode) startKubelet(logDir string, o RealNodeOptions, c *Cluster, kubeconfig string) error {
	resolv := filepath.Join(n.dir, "resolv.conf")
	// The node's own resolver, for pods with dnsPolicy Default: its cluster DNS.
	if err := os.WriteFile(resolv, []byte("nameserver "+n.NodeIP+"\n"), 0o644); err != nil {
		return err
	}
	cfg := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(cfg, []byte(kubeletConfig(n.net, n.sock, resolv, filepath.Join(n.dir, "pods"))), 0o644); err != nil {
		return err
	}
	labels := []string{"kfed.io/real-node=true"}
	if c.Region != "" {
		labels = append(labels, corev1.LabelTopologyRegion+"="+c.Region)
	}
	if len(c.Zones) > 0 {
		labels = append(labels, corev1.LabelTopologyZone+"="+c.Zones[0])
	}
	path, args := n.inNode(filepath.Join(o.KubeletDir, "kubelet"),
		"--config="+cfg, "--kubeconfig="+kubeconfig, "--root-dir="+filepath.Join(n.state, "kubelet"),
		"--hostname-override="+n.Name, "--node-ip="+n.NodeIP,
		"--node-labels="+strings.Join(labels, ","),
		// The simulated workloads keep to KWOK's nodes; a pod that names
		// this node (spec.nodeName) runs here.
		"--register-with-taints=kfed.io/real-node=true:NoSchedule",
		"--v=1")
	p := newChild(n.Cluster+"-kubelet", path, logDir, args...)
	if err := p.start(); err != nil {
		return err
	}
	n.procs, n.kubelet = append(n.procs, p), p
	return nil
}

// startKubeProxy runs kube-proxy with kubeconfig, whose current context
// must be the member's (memberKubeconfig's is): its configuration file names
// no context.
func (n *RealNode) startKubeProxy(logDir string, o RealNodeOptions, kubeconfig string) error {
	cfg := filepath.Join(n.dir, "kube-proxy.yaml")
	if err := os.WriteFile(cfg, []byte(kubeProxyConfig(n.net, kubeconfig, n.Name)), 0o644); err != nil {
		return err
	}
	path, args := n.inNode(filepath.Join(o.KubeletDir, "kube-proxy"), "--config="+cfg, "--v=1")
	p := newChild(n.Cluster+"-kube-proxy", path, logDir, args...)
	if err := p.start(); err != nil {
		return err
	}
	n.procs = append(n.procs, p)
	return nil
}

// startClusterDNS creates the kube-dns Service at ClusterDNSIP with the
// node's address as its endpoint and runs CoreDNS there, in the node's
// namespace; it returns once CoreDNS answers the federation zone's SOA.
func (n *RealNode) startClusterDNS(ctx context.Context, logDir string, o RealNodeOptions, c *Cluster, fed KfedZone, kubeconfig string) error {
	if err := n.ensureKubeDNS(ctx, c); err != nil {
		return err
	}
	corefile := filepath.Join(n.dir, "Corefile")
	if err := os.WriteFile(corefile, []byte(clusterDNSCorefile(n.net, fed, kubeconfig, c.Name, o.ZoneForward)), 0o644); err != nil {
		return err
	}
	path, args := n.inNode(o.CoreDNS, "-conf", corefile, "-dns.port", "53")
	p := newChild(n.Cluster+"-cluster-dns", path, logDir, args...)
	if err := p.start(); err != nil {
		return err
	}
	n.procs = append(n.procs, p)
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// A forwarded zone answers once its server runs, later: cluster.local
	// says the DNS is up.
	zone := fed.Zone + "."
	if o.ZoneForward != "" {
		zone = "cluster.local."
	}
	return poll(wctx, 200*time.Millisecond, p, func(ctx context.Context) error {
		return answersSOA(ctx, net.JoinHostPort(n.NodeIP, "53"), zone)
	})
}

// Expose makes hostAddr, an address on the host's loopback, reachable from
// the node's pods at the returned address on the node's own: what a pod of
// a real member reaches through a load balancer in front of the federation's
// API server. A pod's own loopback is not the host's, and the node's
// forwarder serves only the node's namespace. It lasts until Stop.
func (n *RealNode) Expose(hostAddr string) (string, error) {
	l, err := listenInNetns(n.net.Netns, net.JoinHostPort(n.NodeIP, "0"))
	if err != nil {
		return "", fmt.Errorf("exposing %s on node %s: %w", hostAddr, n.Name, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		l.Close()
		return "", fmt.Errorf("exposing %s on node %s: the node is stopped", hostAddr, n.Name)
	}
	n.exposed = append(n.exposed, l)
	n.fwdDone.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go joinConn(in.(*net.TCPConn), hostAddr)
		}
	})
	return l.Addr().String(), nil
}

// ensureKubeDNS writes the kube-dns Service (no selector: CoreDNS is not a
// pod here) and its EndpointSlice naming the node's address.
func (n *RealNode) ensureKubeDNS(ctx context.Context, c *Cluster) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	ports := []corev1.ServicePort{
		{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53},
		{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec: corev1.ServiceSpec{ClusterIP: ClusterDNSIP, Ports: ports},
	}
	if _, err := cs.CoreV1().Services(metav1.NamespaceSystem).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating kube-system/kube-dns: %w", err)
	}
	ready := true
	var eps []discoveryv1.EndpointPort
	for _, p := range ports {
		eps = append(eps, discoveryv1.EndpointPort{Name: &p.Name, Protocol: &p.Protocol, Port: &p.Port})
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-" + n.Name, Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: "kube-dns",
				discoveryv1.LabelManagedBy:   "devenv.kfed.io",
			}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{n.NodeIP},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}, NodeName: &n.Name}},
		Ports: eps,
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the EndpointSlice of kube-dns: %w", err)
	}
	return nil
}

// waitReady waits until the node is Ready in c.
func (n *RealNode) waitReady(ctx context.Context, c *Cluster) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	return poll(wctx, 250*time.Millisecond, n.kubelet, func(ctx context.Context) error {
		node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("node %s is not Ready", n.Name)
	})
}

// Stop stops the node and removes what it made, so that nothing is left:
// the kubelet first (it would restart what is killed), then every
// container and its shim, kube-proxy, the DNS and containerd, then the
// mounts under the node's folders, its cgroups, its network namespace
// (which takes the veth pair, the bridge and every iptables rule with it)
// and the kubelet's log links. It is safe to call more than once.
func (n *RealNode) Stop() {
	n.stopOnce.Do(func() {
		for i := len(n.procs) - 1; i >= 1; i-- { // all but containerd, newest first
			n.procs[i].stop(5 * time.Second)
		}
		n.removeContainers()
		if len(n.procs) > 0 {
			n.procs[0].stop(5 * time.Second)
		}
		n.killShims()
		if n.fwd != nil {
			n.fwd.Close()
		}
		n.mu.Lock()
		n.stopped = true
		for _, l := range n.exposed {
			l.Close()
		}
		n.mu.Unlock()
		n.fwdDone.Wait()
		unmountUnder(n.dir, n.state)
		for i := len(n.cgroups) - 1; i >= 0; i-- {
			removeCgroupTree(n.cgroups[i])
		}
		_ = run("ip", "netns", "del", n.net.Netns)
		removeLogLinks(n.dir)
		_ = os.RemoveAll(n.state)
	})
}

// removeContainers kills and deletes every task and container the node's
// containerd runs.
func (n *RealNode) removeContainers() {
	if len(n.procs) == 0 || !n.procs[0].running() {
		return
	}
	ctr := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, _ := exec.CommandContext(ctx, n.ctr, append([]string{"--address", n.sock, "-n", "k8s.io"}, args...)...).Output()
		return string(out)
	}
	ids := strings.Fields(ctr("containers", "list", "-q"))
	for _, id := range ids {
		ctr("tasks", "delete", "--force", id)
	}
	if len(ids) > 0 {
		ctr(append([]string{"containers", "delete"}, ids...)...)
	}
}

// killShims ends the runc shims of the node's containerd that outlived it
// (a shim leaves its parent's process group on purpose): each names the
// node's socket on its command line.
func (n *RealNode) killShims() {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmd), "containerd-shim") || !strings.Contains(string(cmd), n.sock) {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// unmountUnder detaches every mount below the given folders, deepest first.
func unmountUnder(dirs ...string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		for _, d := range dirs {
			abs, _ := filepath.Abs(d)
			if mp == abs || strings.HasPrefix(mp, abs+"/") {
				points = append(points, mp)
			}
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		_ = unix.Unmount(p, unix.MNT_DETACH)
	}
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeCgroupTree removes a cgroup and its children, deepest first (a
// cgroup goes only when empty of children and tasks).
func removeCgroupTree(root string) {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i])
	}
}

// removeLogLinks removes the links the kubelet made in /var/log/containers
// to container logs under dir.
func removeLogLinks(dir string) {
	abs, _ := filepath.Abs(dir)
	entries, _ := os.ReadDir("/var/log/containers")
	for _, e := range entries {
		p := filepath.Join("/var/log/containers", e.Name())
		if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, abs+"/") {
			_ = os.Remove(p)
		}
	}
}

// Usage is what the node's own processes (containerd, kubelet, kube-proxy
// and the cluster DNS; not the shims nor the containers) hold and have
// used: their resident memory now and their CPU time since they started.
func (n *RealNode) Usage() (rss int64, cpu time.Duration, err error) {
	for _, p := range n.procs {
		if !p.running() {
			continue
		}
		pid := strconv.Itoa(p.p.Pid())
		status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
		if err != nil {
			return 0, 0, err
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				rss += kb << 10
			}
		}
		stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
		if err != nil {
			return 0, 0, err
		}
		// Fields 14 and 15 (utime, stime) in clock ticks of 1/100 s, counted
		// after the command's closing parenthesis.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 12 {
			ut, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			cpu += time.Duration(ut+st) * 10 * time.Millisecond
		}
	}
	return rss, cpu, nil
}
