// Command kfed-controller runs kfed's controllers against the federation
// control plane: member cluster health, and (as they land) federated
// Services, replicas and DNS sync. Replicas elect a leader with a Lease.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	// Trusted roots for Route53 and Cloud DNS over HTTPS in an image with
	// no CA bundle (kfed's images are scratch); a bundle on the machine
	// (/etc/ssl/certs, SSL_CERT_FILE) takes precedence. docs/images.md.
	_ "golang.org/x/crypto/x509roots/fallback"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/clusters/access"
	"github.com/kfed-io/kfed/controllers/manager"
	"github.com/kfed-io/kfed/internal/buildinfo"
	"github.com/kfed-io/kfed/internal/memlimit"
	"github.com/kfed-io/kfed/policy/tenancy"
)

// main is long because it declares every flag of the controller, one
// line each, in the order `--help` lists them.
func main() {
	// A flag set of our own: controller-runtime registers --kubeconfig on
	// the global one when imported.
	fs := flag.NewFlagSet("kfed-controller", flag.ExitOnError)
	var (
		kubeconfig = fs.String("kubeconfig", "", "kubeconfig of the federation control plane (in-cluster config when empty)")
		context    = fs.String("context", "", "kubeconfig context of the federation control plane")
		version    = fs.Bool("version", false, "print the version and exit")
		o          manager.Options
	)
	fs.BoolVar(&o.LeaderElection, "leader-elect", true, "elect a leader so that only one replica acts")
	fs.StringVar(&o.Namespace, "namespace", "kfed-system", "kfed's namespace: the leader election Lease and the members' kubeconfig Secrets")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus /metrics endpoint (0 disables)")
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz (0 disables)")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "", "address of Go's profiles at /debug/pprof/, for example 127.0.0.1:6060 (empty, the default, disables; unauthenticated, so bind it to loopback)")
	fs.DurationVar(&o.ClusterProbeInterval, "cluster-probe-interval", 0, "how often each member's /readyz is probed (default 10s)")
	fs.StringVar(&o.Federation, "federation", "", "federation name, the F in S.N.F.svc.D (required)")
	fs.StringVar(&o.Domain, "domain", "", "DNS suffix, the D in S.N.F.svc.D (required)")
	fs.Func("trusted-namespaces", tenancy.TrustedFlagUsage, func(s string) (err error) {
		o.TrustedNamespaces, err = tenancy.ParseNamespaces(s)
		return err
	})
	fs.Func("hostname-namespaces", tenancy.HostnamesFlagUsage, func(s string) (err error) {
		o.HostnameReservations, err = tenancy.ParseReservations(s)
		return err
	})
	o.DNS.AddFlags(fs, "dns-provider")
	fs.DurationVar(&o.DNSInterval, "dns-interval", time.Minute, "time between DNS syncs when nothing changes")
	fs.DurationVar(&o.UnschedulableThreshold, "unschedulable-threshold", 0, "how long a pod of a federated Deployment may stay unschedulable before its cluster counts as full (default 60s; the annotation kfed.io/unschedulable-threshold overrides it per Deployment)")
	fs.DurationVar(&o.MemberGracePeriod, "member-grace-period", 0, "how long a member that cannot be reached keeps the replicas of federated Deployments before they are planned elsewhere (default 60s)")
	fs.DurationVar(&o.HealthFreshness, "health-freshness", 0, "how long a health checker's heartbeat counts in a quorum (default 40s, four 10s intervals)")
	fs.StringVar(&o.Inventory.Inventory, "inventory", "", `where members come from besides kfed join: "clusterprofile" federates to the ClusterProfiles (Cluster Inventory API) of --inventory-namespace`)
	fs.StringVar(&o.Inventory.InventoryNamespace, "inventory-namespace", "", "namespace of the ClusterProfiles kfed federates to (with --inventory clusterprofile)")
	fs.Func("inventory-selector", "label selector on those ClusterProfiles, such as multicluster.x-k8s.io/clusterset=prod (default: all)", func(s string) (err error) {
		o.Inventory.InventorySelector, err = labels.Parse(s)
		return err
	})
	fs.Func("clusterprofile-provider-file", "access provider file (KEP-5339): the exec plugin for each access provider name a ClusterProfile may offer", func(s string) (err error) {
		o.Inventory.Access, err = access.Load(s)
		return err
	})
	fs.StringVar(&o.Inventory.ProfileNamespace, "cluster-profile-namespace", "", "namespace of the ClusterProfiles kfed writes for its joined clusters (default --namespace)")
	logCfg := textlogger.NewConfig()
	logCfg.AddFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if *version {
		fmt.Println("kfed-controller", buildinfo.Get())
		return
	}
	o.Logger = textlogger.NewLogger(logCfg)
	klog.SetLogger(o.Logger)
	ctrl.SetLogger(o.Logger)
	if limit, err := memlimit.Set(os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "kfed-controller:", err)
		os.Exit(1)
	} else if limit > 0 {
		o.Logger.Info("Go memory limit set from the container's", "bytes", limit)
	}

	rules := clientcmd.NewDefaultClientConfigLoadingRules() // $KUBECONFIG, ~/.kube/config, in-cluster
	rules.ExplicitPath = *kubeconfig
	loading := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: *context})
	cfg, err := loading.ClientConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfed-controller: loading kubeconfig:", err)
		os.Exit(1)
	}
	clusters.Unthrottled(cfg)
	if err := registerBuildInfo(ctrlmetrics.Registry); err != nil {
		fmt.Fprintln(os.Stderr, "kfed-controller:", err)
		os.Exit(1)
	}
	mgr, err := manager.New(cfg, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfed-controller:", err)
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, "kfed-controller:", err)
		os.Exit(1)
	}
}

// registerBuildInfo puts kfed_build_info on reg, controller-runtime's registry
// that the manager serves on --metrics-bind-address.
func registerBuildInfo(reg prometheus.Registerer) error {
	if err := reg.Register(buildinfo.NewCollector("kfed", "", buildinfo.Get())); err != nil {
		return fmt.Errorf("registering kfed_build_info: %w", err)
	}
	return nil
}
