package controller

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kfed-io/kfed/devenv/process"
	"github.com/kfed-io/kfed/test/framework"
)

// TestDevUpFollowsItsContract runs `kfed dev up` as a user would and checks
// the contract scripts rely on: the ready line, DIR/kubeconfig contexts,
// DIR/env, a working kubectl, and that SIGTERM stops every process.
func TestDevUpFollowsItsContract(t *testing.T) {
	dir, p, output := startDevUp(t, "--lb-base", strconv.Itoa(framework.ClaimLBBase(t, 3)))

	kc, err := clientcmd.LoadFromFile(filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"federation", "cluster-1", "cluster-2", "cluster-3"} {
		if kc.Contexts[name] == nil {
			t.Errorf("kubeconfig has no context %q", name)
		}
	}
	env := fedtest.ReadEnvFile(t, filepath.Join(dir, "env"))
	for _, k := range []string{"KUBECONFIG", "KFED_BIN", "KFED_FEDERATION", "KFED_DOMAIN", "KFED_DNS_CLUSTER_1", "KFED_DNS_CLUSTER_2", "KFED_DNS_CLUSTER_3", "KFED_DNS_EDGE", "KFED_GEOIP"} {
		if env[k] == "" {
			t.Errorf("env file has no %s", k)
		}
	}
	kubectl := exec.Command(filepath.Join(env["KFED_BIN"], "kubectl"), "get", "clusters,services", "-A", "--no-headers")
	kubectl.Env = append(os.Environ(), "KUBECONFIG="+env["KUBECONFIG"])
	out, err := kubectl.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl: %v\n%s", err, out)
	}
	for _, want := range []string{"cluster-1", "cluster-2", "cluster-3", "demo"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kubectl get clusters,services lacks %q:\n%s", want, out)
		}
	}

	// Each member's CoreDNS answers the demo's global name with that
	// member's own shard first (its cluster IP), then the others.
	demo := "demo.default." + env["KFED_FEDERATION"] + ".svc." + env["KFED_DOMAIN"] + "."
	for i, member := range []string{"cluster-1", "cluster-2"} {
		cfg, err := clientcmd.NewNonInteractiveClientConfig(*kc, member, nil, nil).ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		shard, err := cs.CoreV1().Services("default").Get(context.Background(), "demo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		q := new(dns.Msg)
		q.SetQuestion(demo, dns.TypeA)
		r, _, err := new(dns.Client).Exchange(q, env["KFED_DNS_CLUSTER_"+strconv.Itoa(i+1)])
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Answer) < 3 || !r.Authoritative {
			t.Fatalf("%s's CoreDNS answered %v (aa=%t), want the three clusters' addresses", member, r.Answer, r.Authoritative)
		}
		if first := r.Answer[0].(*dns.A).A.String(); first != shard.Spec.ClusterIP {
			t.Errorf("%s's CoreDNS answers %s first, want its own shard's cluster IP %s", member, first, shard.Spec.ClusterIP)
		}
	}

	// The federated Gateway demo-gw: its HTTPRoute's hostname shop.DOMAIN is
	// answered with a Gateway address in each member, and a request with that
	// Host to any of them reaches the route.
	shop := "shop." + env["KFED_DOMAIN"] + "."
	q := new(dns.Msg)
	q.SetQuestion(shop, dns.TypeA)
	r, _, err := new(dns.Client).Exchange(q, env["KFED_DNS_CLUSTER_1"])
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Answer) != 3 {
		t.Fatalf("cluster-1's CoreDNS answered %v for %s, want a Gateway address in each of the three members", r.Answer, shop)
	}
	for _, rr := range r.Answer {
		addr := rr.(*dns.A).A.String()
		req, _ := http.NewRequest(http.MethodGet, "http://"+net.JoinHostPort(addr, "8080")+"/", nil)
		req.Host = strings.TrimSuffix(shop, ".")
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("GET %s with Host %s: %v", addr, req.Host, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "shop") {
			t.Errorf("GET %s with Host %s: %d %q, want the route's answer", addr, req.Host, resp.StatusCode, body)
		}
	}

	// The edge CoreDNS places a Frankfurt client (198.51.100.0/24 in its
	// database) nearest to cluster-3, in europe-west1, and says the answer
	// holds for that /24.
	cfg3, err := clientcmd.NewNonInteractiveClientConfig(*kc, "cluster-3", nil, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	shard3, err := kubernetes.NewForConfigOrDie(cfg3).CoreV1().Services("default").Get(context.Background(), "demo", metav1.GetOptions{})
	if err != nil || len(shard3.Status.LoadBalancer.Ingress) == 0 {
		t.Fatalf("cluster-3's shard of demo: %v, %v", err, shard3)
	}
	r, err = fedtest.QuerySubnet(env["KFED_DNS_EDGE"], demo, "198.51.100.0/24")
	if err != nil {
		t.Fatal(err)
	}
	if a := fedtest.AnswerStrings(r); len(a) != 3 || a[0] != shard3.Status.LoadBalancer.Ingress[0].IP {
		t.Errorf("the edge answers a Frankfurt client %v, want cluster-3's %s first", a, shard3.Status.LoadBalancer.Ingress[0].IP)
	}
	if scope, ok := fedtest.SubnetScope(r); !ok || scope != 24 {
		t.Errorf("the edge's reply has ECS scope %d (present %v), want 24", scope, ok)
	}

	// The dig line dev up prints works, over UDP and TCP.
	host, port, _ := net.SplitHostPort(env["KFED_DNS_CLUSTER_3"])
	for _, transport := range []string{"+notcp", "+tcp"} {
		out, err := exec.Command("dig", "@"+host, "-p", port, transport, "+short", demo).CombinedOutput()
		if err != nil {
			t.Fatalf("dig %s (install it with hack/install-bind.sh): %v\n%s", transport, err, out)
		}
		if lines := strings.Fields(string(out)); len(lines) != 3 {
			t.Errorf("dig %s %s answered %q, want three addresses", transport, demo, out)
		}
	}

	stopDevUp(t, dir, p, output)
}

// TestDevUpStartsLightMembers runs `kfed dev up --members 5`, light by
// default above three: DIR/env and the kubeconfig follow the count, every
// member's CoreDNS answers the demo Service with the five members'
// addresses, its own first, and only what a light member needs runs (no
// workloads, checkers in the first three members alone).
func TestDevUpStartsLightMembers(t *testing.T) {
	const n = 5
	dir, p, output := startDevUp(t, "--members", strconv.Itoa(n), "--lb-base", strconv.Itoa(framework.ClaimLBBase(t, n)))

	kc, err := clientcmd.LoadFromFile(filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	env := fedtest.ReadEnvFile(t, filepath.Join(dir, "env"))
	for i := 1; i <= n+1; i++ {
		name, key := "cluster-"+strconv.Itoa(i), "KFED_DNS_CLUSTER_"+strconv.Itoa(i)
		if has := kc.Contexts[name] != nil; has != (i <= n) {
			t.Errorf("kubeconfig has context %q: %t, want %t", name, has, i <= n)
		}
		if has := env[key] != ""; has != (i <= n) {
			t.Errorf("env file has %s: %t, want %t", key, has, i <= n)
		}
	}

	demo := "demo.default." + env["KFED_FEDERATION"] + ".svc." + env["KFED_DOMAIN"] + "."
	for i := 1; i <= n; i++ {
		member := "cluster-" + strconv.Itoa(i)
		cfg, err := clientcmd.NewNonInteractiveClientConfig(*kc, member, nil, nil).ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		shard, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Services("default").Get(context.Background(), "demo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Ready waited for the first member's CoreDNS alone; the others
		// follow their watches.
		var a []string
		deadline := time.Now().Add(20 * time.Second)
		for {
			r, err := fedtest.Query(env["KFED_DNS_CLUSTER_"+strconv.Itoa(i)], "udp", demo, dns.TypeA)
			if a = nil; err == nil {
				a = fedtest.AnswerStrings(r)
			}
			if len(a) == n || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if len(a) != n || a[0] != shard.Spec.ClusterIP {
			t.Errorf("%s's CoreDNS answers %s with %v, want the %d members' addresses, its own shard's %s first", member, demo, a, n, shard.Spec.ClusterIP)
		}
	}

	// A light member runs no scheduler, controller manager, KWOK nor
	// Gateway, and the checkers are the first three members'.
	var checkers []string
	for _, line := range processesMentioning(t, dir) {
		for _, dropped := range []string{"kube-scheduler", "kube-controller-manager", "kwok"} {
			if strings.Contains(line, "/"+dropped+" ") {
				t.Errorf("a light member runs %s: %s", dropped, line)
			}
		}
		if f := strings.Fields(line); len(f) > 2 && strings.HasSuffix(f[0], "kfed-healthcheck") && f[1] == "--checker" {
			checkers = append(checkers, f[2])
		}
	}
	slices.Sort(checkers)
	if want := []string{"healthcheck-cluster-1", "healthcheck-cluster-2", "healthcheck-cluster-3"}; !slices.Equal(checkers, want) {
		t.Errorf("checkers running: %v, want %v", checkers, want)
	}
	if !strings.Contains(output.String(), "kfed dev: starting etcd and 6 API servers") || strings.Contains(output.String(), "shop.") {
		t.Errorf("kfed dev up's output does not follow five light members (six API servers, no demo Gateway):\n%s", output.String())
	}

	stopDevUp(t, dir, p, output)
}

// startDevUp builds kfed, CoreDNS and the checker into a folder of their
// own, runs `kfed dev up` there with args, and returns, once it printed its
// ready line, its folder, its process and its output so far.
func startDevUp(t *testing.T, args ...string) (dir string, p *process.Process, output *process.Output) {
	t.Helper()
	// CoreDNS goes beside kfed, where dev up looks for it.
	bin, err := framework.Build(t, "./cmd/kfed", "./cmd/coredns", "./cmd/kfed-healthcheck")
	if err != nil {
		t.Fatal(err)
	}
	kfed := filepath.Join(bin, "kfed")
	dir = filepath.Join(t.TempDir(), "dev")
	cmd := exec.Command(kfed, append([]string{"dev", "up", "--dir", dir, "--bin-dir", framework.BinDir(t)}, args...)...)
	// The output goes through a pipe the test closes once kfed exited, so
	// that the reader below sees all of it and then its end.
	stdout, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	p, err = process.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	go func() { <-p.Done(); w.Close() }()
	t.Cleanup(p.Kill)

	ready := make(chan string, 1)
	output = new(process.Output) // read by the test while the reader writes it
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			io.WriteString(output, sc.Text()+"\n")
			if strings.HasPrefix(sc.Text(), "kfed dev: ready") {
				ready <- sc.Text()
			}
		}
		close(ready)
	}()
	select {
	case line, ok := <-ready:
		if !ok {
			t.Fatalf("kfed dev up ended before it was ready:\n%s", output.String())
		}
		t.Log(line)
	case <-time.After(3 * time.Minute):
		t.Fatalf("no ready line after 3 minutes:\n%s", output.String())
	}
	return dir, p, output
}

// stopDevUp sends kfed dev up SIGTERM and checks that it exits cleanly
// within a minute and leaves no process behind.
func stopDevUp(t *testing.T, dir string, p *process.Process, output *process.Output) {
	t.Helper()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
		if err := p.Err(); err != nil {
			t.Errorf("kfed dev up exited with %v after SIGTERM:\n%s", err, output.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("kfed dev up still running 60 s after SIGTERM")
	}
	if left := processesMentioning(t, dir); len(left) > 0 {
		t.Errorf("processes left after SIGTERM: %v", left)
	}
}

// processesMentioning lists the command lines of running processes that
// mention s (every server dev up starts has its folder in its arguments).
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		if line := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(line, s) {
			found = append(found, line)
		}
	}
	return found
}
