package nodes

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedscheme "github.com/kfed-io/kfed/api/scheme"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/identity"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// The chart's kfed CoreDNS Service address in the member: fixed, as the
// forward stanza of a cluster's own DNS needs (coredns.service.clusterIP).
const chartDNSIP = "10.96.0.53"

// imageTag is the tag the test builds kfed's images under and the chart
// names them by (image.tag).
const imageTag = "helm-nodes"

// TestHelmChartRunsOnARealNode installs the Helm chart as a user of a
// dedicated federation API server does (README of the chart, "dedicated"
// examples): a release into the control plane, which has no nodes, holding
// the CRDs, RBAC and kfed-controller's ServiceAccount; in the member, a
// release of kfed-controller acting on the control plane through a
// kubeconfig Secret, and the member release (health-check agent, kfed's
// CoreDNS, with kubeconfigs of the member's own identities). kfed's three
// images, built here, are loaded into the member's real node; every pod the
// chart makes runs there, Ready by the kubelet's own probes. A federated
// Service is published, and a pod resolves its global name through its
// resolv.conf: the member's cluster DNS forwards the federation's zone to
// the chart's CoreDNS Service, as the chart's forward stanza lays it out.
//
// The controller runs with hostNetwork: it reaches the control plane and
// the members' API servers, which listen on the host's loopback, only
// through the node's forwarder, as a real controller reaches private API
// endpoints routed to nodes. The member's agent and CoreDNS stay in their
// own network namespaces and reach the control plane at an address the node
// exposes, standing for the load balancer in front of a real hub's API
// server.
func TestHelmChartRunsOnARealNode(t *testing.T) {
	if testing.Short() || !realNodes() {
		t.Skip("real nodes need root and minutes: KFED_REAL_NODES=1 (make test-nodes)")
	}
	fedtest.Helm(t)
	start := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	bin := t.TempDir()
	root := framework.RepoRoot(t)
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/kfed")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kfed: %v\n%s", err, out)
	}
	nodes := realNodeOptions(t, bin)
	nodes.Images = append(nodes.Images, kfedImages(t, filepath.Join(bin, "kfedimages"))...)
	nodes.ZoneForward = chartDNSIP + ":53"
	step("built the binaries and images")

	const federation, domain = "dev", "kfed.test"
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	// The member runs a scheduler and a controller manager, which make the
	// chart's Deployments' pods and place them, and one KWOK node besides
	// the real one.
	env, err := devenv.Start(ctx, devenv.Options{
		Dir: t.TempDir(), BinDir: framework.BinDir(t), Members: devenv.Members(1), Workloads: true, Nodes: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	member := env.Members[0]
	node, err := env.StartRealNode(ctx, member, 0, nodes, devenv.KfedZone{Zone: domain, Federation: federation, Cluster: member.Name})
	if err != nil {
		t.Fatal(err)
	}
	// On failure, what the DNS servers said: the cluster DNS's log and the
	// chart's CoreDNS pods' (before the bed stops).
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if b, err := os.ReadFile(filepath.Join(env.Dir, "logs", member.Name+"-cluster-dns.log")); err == nil {
			t.Logf("the cluster DNS's log:\n%s", b)
		}
		out, _ := exec.Command(filepath.Join(framework.BinDir(t), "kubectl"), "--kubeconfig", env.Kubeconfig, "--context", member.Name,
			"-n", "kfed-system", "logs", "--prefix", "--all-containers", "-l", "app.kubernetes.io/name=kfed-coredns").CombinedOutput()
		t.Logf("the chart's CoreDNS pods' logs:\n%s", out)
	})
	step(fmt.Sprintf("started the control plane, %s and its node (node Ready in %s)", member.Name, node.Started.Round(100*time.Millisecond)))
	mcs := installChart(ctx, t, env, node, bin, federation, domain, step)

	t.Run("every pod the chart makes runs on the real node, Ready by its probes", func(t *testing.T) {
		chartPodsReady(ctx, t, mcs, node.Name, step)
	})
	t.Run("the agent reports to the control plane from its pod", func(t *testing.T) {
		agentHeartbeats(ctx, t, env, mcs, member.Name)
	})
	t.Run("the controller publishes and the chart's CoreDNS answers as the member's cluster DNS", func(t *testing.T) {
		m := &memberNode{kubeconfig: env.Kubeconfig, member: member, node: node, cs: mcs, kubectl: filepath.Join(framework.BinDir(t), "kubectl")}
		m.defaultServiceAccount(t)
		publishAndResolve(ctx, t, env, m, federation, domain)
		step("published and resolved")
	})
}

// installChart installs the chart's three releases as a user of a dedicated
// control plane does (TestHelmChartRunsOnARealNode), with the Secrets they
// name, joins the member, and returns a client of the member.
func installChart(ctx context.Context, t *testing.T, env *devenv.Env, node *devenv.RealNode, bin, federation, domain string, step func(string)) kubernetes.Interface {
	t.Helper()
	member := env.Members[0]
	cpAddr := strings.TrimPrefix(env.ControlPlane.URL, "https://")
	exposed, err := node.Expose(cpAddr)
	if err != nil {
		t.Fatal(err)
	}

	// The control plane: a dedicated API server, no controller here.
	helm := func(context, release string, values string) {
		t.Helper()
		out, err := fedtest.RunHelm(t, "install", release, fedtest.ChartDir, "--kubeconfig", env.Kubeconfig, "--kube-context", context,
			"--namespace", "kfed-system", "--create-namespace", "-f", fedtest.WriteFile(t, bin, context+"-"+release+".yaml", values))
		if err != nil {
			t.Fatalf("helm install %s in %s: %v\n%s", release, context, err, out)
		}
	}
	common := fmt.Sprintf("federation: %s\ndomain: %s\nimage: {tag: %s}\n", federation, domain, imageTag)
	helm(devenv.ControlPlaneName, "kfed", common+"role: controlPlane\ncontroller: {enabled: false}\n")
	step("installed the control plane release")

	// Kubeconfigs of the control plane's identities, in Secrets of the
	// member as the chart's README says: the controller's names the API
	// server as the node reaches it; the agents', those of the member's own
	// identities (as kfed agent-kubeconfig prints them), as their pods do.
	cp, err := kubernetes.NewForConfig(env.ControlPlane.Config)
	if err != nil {
		t.Fatal(err)
	}
	mcs, err := kubernetes.NewForConfig(member.Config)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := kfedscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	fed, err := client.New(env.ControlPlane.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{ // Secret: kubeconfig
		"kfed-control-plane":          tokenKubeconfig(ctx, t, cp, "kfed-controller", env.ControlPlane.URL, env.ControlPlane.Config.CAData),
		"kfed-healthcheck-kubeconfig": agentKubeconfig(t, fed, member.Name, identity.HealthCheck, "https://"+exposed, env.ControlPlane.Config.CAData),
		"kfed-coredns-kubeconfig":     agentKubeconfig(t, fed, member.Name, identity.CoreDNS, "https://"+exposed, env.ControlPlane.Config.CAData),
	}
	if _, err := mcs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kfed-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, kc := range secrets {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: name}, StringData: map[string]string{"kubeconfig": kc}}
		if _, err := mcs.CoreV1().Secrets("kfed-system").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The real node is tainted so that simulated workloads keep off it;
	// the chart's placement values put every pod there.
	placement := "nodeSelector: {kfed.io/real-node: \"true\"}\ntolerations: [{key: kfed.io/real-node, operator: Exists, effect: NoSchedule}]\n"
	helm(member.Name, "kfed", common+placement+fmt.Sprintf(`role: member
member: {cluster: %s}
healthcheck: {kubeconfigSecret: {name: kfed-healthcheck-kubeconfig}}
coredns:
  kubeconfigSecret: {name: kfed-coredns-kubeconfig}
  service: {clusterIP: %s}
`, member.Name, chartDNSIP))
	// One replica: with hostNetwork each holds the node's ports 8080 and
	// 8081, and there is one real node.
	helm(member.Name, "kfed-controller", common+placement+`role: controlPlane
controller:
  kubeconfigSecret: {name: kfed-control-plane}
  hostNetwork: true
  replicas: 1
  clusterProbeInterval: 2s
`)
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "kfed"), "join", member.Name, "--kubeconfig", env.Kubeconfig,
		"--context", devenv.ControlPlaneName, "--service-account", "kfed-system/kfed-member",
		"--region", member.Region, "--zone", member.Zones[0]).CombinedOutput()
	if err != nil {
		t.Fatalf("kfed join %s: %v\n%s", member.Name, err, out)
	}
	step("installed the member and controller releases and joined " + member.Name)
	return mcs
}

// chartPodsReady waits until the member's kfed-system has the chart's four
// pods (the controller, the agent, two CoreDNS), each on the real node,
// Running and Ready, and logs how long each took from creation to Ready.
// The controller's and CoreDNS's readiness are their readiness probes
// (/readyz, CoreDNS's ready plugin), which the kubelet runs.
func chartPodsReady(ctx context.Context, t *testing.T, cs kubernetes.Interface, node string, step func(string)) {
	want := map[string]int{"kfed-controller": 1, "kfed-healthcheck": 1, "kfed-coredns": 2}
	var pods []corev1.Pod
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) error {
		list, err := cs.CoreV1().Pods("kfed-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		got := map[string]int{}
		for _, p := range list.Items {
			name := p.Labels["app.kubernetes.io/name"]
			if p.Spec.NodeName != node {
				return fmt.Errorf("pod %s is on %q, not the real node %s", p.Name, p.Spec.NodeName, node)
			}
			if p.Status.Phase != corev1.PodRunning || !podReady(&p) {
				return fmt.Errorf("pod %s is %s, not Ready: %s", p.Name, p.Status.Phase, containerStates(&p))
			}
			got[name]++
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("Ready pods by component %v, want %v", got, want)
		}
		pods = list.Items
		return nil
	})
	step("every chart pod Running and Ready")
	for _, p := range pods {
		var ready time.Time
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready = c.LastTransitionTime.Time
			}
		}
		restarts := int32(0)
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
		}
		probe := "no readiness probe"
		if p.Spec.Containers[0].ReadinessProbe != nil {
			probe = "readiness probe passed"
		}
		t.Logf("%s: Ready %s after creation (%s), %d restarts", p.Name, ready.Sub(p.CreationTimestamp.Time), probe, restarts)
		if p.Labels["app.kubernetes.io/name"] != "kfed-healthcheck" && p.Spec.Containers[0].ReadinessProbe == nil {
			t.Errorf("%s has no readiness probe: its readiness says nothing", p.Name)
		}
	}
}

// agentHeartbeats waits for the heartbeat of the chart's agent in the
// control plane: a Lease in its cluster's member namespace, named after its
// pod (its checker name) and labelled with its cluster, written through the
// node's exposed address.
func agentHeartbeats(ctx context.Context, t *testing.T, env *devenv.Env, mcs kubernetes.Interface, cluster string) {
	pods, err := mcs.CoreV1().Pods("kfed-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=kfed-healthcheck"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the agent's pod: %v, %d pods", err, len(pods.Items))
	}
	cp, err := kubernetes.NewForConfig(env.ControlPlane.Config)
	if err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		l, err := cp.CoordinationV1().Leases(kfedv1alpha1.MemberNamespace(cluster)).Get(ctx, pods.Items[0].Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("no heartbeat of the chart's agent: %w", err)
		}
		if l.Labels[kfedv1alpha1.LabelCluster] != cluster {
			return fmt.Errorf("heartbeat labels %v, want cluster %s", l.Labels, cluster)
		}
		return nil
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func containerStates(p *corev1.Pod) string {
	var b strings.Builder
	for _, c := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, "%s ready=%t restarts=%d %+v; ", c.Name, c.Ready, c.RestartCount, c.State)
	}
	return b.String()
}

// publishAndResolve federates Service default/web, whose pod runs on the
// real node, and checks what a user checks: the controller publishes its
// DNSEndpoint, and a pod in the member resolves the global name through
// its resolv.conf (the cluster DNS, which forwards the zone to the chart's
// CoreDNS) to the member's own shard's cluster IP, and fetches the page
// through it. The test plays the member's load-balancer implementation:
// it gives the shard the backend pod's address as its ingress, which the
// chart's agent probes from its pod.
func publishAndResolve(ctx context.Context, t *testing.T, env *devenv.Env, m *memberNode, federation, domain string) {
	backend := toolsPod("web", m.node.Name, false)
	backend.Labels = map[string]string{"app": "web"}
	backend.Spec.Containers[0].Command = serve(m.member.Name + " default/web")
	pod := toolsPod("resolver", m.node.Name, false)
	running := m.start(ctx, t, backend, pod)

	scheme, err := kfedscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	fed, err := client.New(env.ControlPlane.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	svc := fedtest.FederatedService("default", "web")
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	var shard *corev1.Service
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		s, err := m.cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("the controller's shard in %s: %w", m.member.Name, err)
		}
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: running["web"].Status.PodIP}}
		shard, err = m.cs.CoreV1().Services("default").UpdateStatus(ctx, s, metav1.UpdateOptions{})
		return err
	})
	fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(svc), kfedv1alpha1.ConditionPublished, "True", m.member.Name)
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var ep extdnsv1alpha1.DNSEndpoint
		if err := fed.Get(ctx, client.ObjectKeyFromObject(svc), &ep); err != nil {
			return fmt.Errorf("the controller's DNSEndpoint: %w", err)
		}
		for _, e := range ep.Spec.Endpoints {
			for _, target := range e.Targets {
				if target == running["web"].Status.PodIP {
					return nil
				}
			}
		}
		return fmt.Errorf("the DNSEndpoint does not name the shard's ingress %s: %+v", running["web"].Status.PodIP, ep.Spec.Endpoints)
	})

	// Inside the member its own shard is answered by cluster IP; through
	// the pod's resolv.conf (the kube-dns Service, which forwards the zone)
	// and straight from the chart's CoreDNS Service.
	name := "web.default." + federation + ".svc." + domain + "."
	for _, server := range []string{chartDNSIP, ""} {
		framework.Eventually(t, 60*time.Second, func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			args := []string{"exec", pod.Name, "--", "nslookup", name}
			if server != "" {
				args = append(args, server)
			}
			out, err := m.run(ctx, args...)
			if err != nil {
				return fmt.Errorf("nslookup %s %s: %v\n%s", name, server, err, out)
			}
			if addrs := nslookupAddresses(out); len(addrs) != 1 || addrs[0] != shard.Spec.ClusterIP {
				return fmt.Errorf("%s from %q: want the shard's cluster IP %s, got %v\n%s", name, server, shard.Spec.ClusterIP, addrs, out)
			}
			return nil
		})
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		page, err := m.httpGet(ctx, pod.Name, shard.Spec.ClusterIP, 8080)
		if err != nil || !strings.Contains(page, m.member.Name+" default/web") {
			return fmt.Errorf("the page from %s:8080: %v: %q", shard.Spec.ClusterIP, err, page)
		}
		return nil
	})
}

// tokenKubeconfig is a kubeconfig for the control plane's ServiceAccount
// kfed-system/sa (kfed-controller's) at server, verifying the serving
// certificate's name localhost whatever address server names.
func tokenKubeconfig(ctx context.Context, t *testing.T, cp kubernetes.Interface, sa, server string, ca []byte) string {
	t.Helper()
	hour := int64(3600)
	tok, err := cp.CoreV1().ServiceAccounts("kfed-system").CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of kfed-system/%s: %v", sa, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["federation"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca, TLSServerName: "localhost"}
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["federation"] = &clientcmdapi.Context{Cluster: "federation", AuthInfo: sa}
	cfg.CurrentContext = "federation"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// agentKubeconfig is a kubeconfig for member cluster's own identity c in
// the control plane at server (ADR 0013), verifying the serving
// certificate's name localhost whatever address server names.
func agentKubeconfig(t *testing.T, fed client.Client, cluster string, c identity.Component, server string, ca []byte) string {
	t.Helper()
	cfg := identity.Kubeconfig(&clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca, TLSServerName: "localhost"},
		cluster, c, fedtest.AgentToken(t, fed, cluster, c), "")
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// kfedImages builds kfed's three images for this machine's platform under
// imageTag, as make images does, and returns their OCI layouts.
func kfedImages(t *testing.T, out string) []string {
	t.Helper()
	cmd := exec.Command("go", "run", "./hack/images", "-version", imageTag, "-revision", "test",
		"-platforms", "linux/"+runtime.GOARCH, "-out", out)
	cmd.Dir = framework.RepoRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("building kfed's images: %v\n%s", err, stderr.String())
	}
	var dirs []string
	s := bufio.NewScanner(bytes.NewReader(stdout))
	for s.Scan() { // REF@DIGEST<TAB>DIR
		if _, dir, ok := strings.Cut(s.Text(), "\t"); ok {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) != 3 {
		t.Fatalf("hack/images built %d images, want 3:\n%s", len(dirs), stdout)
	}
	return dirs
}
