package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/devenv"
)

// devOptions are the flags of kfed dev up.
type devOptions struct {
	dir        string
	binDir     string
	federation string
	domain     string
	workloads  bool
	lbBase     int
	coredns    string
	checker    string
	// members is how many member clusters to start, 1 … maxDevMembers.
	members int
	// light starts light members (devenv.DevOptions.LightMembers); unless
	// set on the command line, above three members.
	light bool
	// inventory is "" or "clusterprofile" (devenv.DevOptions.Inventory).
	inventory string
	// realNodes gives each member a real node (devenv.RealNodeOptions,
	// found by realNodeOptions).
	realNodes bool
}

// maxDevMembers bounds --members. Each member is a kube-apiserver process
// (about 300 MB resident, light or not) and a CoreDNS, all started
// together on one etcd: thirty light members are what the 2-core, 24 GiB
// machine of BENCHMARKS.md ("kfed dev up with N members") brings up,
// and what issue #35 asks the test bed to reach. More would starve a
// shared machine of memory and its two cores of time.
const maxDevMembers = 30

// validate refuses a member count kfed dev up cannot start.
func (o *devOptions) validate() error {
	if o.members < 1 || o.members > maxDevMembers {
		return fmt.Errorf("--members %d: want 1 to %d (each member is a kube-apiserver and a CoreDNS on this machine)", o.members, maxDevMembers)
	}
	if o.inventory != "" && o.inventory != kfedv1alpha1.InventoryClusterProfile {
		return fmt.Errorf("--inventory %q: want %q or nothing", o.inventory, kfedv1alpha1.InventoryClusterProfile)
	}
	// Member i's load balancer has 127.(lb-base+i).0.0/16, and 127.0.0.0/16
	// holds the servers themselves.
	if o.lbBase < 1 || o.lbBase+o.members-1 > 255 {
		return fmt.Errorf("--lb-base %d with %d members: the members' blocks 127.(lb-base+i).0.0/16 must lie between 127.1 and 127.255", o.lbBase, o.members)
	}
	return nil
}

func newDevCommand() *cobra.Command {
	dev := groupOf(&cobra.Command{
		Use:     "dev",
		Short:   "Run a local federation for development",
		Example: "  kfed dev up --members 3",
	})
	o := devOptions{members: 3}
	up := &cobra.Command{
		Use:   "up",
		Short: "Start a federation control plane and member clusters (three by default) on loopback",
		Long: `Up starts, on 127.0.0.1, an etcd, a kube-apiserver for the federation control plane and one for
each of --members member clusters (with a scheduler, a controller manager and simulated KWOK nodes each),
a loopback load balancer and Gateway, a health checker and a CoreDNS per member, and kfed's controller;
joins the members; creates the federated Service default/demo and Gateway default/demo-gw; and runs until
interrupted, then stops every process it started.

Members are cluster-1 … cluster-N, placed in turn as the default three: cluster-i is
  us-east1/us-east1-b          when i mod 3 = 1,
  us-east1/us-east1-c          when i mod 3 = 2,
  europe-west1/europe-west1-b  when i mod 3 = 0.

Light members (--light; the default above three members) have only what federated Services and their
DNS need: the API server, the Cluster registration, the loopback load balancer and the CoreDNS. They run
no scheduler, controller manager, KWOK nor Gateway (so there is no demo Gateway), and only the first three
members run a health checker; those three judge every endpoint by quorum, as in the three-member bed.

With --inventory clusterprofile the members are not joined: each is listed as a ClusterProfile (Cluster
Inventory API) in the namespace kfed-fleet of the control plane, with its region and zones as properties,
ControlPlaneHealthy, and the access provider kfed-dev: an exec plugin (kfed dev credential) that reads
the member's ServiceAccount token from the Secret kfed-fleet-tokens/<member>. kfed's controller reads
the profiles through the provider file DIR/clusterprofile-providers.json and federates to them the same way.`,
		Example: `  # Three members, then in another shell:
  kfed dev up
  set -a; . .kfed-dev/env; set +a; kfed status

  # Ten light members in another folder:
  kfed dev up --members 10 --dir /tmp/kfed-10

  # The members listed only as ClusterProfiles, as a fleet manager lists them:
  kfed dev up --inventory clusterprofile

  # A real node in each member (kubelet, containerd, cluster DNS; Linux, as root):
  make dev-nodes`,
		Args: maxArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("light") {
				o.light = o.members > 3
			}
			return devUp(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	up.Flags().IntVar(&o.members, "members", 3, "how many member clusters to start, 1 to 30")
	up.Flags().BoolVar(&o.light, "light", false, "light members: no workloads, Gateways, or checkers beyond the first three (default: on above 3 members)")
	up.Flags().StringVar(&o.inventory, "inventory", "", "clusterprofile: list the members as ClusterProfiles reached through an exec plugin instead of joining them")
	up.Flags().StringVar(&o.dir, "dir", ".kfed-dev", "folder for the kubeconfig, env file, data and logs")
	up.Flags().StringVar(&o.binDir, "bin-dir", os.Getenv("KFED_BIN"), "folder with kube-apiserver, etcd, kubectl, … (default: $KFED_BIN, else hack/test-binaries.sh --print)")
	up.Flags().StringVar(&o.federation, "federation", "dev", "federation name, the F in S.N.F.svc.D")
	up.Flags().StringVar(&o.domain, "domain", "kfed.test", "DNS suffix, the D in S.N.F.svc.D")
	up.Flags().BoolVar(&o.workloads, "workloads", true, "run schedulers, controller managers and KWOK nodes so Deployments get Pods")
	up.Flags().IntVar(&o.lbBase, "lb-base", 100, "member i's load balancer gives out 127.(lb-base+i).0.0/16")
	up.Flags().StringVar(&o.coredns, "coredns", "", "CoreDNS built with the kfed plugin (default: coredns beside the kfed binary; make dev builds it)")
	up.Flags().BoolVar(&o.realNodes, "real-nodes", false, "give each member a real node: kubelet, containerd, runc, CNI, kube-proxy and the member's cluster DNS (Linux, root; make dev-nodes builds them)")
	up.Flags().StringVar(&o.checker, "healthcheck", "", "the kfed-healthcheck agent (default: kfed-healthcheck beside the kfed binary; make dev builds it)")
	dev.AddCommand(up, newDevCredentialCommand())
	return dev
}

// newDevCredentialCommand is the dev bed's exec credential plugin for its
// ClusterProfiles' access provider (KEP-5339), hidden: client-go runs it
// with KUBERNETES_EXEC_INFO, whose spec.cluster.config names the member,
// and it prints an ExecCredential with the member's token from the
// control plane's Secret NAMESPACE/<member>.
func newDevCredentialCommand() *cobra.Command {
	var kf kubeconfigFlags
	var namespace string
	cmd := &cobra.Command{
		Use:   "credential",
		Short: "Print a member's token as an ExecCredential (the dev bed's access provider plugin)",
		Example: `  # as client-go runs it for the access provider kfed-dev (DIR/clusterprofile-providers.json)
  KUBERNETES_EXEC_INFO='{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false,"cluster":{"server":"https://127.0.0.1:6443","config":{"clusterName":"cluster-1"}}}}' \
    kfed dev credential --kubeconfig .kfed-dev/kubeconfig --context federation`,
		Hidden: true,
		Args:   maxArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kf.restConfig()
			if err != nil {
				return err
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			cred, err := devenv.ExecCredential(ctx, cs, namespace, []byte(os.Getenv("KUBERNETES_EXEC_INFO")))
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(cred)
		},
	}
	kf.add(cmd, "context")
	cmd.Flags().StringVar(&namespace, "namespace", devenv.TokenNamespace, "the namespace of the tokens' Secrets")
	return cmd
}

// devUp starts the environment (devenv.StartDev), reports it ready, and
// runs it until ctx ends or a component running in the background fails.
func devUp(ctx context.Context, out io.Writer, o devOptions) error {
	start := time.Now()
	if err := o.validate(); err != nil {
		return err
	}
	dir, err := o.complete()
	if err != nil {
		return err
	}
	log, closeLog, err := openDevLog(dir)
	if err != nil {
		return err
	}
	defer closeLog()
	self, err := os.Executable() // the credential plugin of an inventory
	if err != nil {
		return err
	}
	var nodes *devenv.RealNodeOptions
	if o.realNodes {
		if nodes, err = realNodeOptions(); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "kfed dev: starting etcd and %d API servers in %s\n", o.members+1, dir)
	d, err := devenv.StartDev(ctx, devenv.DevOptions{
		Dir: dir, BinDir: o.binDir, Members: o.members, Federation: o.federation, Domain: o.domain,
		Workloads: o.workloads, LightMembers: o.light, LBBase: o.lbBase, CoreDNS: o.coredns, Checker: o.checker, Log: log,
		Inventory: o.inventory, CredentialPlugin: []string{self, "dev", "credential"},
		RealNodes: nodes,
	})
	if err != nil {
		return err
	}
	defer d.Stop()
	printNextSteps(out, d, o.workloads && !o.light)
	if o.inventory != "" {
		fmt.Fprintf(out, "  members listed as ClusterProfiles: kubectl get clusterprofiles -n %s (access providers: %s)\n",
			devenv.ProfileNamespace, filepath.Join(dir, devenv.ProviderFile))
	}
	for _, n := range d.Nodes {
		fmt.Fprintf(out, "  node %s in %s: Ready in %s, cluster DNS %s:53 (kube-dns %s); ip netns exec %s ...\n",
			n.Name, n.Cluster, n.Started.Round(100*time.Millisecond), n.NodeIP, devenv.ClusterDNSIP, n.Netns)
	}
	printEdge(out, d.Edge, d.Demo)
	fmt.Fprintf(out, "kfed dev: ready in %s; Ctrl-C stops everything\n", time.Since(start).Round(100*time.Millisecond))
	if err := d.Wait(ctx); err != nil {
		return err
	}
	fmt.Fprintln(out, "kfed dev: stopping")
	return nil
}

// complete fills in the defaults that depend on where kfed runs and returns
// the absolute path of the environment's folder.
func (o *devOptions) complete() (dir string, err error) {
	if dir, err = filepath.Abs(o.dir); err != nil {
		return "", err
	}
	if o.coredns == "" {
		if o.coredns, err = besideExecutable("coredns"); err != nil {
			return "", err
		}
	}
	if o.checker == "" {
		if o.checker, err = besideExecutable("kfed-healthcheck"); err != nil {
			return "", err
		}
	}
	if o.binDir == "" {
		if o.binDir, err = findBinDir(); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// realNodeOptions finds what --real-nodes runs, as make dev-nodes lays it
// out: the kubelet and kube-proxy in $KFED_KUBELET_BIN (hack/kubelet.sh),
// containerd, its shim and ctr in $KFED_CONTAINERD_BIN (hack/containerd.sh),
// runc at $KFED_RUNC or on PATH, the CNI plugins in $KFED_CNI_BIN or
// /usr/lib/cni, and beside the kfed binary coredns-kubernetes (CoreDNS
// built with -tags kubernetes) and the node images (nodeimages/: pause,
// netshoot, socat, from hack/nodeimages).
func realNodeOptions() (*devenv.RealNodeOptions, error) {
	o := &devenv.RealNodeOptions{
		KubeletDir: os.Getenv("KFED_KUBELET_BIN"), ContainerdDir: os.Getenv("KFED_CONTAINERD_BIN"),
		Runc: os.Getenv("KFED_RUNC"), CNIDir: os.Getenv("KFED_CNI_BIN"),
	}
	if o.KubeletDir == "" || o.ContainerdDir == "" {
		return nil, errors.New("--real-nodes: set KFED_KUBELET_BIN and KFED_CONTAINERD_BIN (make dev-nodes does, from hack/kubelet.sh and hack/containerd.sh)")
	}
	if o.CNIDir == "" {
		o.CNIDir = "/usr/lib/cni"
	}
	var err error
	if o.Runc == "" {
		if o.Runc, err = exec.LookPath("runc"); err != nil {
			return nil, fmt.Errorf("--real-nodes: no runc (hack/install-runc.sh installs it): %w", err)
		}
	}
	if o.CoreDNS, err = besideExecutable("coredns-kubernetes"); err != nil {
		return nil, err
	}
	images, err := besideExecutable("nodeimages")
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"pause", "netshoot", "socat"} {
		o.Images = append(o.Images, filepath.Join(images, name))
	}
	return o, nil
}

// openDevLog creates DIR/logs/kfed.log, where the in-process components
// (controller, load balancers, Gateways) log, and makes it klog's and
// controller-runtime's log.
func openDevLog(dir string) (logr.Logger, func(), error) {
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return logr.Discard(), nil, err
	}
	f, err := os.Create(filepath.Join(logDir, "kfed.log"))
	if err != nil {
		return logr.Discard(), nil, err
	}
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(f)))
	klog.SetLogger(log)
	ctrl.SetLogger(log)
	return log, func() { f.Close() }, nil
}

// findBinDir asks hack/test-binaries.sh, when run from a checkout, where
// the binaries are.
func findBinDir() (string, error) {
	script := filepath.Join("hack", "test-binaries.sh")
	if _, err := os.Stat(script); err != nil {
		return "", errors.New("no --bin-dir or $KFED_BIN, and not in a kfed checkout: run `make dev` from the checkout, or pass --bin-dir")
	}
	outp, err := exec.Command(script, "--print").Output()
	if err != nil {
		return "", errors.New("test binaries are not built yet: run hack/test-binaries.sh (make dev does it)")
	}
	return strings.TrimSpace(string(outp)), nil
}

// besideExecutable finds name in the folder of the running binary.
func besideExecutable(name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	p := filepath.Join(filepath.Dir(self), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no %s beside %s: build it (go build -o bin/ ./cmd/kfed ./cmd/coredns ./cmd/kfed-healthcheck, as make dev does) or pass --%s", name, self, name)
	}
	return p, nil
}

// printNextSteps shows where things are and what to try: the simulated
// nodes if members have workloads, the demo Gateway if there is one.
func printNextSteps(out io.Writer, d *devenv.Dev, nodes bool) {
	rel := func(p string) string {
		if wd, err := os.Getwd(); err == nil {
			if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
				return r
			}
		}
		return p
	}
	names := []string{d.ControlPlane.Name}
	for _, m := range d.Members {
		names = append(names, fmt.Sprintf("%s (%s/%s)", m.Name, m.Region, strings.Join(m.Zones, ",")))
	}
	fmt.Fprintf(out, `kfed dev: federation %q, DNS suffix %q
  kubeconfig %s, contexts: %s
  logs in %s

Try:
  set -a; . %s; set +a; export PATH="$KFED_BIN:$PATH"
  kubectl get clusters                       # the members and their Ready condition
`, d.Federation, d.Domain, rel(d.Kubeconfig), strings.Join(names, ", "), rel(filepath.Join(d.Dir, "logs")), rel(filepath.Join(d.Dir, "env")))
	if nodes {
		fmt.Fprintln(out, "  kubectl --context cluster-1 get nodes      # KWOK's simulated nodes")
	}
	fmt.Fprintln(out, "  kubectl get service demo                   # the sample federated Service")
	if d.Shop != "" {
		fmt.Fprintln(out, "  kubectl get gateway demo-gw                # the sample federated Gateway, with an HTTPRoute for shop.DOMAIN")
	}
	host, port, _ := net.SplitHostPort(d.DNS[0])
	fmt.Fprintf(out, "  dig @%s -p %s %s   # cluster-1's CoreDNS: its own endpoint first\n", host, port, d.Demo)
	if d.Shop != "" {
		fmt.Fprintf(out, "  dig @%s -p %s %s   # the federated Gateway demo-gw's HTTPRoute: a Gateway in each member\n", host, port, d.Shop)
	}
	for i, a := range d.DNS {
		fmt.Fprintf(out, "  (CoreDNS of %s: %s, $KFED_DNS_CLUSTER_%d)\n", d.Members[i].Name, a, i+1)
	}
}

// printEdge shows how to ask the edge CoreDNS as a client in each of the
// places its GeoIP database knows.
func printEdge(out io.Writer, edge, demo string) {
	host, port, _ := net.SplitHostPort(edge)
	fmt.Fprintf(out, "  (edge CoreDNS, for clients outside the clusters: %s, $KFED_DNS_EDGE; it orders by the client's place)\n", edge)
	for _, p := range devenv.DevPlaces() {
		fmt.Fprintf(out, "  dig @%s -p %s %s +subnet=%s   # a client in %s\n", host, port, demo, p.Network, p.City)
	}
}
