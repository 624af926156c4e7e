package loopbacklb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"
)

// EnvServe names, in JSON ([]Member), the load balancers that a process
// started to serve them runs (ServeFromEnv). Each listener is an open file
// and a process may hold only so many (20,000 here; thirty members of
// 1,000 Services hold 30,000), so a large bed spreads its load balancers
// over processes.
const EnvServe = "KFED_LOOPBACKLB_SERVE"

// Member is one load balancer a process serves: the cluster's name, how
// to reach its API server (Context "" is the kubeconfig's current one) and
// its address block.
type Member struct {
	Cluster    string       `json:"cluster"`
	Kubeconfig string       `json:"kubeconfig"`
	Context    string       `json:"context,omitempty"`
	Block      netip.Prefix `json:"block"`
}

// ServeEnv is the environment entry (NAME=value) that has a process serve
// members.
func ServeEnv(members []Member) string {
	b, _ := json.Marshal(members) // strings and a prefix: nothing fails
	return EnvServe + "=" + string(b)
}

// ServeFromEnv runs, until ctx ends, the load balancers EnvServe names,
// logging to stderr. It reports false, doing nothing, when EnvServe is
// unset: a binary that may be started for load balancers (a test binary,
// in its TestMain) calls it first thing.
func ServeFromEnv(ctx context.Context) (bool, error) {
	spec, ok := os.LookupEnv(EnvServe)
	if !ok {
		return false, nil
	}
	members, err := parseMembers(spec)
	if err != nil {
		return true, err
	}
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(os.Stderr)))
	g, gctx := errgroup.WithContext(ctx)
	for _, m := range members {
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: m.Kubeconfig},
			&clientcmd.ConfigOverrides{CurrentContext: m.Context}).ClientConfig()
		if err != nil {
			return true, fmt.Errorf("load balancer of %s: %w", m.Cluster, err)
		}
		// As fast as devenv's own clients: at client-go's default 5 a
		// second, 10,000 status writes take half an hour and a test would
		// time the load balancer, not kfed.
		cfg.QPS, cfg.Burst = 200, 400
		g.Go(func() error {
			return Run(gctx, Options{Cluster: m.Cluster, Block: m.Block, Config: cfg, Logger: log.WithName(m.Cluster)})
		})
	}
	if err := g.Wait(); err != nil && ctx.Err() == nil {
		return true, err
	}
	return true, nil
}

// parseMembers reads EnvServe's value.
func parseMembers(spec string) ([]Member, error) {
	var members []Member
	if err := json.Unmarshal([]byte(spec), &members); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvServe, err)
	}
	if len(members) == 0 {
		return nil, errors.New(EnvServe + " names no load balancer")
	}
	return members, nil
}

// ServeIfAsked is ServeFromEnv for a binary's first line (a test binary's
// TestMain): when EnvServe is set it serves until SIGTERM or SIGINT and
// ends the process, with status 1 on error; otherwise it returns.
func ServeIfAsked() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	served, err := ServeFromEnv(ctx)
	stop()
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "load balancer:", err)
		os.Exit(1)
	case served:
		os.Exit(0)
	}
}
