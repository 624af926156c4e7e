package devenv

import (
	"crypto/sha256"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
)

// RealNodeOptions say where the binaries and images of real nodes are
// (kfed dev up --real-nodes): one node per member beside its simulated
// ones, with a kubelet, containerd and Debian's runc, CNI, kube-proxy and
// the member's cluster DNS.
type RealNodeOptions struct {
	// KubeletDir holds kubelet and kube-proxy (hack/kubelet.sh).
	KubeletDir string
	// ContainerdDir holds containerd, containerd-shim-runc-v2 and ctr
	// (hack/containerd.sh).
	ContainerdDir string
	// Runc is Debian's runc (hack/install-runc.sh); CNIDir holds the CNI
	// plugins bridge, host-local, loopback and portmap (hack/install-cni.sh).
	Runc   string
	CNIDir string
	// CoreDNS is kfed's CoreDNS built with -tags kubernetes: the member's
	// cluster DNS.
	CoreDNS string
	// Images are OCI layouts imported into every node's containerd: the
	// sandbox image registry.k8s.io/pause:3.10 at least (hack/nodeimages).
	Images []string
	// ZoneForward, if set, is where the cluster DNS forwards the
	// federation's zone (HOST:PORT) instead of serving it with kfed's
	// plugin: the Helm chart's kfed CoreDNS Service, as the chart's
	// dnsForward stanza lays it out for a cluster's own DNS.
	ZoneForward string
}

// SandboxImage is the pause image the nodes' containerd runs each pod's
// sandbox with; it cannot be pulled here, so hack/nodeimages builds it.
const SandboxImage = "registry.k8s.io/pause:3.10"

// Real nodes' fixed addresses. The Service range is the members' API
// servers' (--service-cluster-ip-range).
const (
	ServiceCIDR  = "10.96.0.0/16"
	ClusterDNSIP = "10.96.0.10"
	// nodeForwardPort is where, inside a node's network namespace, the
	// forwarder to the host's loopback listens (loopbackForwarder).
	nodeForwardPort = 10260
)

// nodeNet is the addressing of member i's (0-based) real node. Each node
// has its own network namespace, joined to the host only by a veth pair
// on a /24 of its own; its pods sit on a bridge in the node's namespace.
// Nothing routes beyond: the node's namespace has no default route.
type nodeNet struct {
	Netns    string       // ip netns name
	HostVeth string       // the host's end of the veth pair (≤ 15 bytes)
	HostIP   netip.Addr   // the host's end: 172.30.(i+1).1
	NodeIP   netip.Addr   // the node's InternalIP: 172.30.(i+1).2
	PodCIDR  netip.Prefix // 10.(100+i+1).0.0/24, on the bridge kfed0
	Gateway  netip.Addr   // the bridge's address, .1 of PodCIDR
	Tag      string       // names the node's cgroup root and socket dir
}

// newNodeNet names member i's node after dir (so that two beds' names
// differ) and places it. It serves up to 150 members.
func newNodeNet(dir string, i int) nodeNet {
	abs, _ := filepath.Abs(dir)
	sum := sha256.Sum256([]byte(abs))
	tag := fmt.Sprintf("kfed%x-%d", sum[:3], i+1)
	n := i + 1
	return nodeNet{
		Netns:    tag,
		HostVeth: fmt.Sprintf("kn%x-%d", sum[:3], n),
		HostIP:   netip.AddrFrom4([4]byte{172, 30, byte(n), 1}),
		NodeIP:   netip.AddrFrom4([4]byte{172, 30, byte(n), 2}),
		PodCIDR:  netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(100 + n), 0, 0}), 24),
		Gateway:  netip.AddrFrom4([4]byte{10, byte(100 + n), 0, 1}),
		Tag:      tag,
	}
}

// cniConfig is the node's pod network: a bridge in the node's namespace
// that is each pod's gateway, host-local addresses from PodCIDR (its state
// under dataDir, not /var/lib/cni), and portmap for hostPorts.
func cniConfig(n nodeNet, dataDir string) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "kfed",
  "plugins": [
    {"type": "bridge", "bridge": "kfed0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q, "gateway": %q}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, dataDir, n.PodCIDR.String(), n.Gateway.String())
}

// containerdConfig runs the CRI plugin with Debian's runc (cgroupfs),
// the node's CNI configuration and the sandbox image built here. The VM
// forbids lowering oom_score_adj, which the kubelet asks for sandboxes, so
// restrict_oom_score_adj clamps it (without it every sandbox fails:
// "can't get final child's PID from pipe: EOF"). Pods' network namespaces
// are mounted under state, not /run/netns, so that Stop finds them. NRI is
// off: its socket is one per machine.
func containerdConfig(root, state, sock, runc, cniBin, cniConf string, n nodeNet) string {
	return fmt.Sprintf(`version = 3
root = %q
state = %q

[grpc]
  address = %q

[plugins.'io.containerd.nri.v1.nri']
  disable = true

[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = %q
  stream_server_port = "0"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %q

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %q
        Root = %q
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%q]
    conf_dir = %q
`, root, state, sock, n.NodeIP.String(), SandboxImage,
		runc, filepath.Join(state, "runc"), cniBin, cniConf)
}

// kubeletConfig is the node's kubelet: cgroup v1 with cgroupfs under a
// cgroup root of its own (several nodes share the machine), no swap check,
// anonymous access on the node's address only (the API server has no
// client certificate for kubelets; nothing outside the bed reaches it),
// cluster DNS at the kube-dns Service, and no eviction or image garbage
// collection for a shared disk to trigger.
func kubeletConfig(n nodeNet, sock, resolvConf, podLogs string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%s
failSwapOn: false
containerRuntimeEndpoint: unix://%s
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
clusterDNS: [%s]
clusterDomain: cluster.local
resolvConf: %s
podLogsDir: %s
maxPods: 30
evictionHard: {memory.available: "10Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%", imagefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
`, n.Tag, sock, n.NodeIP, ClusterDNSIP, resolvConf, podLogs)
}

// kubeProxyConfig is the node's kube-proxy in iptables mode, in the node's
// namespace. It leaves conntrack's sysctls alone (a namespace other than the
// host's may not set them) and masquerades all Service traffic, so that a
// pod reaching a Service whose endpoint is on the same bridge gets its
// answer back through the node (the bridge does not pass through netfilter).
func kubeProxyConfig(n nodeNet, kubeconfig, node string) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
clusterCIDR: %s
mode: iptables
iptables:
  masqueradeAll: true
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
`, kubeconfig, node, n.PodCIDR)
}

// clusterDNSCorefile is the member's cluster DNS on the node's address, as
// deploy/coredns/Corefile lays it out for a real cluster: the kubernetes
// plugin for cluster.local and the reverse zones, the federation's zone
// handed to kfed's plugin and clusterset.local to the clusterset plugin.
// Nothing is forwarded out of the machine. With forward set (an address
// in the bed, the chart's CoreDNS Service) the federation's zone goes
// there instead, and clusterset.local is not served.
func clusterDNSCorefile(n nodeNet, fed KfedZone, memberKubeconfig, memberContext, forward string) string {
	var b strings.Builder
	fmt.Fprintf(&b, ".:53 {\n\tbind %s\n\terrors\n\tkubernetes cluster.local in-addr.arpa ip6.arpa {\n", n.NodeIP)
	fmt.Fprintf(&b, "\t\tkubeconfig %q %s\n\t\tpods insecure\n\t\tfallthrough in-addr.arpa ip6.arpa\n\t}\n}\n",
		memberKubeconfig, memberContext)
	if forward != "" {
		fmt.Fprintf(&b, "%s:53 {\n\tbind %s\n\terrors\n\tforward . %s\n}\n", fed.Zone, n.NodeIP, forward)
		return b.String()
	}
	fed.Bind = n.NodeIP.String()
	if fed.Clusterset != nil {
		cs := *fed.Clusterset
		cs.Bind = fed.Bind
		fed.Clusterset = &cs
	}
	b.WriteString(KfedCorefile(fed))
	return b.String()
}
