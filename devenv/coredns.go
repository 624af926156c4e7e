package devenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// CoreDNSOptions say how to run one CoreDNS.
type CoreDNSOptions struct {
	// Binary is a CoreDNS built with the kfed plugin (go build ./cmd/coredns).
	Binary string
	// Name names the process, its log (DIR/logs/NAME.log) and its Corefile
	// (DIR/NAME.Corefile). Default "coredns".
	Name string
	// Cluster is the member cluster this CoreDNS serves: Env.Stop stops it
	// with that cluster's other processes. Empty means the control plane.
	Cluster string
	// Zone is the zone whose SOA, once answered, says the server is ready.
	// The kfed plugin answers only after its first full sync.
	Zone string
	// Corefile is the configuration. Its server blocks name no port (CoreDNS
	// is given -dns.port) and say `bind 127.0.0.1`, or CoreDNS listens on
	// every interface; KfedCorefile writes such a block.
	Corefile string
}

// CoreDNS is a running CoreDNS.
type CoreDNS struct {
	// Addr is 127.0.0.1:PORT, served over UDP and TCP.
	Addr string
	// Corefile is the path of its configuration.
	Corefile string

	p *child
}

// Stop ends the server. It is safe to call more than once, and Env.Stop
// calls it too.
func (d *CoreDNS) Stop() { d.p.stop(5 * time.Second) }

// StartCoreDNS runs a CoreDNS on a free loopback port and returns once it
// answers opts.Zone's SOA.
func (e *Env) StartCoreDNS(ctx context.Context, opts CoreDNSOptions) (*CoreDNS, error) {
	if opts.Binary == "" || opts.Zone == "" || opts.Corefile == "" {
		return nil, errors.New("devenv: CoreDNS needs Binary, Zone and Corefile")
	}
	opts.Name = cmp.Or(opts.Name, "coredns")
	owner := e.ControlPlane
	if opts.Cluster != "" {
		if owner = e.Cluster(opts.Cluster); owner == nil {
			return nil, fmt.Errorf("devenv: no cluster %q for CoreDNS", opts.Cluster)
		}
	}
	d := &CoreDNS{Corefile: filepath.Join(e.Dir, opts.Name+".Corefile")}
	if err := os.WriteFile(d.Corefile, []byte(opts.Corefile), 0o644); err != nil {
		return nil, fmt.Errorf("writing Corefile of %s: %w", opts.Name, err)
	}
	var lastErr error
	for range 3 { // a free port can be taken before CoreDNS binds it
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		d.Addr = "127.0.0.1:" + strconv.Itoa(port)
		d.p = newChild(opts.Name, opts.Binary, e.logDir, "-conf", d.Corefile, "-dns.port", strconv.Itoa(port))
		if err := e.adopt(owner, d.p); err != nil {
			return nil, err
		}
		waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
		lastErr = poll(waitCtx, 100*time.Millisecond, d.p, func(ctx context.Context) error {
			return answersSOA(ctx, d.Addr, dns.Fqdn(opts.Zone))
		})
		cancel()
		if lastErr == nil {
			return d, nil
		}
		exited := !d.p.running()
		d.p.stop(time.Second)
		if !exited {
			break // it runs but does not answer: another port will not help
		}
	}
	return nil, fmt.Errorf("starting %s: %w", opts.Name, lastErr)
}

// adopt starts p as one of c's processes, which Env.Stop ends before c's API
// server.
func (e *Env) adopt(c *Cluster, p *child) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return errors.New("devenv: the environment is stopped")
	}
	if err := p.start(); err != nil {
		return err
	}
	c.workloads = append(c.workloads, p)
	return nil
}

func answersSOA(ctx context.Context, addr, zone string) error {
	m := new(dns.Msg)
	m.SetQuestion(zone, dns.TypeSOA)
	c := &dns.Client{Timeout: time.Second}
	r, _, err := c.ExchangeContext(ctx, m, addr)
	if err != nil {
		return err
	}
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 || r.Answer[0].Header().Rrtype != dns.TypeSOA {
		return fmt.Errorf("SOA %s from %s: %s with %d answers", zone, addr, dns.RcodeToString[r.Rcode], len(r.Answer))
	}
	return nil
}

// KfedZone is one zone served by the kfed plugin from a federation control
// plane.
type KfedZone struct {
	// Zone is the DNS suffix the federation's names end in.
	Zone       string
	Federation string
	// Cluster is the member this CoreDNS stands for: its own endpoints are
	// answered first. Empty: none.
	Cluster string
	// Kubeconfig and Context reach the federation control plane.
	Kubeconfig string
	Context    string
	// Trusted are the namespaces whose DNSEndpoints may publish names that
	// are no namespace's federated names; kfed-system when empty.
	Trusted []string
	// Extra lines for the server block, such as "log" or "cache 5".
	Extra []string
	// Clusterset, if set, adds a server block for the member's
	// clusterset zone (ClustersetCorefile).
	Clusterset *ClustersetZone
	// Bind is the address the server blocks listen on; 127.0.0.1 when
	// empty.
	Bind string
}

// ClustersetZone is a member's clusterset zone, served by the clusterset
// plugin from that member's ServiceImports and EndpointSlices.
type ClustersetZone struct {
	// Zone is the clusterset zone; clusterset.local when empty.
	Zone string
	// Kubeconfig and Context reach the member cluster.
	Kubeconfig string
	Context    string
	// Bind is the address the server block listens on; 127.0.0.1 when
	// empty.
	Bind string
}

// ClustersetCorefile is a server block that serves z on 127.0.0.1 (or
// z.Bind) with the clusterset plugin.
func ClustersetCorefile(z ClustersetZone) string {
	zone := cmp.Or(z.Zone, "clusterset.local")
	var b strings.Builder
	fmt.Fprintf(&b, "%s {\n\tbind %s\n\terrors\n\tclusterset %s {\n", zone, cmp.Or(z.Bind, "127.0.0.1"), zone)
	if z.Kubeconfig != "" {
		fmt.Fprintf(&b, "\t\tkubeconfig %q", z.Kubeconfig)
		if z.Context != "" {
			fmt.Fprintf(&b, " %s", z.Context)
		}
		b.WriteString("\n")
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// KfedCorefile is a server block that serves z on 127.0.0.1 (or z.Bind) with the kfed
// plugin, for CoreDNSOptions.Corefile, followed with z.Clusterset by the
// clusterset zone's.
func KfedCorefile(z KfedZone) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s {\n\tbind %s\n\terrors\n", z.Zone, cmp.Or(z.Bind, "127.0.0.1"))
	for _, l := range z.Extra {
		fmt.Fprintf(&b, "\t%s\n", l)
	}
	fmt.Fprintf(&b, "\tkfed {\n\t\tfederation %s\n", z.Federation)
	if z.Cluster != "" {
		fmt.Fprintf(&b, "\t\tcluster %s\n", z.Cluster)
	}
	if z.Kubeconfig != "" {
		fmt.Fprintf(&b, "\t\tkubeconfig %q", z.Kubeconfig)
		if z.Context != "" {
			fmt.Fprintf(&b, " %s", z.Context)
		}
		b.WriteString("\n")
	}
	trusted := z.Trusted
	if len(trusted) == 0 {
		trusted = []string{kfedv1alpha1.DefaultNamespace}
	}
	fmt.Fprintf(&b, "\t\ttrusted_namespaces %s\n", strings.Join(trusted, " "))
	// The cluster's checkers' round-trip times are read, by default, in
	// its member namespace, the one place they write.
	b.WriteString("\t}\n}\n")
	if z.Clusterset != nil {
		b.WriteString(ClustersetCorefile(*z.Clusterset))
	}
	return b.String()
}

// Pid is the server's process ID, for measurements.
func (d *CoreDNS) Pid() int { return d.p.p.Pid() }
