package dns

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/dns/publish"
	"github.com/kfed-io/kfed/test/framework"
)

// memberDNSForwardsTheZoneAsTheReadmesSay
// (TestMemberDNSForwardsTheZoneAsTheReadmesSay) runs, as written, the README's
// step 4 (kubectl rewrites each member's kube-system/coredns Corefile to
// forward the federation's zone to kfed-coredns's cluster IP) against real
// API servers, then a real CoreDNS with each resulting Corefile, and a real
// CoreDNS with the chart README's NodeLocal DNSCache block: each resolves
// the README's web.shop.myfed.svc.global.example.com through kfed's CoreDNS
// and, for the cluster's CoreDNS, still answers what it answered before.
// Addresses that exist only in a cluster (cluster IPs, NodeLocal's
// 169.254.20.10) are moved to loopback after their values are checked.
// It installs kfed's chart and rewrites kube-system/coredns in the members:
// it runs last on its bed.
func memberDNSForwardsTheZoneAsTheReadmesSay(t *testing.T, f *framework.Federation) {
	fedtest.Helm(t)
	root := framework.RepoRoot(t)
	ctx := context.Background()
	tmp := t.TempDir()

	// kfed's CoreDNS for the README's federation and domain, serving a
	// DNSEndpoint of shop/web with one shard.
	const name = "web.shop.myfed.svc.global.example.com."
	lb := "127.77.0.1"
	ep := readmeDNSEndpoint(t, lb)
	fedtest.DeleteAtEnd(t, f.Client("federation"), ep.DeepCopy())
	fedtest.Create(t, f.Client("federation"), framework.Namespace("shop"), ep)
	coredns := fedtest.BuildCoreDNS(t)
	kfedDNS := framework.FreeAddr(t)
	framework.StartProcess(t, exec.Command(coredns, "-conf", fedtest.WriteFile(t, tmp, "kfed.Corefile", devenv.KfedCorefile(devenv.KfedZone{
		Zone: "global.example.com:" + fedtest.Port(kfedDNS), Federation: "myfed", Kubeconfig: f.Kubeconfig, Context: "federation",
	}))), "kfed-coredns")
	framework.Eventually(t, 30*time.Second, func(context.Context) error { return fedtest.WantAddresses(kfedDNS, "udp", name, dns.TypeA, lb) })

	// Each member: kfed's chart (its kfed-coredns Service) and the
	// cluster's own Corefile, which only whoami answers.
	const clusterCorefile = ".:53 {\n    errors\n    whoami\n    cache 30\n    loop\n    reload\n}\n"
	clusterIPs := map[string]string{}
	for _, m := range f.Members {
		c := f.Client(m.Name)
		fedtest.Create(t, c, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns"},
			Data:       map[string]string{"Corefile": clusterCorefile},
		})
		if _, err := fedtest.RunHelm(t, "install", "kfed", fedtest.ChartDir, "--kubeconfig", f.Kubeconfig, "--kube-context", m.Name,
			"-n", "kfed-system", "--create-namespace", "--set", "role=member", "--set", "federation=myfed",
			"--set", "domain=global.example.com", "--set", "member.cluster="+m.Name,
			"--set", "member.controlPlane.server=https://127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
		var svc corev1.Service
		if err := c.Get(ctx, client.ObjectKey{Namespace: "kfed-system", Name: "kfed-coredns"}, &svc); err != nil {
			t.Fatal(err)
		}
		clusterIPs[m.Name] = svc.Spec.ClusterIP
	}

	// Step 4, as the README writes it, with the test bed's kubectl.
	script := readmeBlock(t, filepath.Join(root, "README.md"), "**4. The members' own DNS forwards the zone**")
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "KUBECONFIG="+f.Kubeconfig, "PATH="+framework.BinDir(t)+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's step 4: %v\n%s\n%s", err, script, out)
	}

	for _, m := range f.Members {
		var cm corev1.ConfigMap
		if err := f.Client(m.Name).Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "coredns"}, &cm); err != nil {
			t.Fatal(err)
		}
		corefile := cm.Data["Corefile"]
		if !strings.HasPrefix(corefile, clusterCorefile) {
			t.Errorf("%s: step 4 lost the cluster's own Corefile:\n%s", m.Name, corefile)
		}
		clusterDNS := framework.FreeAddr(t)
		corefile = fedtest.LoopbackCorefile(t, corefile, map[string]string{
			":53 {": ":" + fedtest.Port(clusterDNS) + " {\n    bind 127.0.0.1",
			// The Service routes its cluster IP to kfed's CoreDNS.
			"forward . " + clusterIPs[m.Name] + "\n": "forward . " + kfedDNS + "\n",
		})
		framework.StartProcess(t, exec.Command(coredns, "-conf", fedtest.WriteFile(t, tmp, m.Name+".Corefile", corefile)), m.Name+" coredns")
		framework.Eventually(t, 30*time.Second, func(context.Context) error {
			return wantForwarded(clusterDNS, name, lb)
		})
		// What the cluster's DNS answered before, it still answers.
		r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(new(dns.Msg).SetQuestion("anything.cluster.local.", dns.TypeA), clusterDNS)
		if err != nil || len(r.Extra) == 0 {
			t.Errorf("%s: the cluster's own block no longer answers: %v %v", m.Name, err, r)
		}
	}

	// NodeLocal DNSCache's block from the chart's README, in a CoreDNS of
	// its own, as node-local-dns would run it.
	nodeLocal := readmeBlock(t, filepath.Join(root, fedtest.ChartDir, "README.md"), "**NodeLocal DNSCache**")
	cacheDNS := framework.FreeAddr(t)
	nodeLocal = fedtest.LoopbackCorefile(t, nodeLocal, map[string]string{
		"global.example.com:53 {":       "global.example.com:" + fedtest.Port(cacheDNS) + " {",
		"bind 169.254.20.10 10.96.0.10": "bind 127.0.0.1",
		"forward . 10.96.0.53 {":        "forward . " + kfedDNS + " {",
		"prometheus :9253":              "prometheus " + framework.FreeAddr(t),
	})
	framework.StartProcess(t, exec.Command(coredns, "-conf", fedtest.WriteFile(t, tmp, "node-local.Corefile", nodeLocal)), "node-local-dns")
	framework.Eventually(t, 30*time.Second, func(context.Context) error { return wantForwarded(cacheDNS, name, lb) })
}

// wantForwarded checks a forwarding server's answer for name holds want
// (not authoritative: it comes from kfed's CoreDNS).
func wantForwarded(addr, name, want string) error {
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), addr)
	if err != nil {
		return err
	}
	if got := fedtest.AnswerStrings(r); len(got) != 1 || got[0] != want {
		return fmt.Errorf("%s answered %v (%s), want %s", name, got, dns.RcodeToString[r.Rcode], want)
	}
	return nil
}

// readmeBlock is the first fenced code block after the line that starts
// with marker in a Markdown file.
func readmeBlock(t *testing.T, file, marker string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	found, in := false, false
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case !found:
			found = strings.HasPrefix(l, marker)
		case !in && strings.HasPrefix(l, "```"):
			in = true
		case in && strings.HasPrefix(l, "```"):
			return b.String()
		case in:
			b.WriteString(l + "\n")
		}
	}
	t.Fatalf("%s has no code block after %q", file, marker)
	return ""
}

// readmeDNSEndpoint is the DNSEndpoint kfed-controller writes for the
// README's federated Service shop/web with one shard at lb.
func readmeDNSEndpoint(t *testing.T, lb string) *extdnsv1alpha1.DNSEndpoint {
	t.Helper()
	in := publish.Input{
		Names: publish.NewNames("myfed", "global.example.com", "shop", "web"), TTL: 30,
		Regions: []string{"us-east1"}, Zones: []string{"us-east1-b/us-east1"},
		Clusters: []dnsendpoint.Cluster{{
			Name: "cluster-1", Region: "us-east1", Zones: []string{"us-east1-b"}, Weight: 1,
			Addresses: []netip.Addr{netip.MustParseAddr(lb)}, ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.0.11")},
			Ports: []dnsendpoint.Port{{Name: "http", Protocol: "TCP", Port: 80}},
		}},
	}
	eps, table, err := publish.Endpoints(in)
	if err != nil {
		t.Fatal(err)
	}
	obj := &extdnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "shop",
			Labels: map[string]string{"app.kubernetes.io/managed-by": "kfed", "kfed.io/federation": "myfed"},
		},
		Spec: extdnsv1alpha1.DNSEndpointSpec{Endpoints: eps},
	}
	dnsendpoint.SetClusters(obj, table)
	return obj
}
