package devenv

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// CheckerOptions say how to run one kfed-healthcheck agent.
type CheckerOptions struct {
	// Binary is kfed-healthcheck (go build ./cmd/kfed-healthcheck).
	Binary string
	// Name is the checker's identity, its process name and its log
	// (DIR/logs/NAME.log).
	Name string
	// Cluster is the member the checker runs in: Env.Stop stops it with
	// that cluster's other processes, and it reports as that cluster's.
	Cluster string
	// Federation it checks for.
	Federation string
	// Kubeconfig and Context reach the federation control plane.
	Kubeconfig string
	Context    string
	// Args are more flags, such as "--interval=1s" or "--probe-source=…".
	Args []string
}

// Checker is a running health-check agent.
type Checker struct {
	// MetricsAddr serves its Prometheus metrics at /metrics.
	MetricsAddr string

	p *child
}

// Stop ends the checker cleanly (SIGTERM, then SIGKILL after 5 s). It is
// safe to call more than once, and Env.Stop calls it too.
func (c *Checker) Stop() { c.p.stop(5 * time.Second) }

// Kill ends the checker at once, as a crash would: no last report, no
// heartbeat released.
func (c *Checker) Kill() { c.p.kill() }

// Running reports whether the checker has not exited.
func (c *Checker) Running() bool { return c.p.running() }

// StartChecker runs a kfed-healthcheck agent for cluster opts.Cluster. It
// returns once the process runs; the agent registers itself with the
// control plane on its own.
func (e *Env) StartChecker(_ context.Context, opts CheckerOptions) (*Checker, error) {
	if opts.Binary == "" || opts.Name == "" || opts.Cluster == "" || opts.Federation == "" || opts.Kubeconfig == "" {
		return nil, errors.New("devenv: a checker needs Binary, Name, Cluster, Federation and Kubeconfig")
	}
	owner := e.Cluster(opts.Cluster)
	if owner == nil {
		return nil, fmt.Errorf("devenv: no cluster %q for checker %s", opts.Cluster, opts.Name)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &Checker{MetricsAddr: "127.0.0.1:" + strconv.Itoa(port)}
	args := []string{
		"--checker", opts.Name, "--cluster", opts.Cluster, "--federation", opts.Federation,
		"--kubeconfig", opts.Kubeconfig, "--metrics-bind-address", c.MetricsAddr,
	}
	if opts.Context != "" {
		args = append(args, "--context", opts.Context)
	}
	c.p = newChild(opts.Name, opts.Binary, e.logDir, append(args, opts.Args...)...)
	if err := e.adopt(owner, c.p); err != nil {
		return nil, err
	}
	return c, nil
}

// Pid is the checker's process ID, for measurements.
func (c *Checker) Pid() int { return c.p.p.Pid() }

// Log is the path of the checker's log.
func (c *Checker) Log() string { return c.p.log }
