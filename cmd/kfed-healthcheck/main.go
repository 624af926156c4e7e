// Command kfed-healthcheck is the health-check agent: one or more run in each
// member cluster, each with its own checker identity, probe the federated
// Services' endpoints (every endpoint, or in a fleet of more than
// --checkers-per-endpoint checkers, those the assignment gives this one) and
// report to the federation control plane, where the services controller
// takes an endpoint out of DNS only when a quorum of its fresh checkers sees
// it down (docs/design.md, "Health, by quorum").
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/kfed-io/kfed/healthcheck"
	"github.com/kfed-io/kfed/healthcheck/agent"
	"github.com/kfed-io/kfed/internal/buildinfo"
	"github.com/kfed-io/kfed/internal/kubetoken"
	"github.com/kfed-io/kfed/internal/memlimit"
	"github.com/kfed-io/kfed/policy/tenancy"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kfed-healthcheck:", err)
		os.Exit(1)
	}
}

// agentFlags are kfed-healthcheck's command line, parsed.
type agentFlags struct {
	kubeconfig, kubecontext, metricsAddr, source, check, path string
	version                                                   bool
	o                                                         agent.Options
	log                                                       *textlogger.Config
}

// parseFlags reads args in kubectl's style, as kfed and kfed-controller
// do: --flag=value (a single dash also reads a long flag, as Go's flag
// package did, so older command lines still work), -v (--v) the log
// verbosity and --version, with no shorthand, the version.
func parseFlags(args []string) (*agentFlags, error) {
	fs := pflag.NewFlagSet("kfed-healthcheck", pflag.ContinueOnError)
	f := &agentFlags{o: agent.Options{Defaults: healthcheck.Defaults()}, log: textlogger.NewConfig()}
	o := &f.o
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the federation control plane (in-cluster config when empty)")
	fs.StringVar(&f.kubecontext, "context", "", "kubeconfig context of the federation control plane")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus /metrics endpoint (0 disables)")
	fs.StringVar(&f.source, "probe-source", "", "local address probes are sent from (default: the system's choice)")
	fs.StringVar(&f.check, "check", "tcp", "default probe: tcp, http or https (a Service's kfed.io/health-check overrides it)")
	fs.StringVar(&f.path, "path", healthcheck.DefaultPath, "default path of http and https probes")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	fs.StringVar(&o.Checker, "checker", "", "this checker's name, unique in the federation (default: the host name)")
	fs.StringVar(&o.Cluster, "cluster", "", "the member cluster this checker runs in (required)")
	fs.StringVar(&o.Federation, "federation", "", "the federation to check (required)")
	fs.StringVar(&o.Namespace, "namespace", "kfed-system", "kfed's namespace in the control plane: the report and heartbeat Lease")
	fs.Func("trusted-namespaces", tenancy.TrustedFlagUsage, func(s string) (err error) {
		o.TrustedNamespaces, err = tenancy.ParseNamespaces(s)
		return err
	})
	fs.DurationVar(&o.Defaults.Interval, "interval", healthcheck.DefaultInterval, "default time between probes of one endpoint")
	fs.DurationVar(&o.Defaults.Timeout, "timeout", healthcheck.DefaultTimeout, "default probe timeout")
	fs.IntVar(&o.Defaults.Rise, "rise", healthcheck.DefaultRise, "default passing probes in a row that make an endpoint healthy again")
	fs.IntVar(&o.Defaults.Fall, "fall", healthcheck.DefaultFall, "default failing probes in a row that make an endpoint unhealthy")
	fs.DurationVar(&o.Heartbeat, "heartbeat", agent.DefaultHeartbeat, "time between heartbeats; keep it a quarter of kfed-controller's --health-freshness")
	fs.DurationVar(&o.Resync, "resync", 10*time.Minute, "how often the stored report is checked against this checker's view")
	fs.DurationVar(&o.RTTInterval, "rtt-interval", agent.DefaultRTTInterval, "how often the round-trip times measured are read, and published on the report when one moved to another bucket")
	fs.DurationVar(&o.LoadInterval, "load-interval", agent.DefaultLoadInterval, "how often the endpoints' loads (ORCA's endpoint-load-metrics on http and https answers) are read, and published on the report when one moved to another bucket")
	fs.IntVar(&o.Engine.MaxConcurrent, "concurrency", 256, "most endpoints probed at once")
	fs.IntVar(&o.CheckersPerEndpoint, "checkers-per-endpoint", healthcheck.DefaultCheckersPerEndpoint,
		"how many of the federation's checkers probe each endpoint (spread over regions); with no more checkers than this, every checker probes every endpoint; 0: always every endpoint. Give every agent the same value: the controller counts the smallest")
	logFlags := flag.NewFlagSet("log", flag.ContinueOnError)
	f.log.AddFlags(logFlags)
	fs.AddGoFlagSet(logFlags) // -v and --vmodule, -v a shorthand as in kubectl
	if err := fs.Parse(singleDashLongFlags(fs, args)); err != nil {
		return nil, fmt.Errorf("%w (see kfed-healthcheck --help)", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("kfed-healthcheck takes flags only, not %q (see kfed-healthcheck --help)", fs.Args())
	}
	return f, nil
}

// singleDashLongFlags rewrites -name and -name=value, which Go's flag
// package read and older manifests may pass, as --name: pflag would read
// them as shorthands. -v stays -v.
func singleDashLongFlags(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(name) > 1 && fs.Lookup(name) != nil {
			a = "-" + a
		}
		out[i] = a
	}
	return out
}

func run() error {
	f, err := parseFlags(os.Args[1:])
	if errors.Is(err, pflag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if f.version {
		fmt.Println("kfed-healthcheck", buildinfo.Get())
		return nil
	}
	o, logCfg := f.o, f.log
	o.Logger = textlogger.NewLogger(logCfg)
	klog.SetLogger(o.Logger)
	if limit, err := memlimit.Set(os.Getenv); err != nil {
		return err
	} else if limit > 0 {
		o.Logger.Info("Go memory limit set from the container's", "bytes", limit)
	}

	if o.Checker == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("--checker not given and no host name: %w", err)
		}
		o.Checker = host
	}
	if o.CheckersPerEndpoint < 0 {
		return fmt.Errorf("--checkers-per-endpoint %d: want 0 (every endpoint) or more", o.CheckersPerEndpoint)
	}
	if err := probeDefaults(&o, f.check, f.path, f.source); err != nil {
		return err
	}

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.kubecontext}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	// A renewed token (kfed join --renew) is taken up at the old one's
	// first refusal.
	kubetoken.Reread(cfg)
	o.Config = cfg

	reg := newRegistry()
	o.Registerer = reg
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if f.metricsAddr != "0" {
		stop, err := serveMetrics(reg, f.metricsAddr, o.Logger)
		if err != nil {
			return err
		}
		defer stop()
	}
	return agent.Run(ctx, o)
}

// probeDefaults sets the probe settings a Service does not set itself from
// the flags --check, --path and --probe-source.
func probeDefaults(o *agent.Options, check, path, source string) error {
	o.Defaults.Kind = healthcheck.Kind(check)
	if o.Defaults.Kind != healthcheck.KindTCP {
		o.Defaults.Path, o.Defaults.StatusMin, o.Defaults.StatusMax = path, healthcheck.DefaultStatusMin, healthcheck.DefaultStatusMax
	}
	if err := o.Defaults.Validate(); err != nil {
		return fmt.Errorf("probe flags: %w", err)
	}
	if source != "" {
		a, err := netip.ParseAddr(source)
		if err != nil {
			return fmt.Errorf("--probe-source %q: %w", source, err)
		}
		o.Engine.Source = a
	}
	return nil
}

// serveMetrics serves reg at /metrics on addr until stop is called.
func serveMetrics(reg *prometheus.Registry, addr string, log logr.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "metrics server")
		}
	}()
	return func() { _ = srv.Close() }, nil
}

// newRegistry is the agent's metrics registry: Go and process collectors,
// kfed_build_info, and (from agent.Run) the agent's own.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildinfo.NewCollector("kfed", "", buildinfo.Get()))
	return reg
}
