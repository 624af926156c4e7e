package release

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/framework"
	"github.com/kfed-io/kfed/test/pods"
)

// TestImagesRunTheChartsPodsThroughUpgradeAndUninstall is an operator's
// first contact with kfed, on real API servers and a real container
// runtime: helm install of the previous chart, with the images of its own
// source, in the control plane (publishing to a real BIND through RFC 2136)
// and in a member; the three images `make images` builds run under runc with the pod specs the API
// server holds for the chart's Deployments, as a kubelet would run them
// (test/pods); a federated Service published to BIND and answered by kfed's
// CoreDNS; helm upgrade to this chart and the pods rolled as a Deployment
// rolls them, during which BIND and CoreDNS never stop answering the
// Service; every container's probes passing; then helm uninstall, which
// removes what the chart made and leaves the CRDs, the users' objects and
// the published records.
func TestImagesRunTheChartsPodsThroughUpgradeAndUninstall(t *testing.T) {
	fedtest.Helm(t)
	rt := &pods.Runtime{Runc: runcPath(t), State: t.TempDir()}
	start := time.Now()
	step := func(what string) { t.Logf("%5.1fs %s", time.Since(start).Seconds(), what) }
	root := framework.RepoRoot(t)
	ctx := context.Background()

	// The build (mostly linking CoreDNS) overlaps the federation's start.
	type buildResult struct {
		layouts map[string]string
		err     error
	}
	built, builtBefore := make(chan buildResult, 1), make(chan buildResult, 1)
	imagesDir := t.TempDir()
	go func() {
		l, err := pods.BuildImages(ctx, root, imagesDir, "v0.0.0-images-e2e")
		built <- buildResult{l, err}
	}()
	// The previous chart runs the images of its own source, as a release
	// does: what this tree's images need of the chart (its RBAC) may be
	// what the previous chart lacks.
	previous, previousSource := previousChart(t, root)
	go func() {
		l, err := pods.BuildImages(ctx, previousSource, t.TempDir(), "v0.0.0-images-e2e-previous")
		builtBefore <- buildResult{l, err}
	}()
	f := framework.Start(t, framework.Members(1), framework.LoadBalancer())
	fed := f.Client("federation")
	member := f.Client("cluster-1")
	step("started the federation")
	// The chart owns the CRDs here (crds.install, its default), so that
	// uninstall can be seen to keep them.
	adoptCRDs(t, fed)

	tmp := t.TempDir()
	bind := bindtest.Start(t, "example.com")
	// The images go to a registry on loopback, where the chart's
	// image.registry sends the pods to pull them from.
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	registryHost := strings.TrimPrefix(reg.URL, "http://")
	admin, err := clientcmd.LoadFromFile(f.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	fedCluster := admin.Clusters["federation"]
	cpValues := fedtest.WriteFile(t, tmp, "control-plane.yaml", fmt.Sprintf(`
role: controlPlane
federation: fed
domain: example.com
image: {registry: %s/kfed-io}
controller:
  clusterProbeInterval: 500ms
dns:
  provider: rfc2136
  ownerID: fed
  interval: 2s
  rfc2136:
    host: 127.0.0.1
    port: %s
    zone: example.com
    tsigKeyName: %s
    tsigSecret: {name: kfed-tsig, key: secret}
`, registryHost, fedtest.Port(bind.Addr), bindtest.KeyName))
	memberValues := fedtest.WriteFile(t, tmp, "member.yaml", fmt.Sprintf(`
role: member
federation: fed
domain: example.com
image: {registry: %s/kfed-io}
member:
  cluster: cluster-1
  controlPlane:
    server: %s
    certificateAuthorityData: %s
healthcheck:
  interval: 1s
  timeout: 500ms
`, registryHost, fedCluster.Server, base64.StdEncoding.EncodeToString(fedCluster.CertificateAuthorityData)))

	// What the README's install asks of the operator: the TSIG Secret, the
	// chart in the control plane and in the member, kfed join with the
	// member's ServiceAccount, which also writes the tokens of the member's
	// own agent identities where the chart mounts them (clusters.Join makes
	// the identities; the tokens are the CLI's part).
	fedtest.Create(t, fed, framework.Namespace("kfed-system"), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: "kfed-tsig"},
		StringData: map[string]string{"secret": bind.Secret},
	})
	previousImages := fedtest.WriteFile(t, tmp, "previous.yaml", "image: {tag: previous}\n")
	helmRun(t, f, "federation", "install", previous, cpValues, previousImages)
	fedtest.Create(t, member, framework.Namespace("kfed-system"))
	helmRun(t, f, "cluster-1", "install", previous, memberValues, previousImages)
	joinConfig := admin.DeepCopy()
	joinConfig.AuthInfos["cluster-1"] = &clientcmdapi.AuthInfo{Token: f.Token("cluster-1", "kfed-system", "kfed-member")}
	m := f.Members[0]
	if _, err := clusters.Join(ctx, fed, clusters.JoinOptions{Name: m.Name, Region: m.Region, Zones: m.Zones, Kubeconfig: joinConfig}); err != nil {
		t.Fatalf("joining cluster-1 with its kfed-member ServiceAccount: %v", err)
	}
	// A chart from before ADR 0013 made one identity for every member's
	// agents, kfed-system/kfed-healthcheck (and kfed-coredns), whose
	// tokens its agents mount, and they report in kfed-system.
	heartbeats := kfedv1alpha1.MemberNamespace(m.Name)
	if _, err := os.Stat(filepath.Join(previous, "templates", "member-identities.yaml")); err == nil {
		heartbeats = kfedv1alpha1.DefaultNamespace
		for _, sa := range []string{"kfed-healthcheck", "kfed-coredns"} {
			fedtest.Create(t, member, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: sa + "-token"},
				StringData: map[string]string{"token": f.Token("federation", "kfed-system", sa)}})
		}
	} else {
		fedtest.WriteAgentTokens(t, fed, member, m.Name)
	}
	step("installed the previous chart and joined cluster-1")

	b, prev := <-built, <-builtBefore
	if err := errors.Join(b.err, prev.err); err != nil {
		t.Fatal(err)
	}
	step("built the images, and the previous source's")
	// This tree's tagged with the chart's appVersion, which the chart pulls
	// by default, as a release would be; the previous source's "previous".
	for name, dir := range b.layouts {
		compressed, unpacked := imageSize(t, dir)
		t.Logf("FIGURE image %s: %.1f MiB compressed, %.1f MiB unpacked", name, mib(compressed), mib(unpacked))
		if err := pods.Push(ctx, dir, registryHost+"/kfed-io/"+name+":"+appVersion(t, filepath.Join(root, fedtest.ChartDir))); err != nil {
			t.Fatal(err)
		}
	}
	for name, dir := range prev.layouts {
		if err := pods.Push(ctx, dir, registryHost+"/kfed-io/"+name+":previous"); err != nil {
			t.Fatal(err)
		}
	}
	step("pushed the images to a registry on loopback")
	k := &kubelet{t: t, f: f, rt: rt, pulled: map[string]string{}, pods: map[string]*runningPod{}}
	k.sync("federation")
	k.sync("cluster-1")
	step("the chart's pods run under runc")

	svc := fedtest.FederatedService("default", "web")
	fedtest.Create(t, fed, svc)
	fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(svc), kfedv1alpha1.ConditionPublished, "True", "cluster-1")
	global := slices.Sorted(slices.Values(shardAddresses(t, f, "default", "web", "")))
	local := shardAddresses(t, f, "default", "web", "cluster-1")
	name := "web.default.fed.svc.example.com."
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		return fedtest.WantAddresses(bind.Addr, "udp", name, dns.TypeA, global...)
	})
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		return fedtest.WantAddresses(k.dnsAddr(), "udp", name, dns.TypeA, local...)
	})
	k.wantHeartbeat(ctx, fed, heartbeats)
	step("the controller published web to BIND, the agent reports, kfed's CoreDNS answers")

	// A second federated Service, so that the upgrade has more than one
	// to keep.
	api := fedtest.FederatedService("default", "api")
	fedtest.Create(t, fed, api)
	fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(api), kfedv1alpha1.ConditionPublished, "True", "cluster-1")
	apiGlobal := shardAddresses(t, f, "default", "api", "")
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		return fedtest.WantAddresses(bind.Addr, "udp", "api.default.fed.svc.example.com.", dns.TypeA, apiGlobal...)
	})
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		return fedtest.WantAddresses(k.dnsAddr(), "udp", "api.default.fed.svc.example.com.", dns.TypeA, shardAddresses(t, f, "default", "api", "cluster-1")...)
	})
	before, err := snapshotPublished(bind, k.dnsAddr())
	if err != nil {
		t.Fatal(err)
	}
	if len(before.coredns) < 8 {
		t.Fatalf("only %d names published before the upgrade: %v", len(before.coredns), before.coredns)
	}
	step(fmt.Sprintf("published api too: %d records in BIND, %d names answered by kfed's CoreDNS", len(before.bind), len(before.coredns)))

	// From here until the upgraded pods have published a new Service, BIND
	// keeps every record and kfed's CoreDNS every answer, checked every 100 ms.
	watch := startDNSWatch(bind, k.withDNS, before)
	t.Cleanup(func() { watch.stop() }) // when the test stops early
	// The chart README's upgrade: kfed join --renew gives the member's
	// agents tokens of its own identities (a no-op's worth of change when
	// they had them), then the charts.
	fedtest.WriteAgentTokens(t, fed, member, m.Name)
	helmRun(t, f, "federation", "upgrade", filepath.Join(root, fedtest.ChartDir), cpValues)
	helmRun(t, f, "cluster-1", "upgrade", filepath.Join(root, fedtest.ChartDir), memberValues)
	step("helm upgrade to this chart")
	rolled := k.sync("federation") + k.sync("cluster-1")
	step(fmt.Sprintf("rolled %d pods to the new templates", rolled))

	// After the upgrade: the new pods' every probe passes, the controller
	// publishes a new Service, the new agent reports.
	k.wantProbes(ctx)
	two := fedtest.FederatedService("default", "two")
	fedtest.Create(t, fed, two)
	fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(two), kfedv1alpha1.ConditionPublished, "True", "cluster-1")
	twoGlobal := shardAddresses(t, f, "default", "two", "")
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		return fedtest.WantAddresses(bind.Addr, "udp", "two.default.fed.svc.example.com.", dns.TypeA, twoGlobal...)
	})
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		return fedtest.WantAddresses(k.dnsAddr(), "udp", name, dns.TypeA, local...)
	})
	k.wantHeartbeat(ctx, fed, kfedv1alpha1.MemberNamespace(m.Name))
	// The watch spans the new controller's first DNS passes too: an
	// upgrade that lost track of what it owns would delete records there.
	// It makes at least 20 checks (2 s) even when the upgrade rolled no pod
	// (a chart change that renders them alike) and so was over at once.
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		if n := watch.queries(); n < 20 {
			return fmt.Errorf("%d DNS checks so far", n)
		}
		return nil
	})
	if gaps := watch.stop(); len(gaps) > 0 {
		t.Errorf("during the upgrade, records went missing or answers changed %d times; first: %s", len(gaps), gaps[0])
	}
	step(fmt.Sprintf("after the upgrade every probe passes and a new Service is published; %d checks of BIND's zone and CoreDNS's answers, nothing lost", watch.queries()))

	// helm uninstall: what the chart made goes (and so do its pods), the
	// CRDs and the users' objects stay, and so do the published records.
	made := map[string][]*unstructured.Unstructured{}
	for _, cluster := range []string{"federation", "cluster-1"} {
		out, err := fedtest.RunHelm(t, "get", "manifest", "kfed", "--kubeconfig", f.Kubeconfig, "--kube-context", cluster, "-n", "kfed-system")
		if err != nil {
			t.Fatal(err)
		}
		if made[cluster], err = decodeObjects([]byte(out)); err != nil {
			t.Fatal(err)
		}
		if _, err := fedtest.RunHelm(t, "uninstall", "kfed", "--kubeconfig", f.Kubeconfig, "--kube-context", cluster, "-n", "kfed-system", "--wait"); err != nil {
			t.Fatalf("helm uninstall in %s: %v", cluster, err)
		}
		k.sync(cluster)
	}
	step("helm uninstall")
	for cluster, objs := range made {
		c := f.Client(cluster)
		crds := 0
		for _, o := range objs {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(o.GroupVersionKind())
			key := client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}
			if key.Namespace == "" && isNamespaced(o.GetKind()) {
				key.Namespace = "kfed-system"
			}
			err := c.Get(ctx, key, got)
			if o.GetKind() == "CustomResourceDefinition" {
				crds++
				if err != nil {
					t.Errorf("%s: uninstall removed CRD %s: %v", cluster, o.GetName(), err)
				}
				continue
			}
			if err == nil && got.GetDeletionTimestamp() == nil {
				t.Errorf("%s: uninstall left %s %s", cluster, o.GetKind(), key)
			} else if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("%s: %s %s: %v", cluster, o.GetKind(), key, err)
			}
		}
		if cluster == "federation" && crds == 0 {
			t.Errorf("the control plane's release made no CRD")
		}
	}
	for _, o := range []struct {
		c   client.Client
		obj client.Object
	}{
		{fed, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}},
		{fed, &extdnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}},
		{fed, &kfedv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster-1"}}},
		{fed, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: "kfed-tsig"}}},
		{member, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: "kfed-healthcheck-token"}}},
		{member, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}},
	} {
		if err := o.c.Get(ctx, client.ObjectKeyFromObject(o.obj), o.obj); err != nil {
			t.Errorf("uninstall took %T %s: %v", o.obj, client.ObjectKeyFromObject(o.obj), err)
		}
	}
	if err := fedtest.WantAddresses(bind.Addr, "udp", name, dns.TypeA, global...); err != nil {
		t.Errorf("after uninstall: %v", err)
	}
	if n := k.running(); n != 0 {
		t.Errorf("%d containers still run after uninstall", n)
	}

	// The README's install, as written but for what readmeInstall says the
	// bed replaces, on what the uninstall left (CRDs, the joined
	// cluster-1, the agents' token Secrets): every pod comes up again and
	// passes its probes, the README's renewal gives kfed the reinstalled
	// member's credentials, and a new Service is published to BIND and
	// answered by kfed's CoreDNS.
	bins := buildBinaries(t, "kfed")
	if bins == nil {
		t.FailNow()
	}
	steps, renew := readmeInstall(t, [][2]string{
		{"-f deploy/chart/kfed/examples/control-plane-route53.yaml", "-f deploy/chart/kfed/examples/control-plane-rfc2136.yaml"},
		{"--set dns.route53.zoneID=Z0123456789ABCDEFGHIJ", fmt.Sprintf("--set dns.ownerID=fed --set dns.rfc2136.host=127.0.0.1 "+
			"--set dns.rfc2136.port=%s --set dns.rfc2136.zone=example.com --set dns.rfc2136.tsigKeyName=%s", fedtest.Port(bind.Addr), bindtest.KeyName)},
		{"myfed", "fed"},
		{"global.example.com", "example.com"},
		{"cluster-1 cluster-2", "cluster-1"},
		{"kubectl --context federation -n kfed-system rollout status deployment/kfed-controller", ""},
		{"bin/kfed ", bins["kfed"] + " "},
		// The bed's kubelet mounts a Secret once, when the pod starts, and
		// never follows it as kubelets do (test/pods): renewed and revoked,
		// the agents' tokens would leave these pods with the old ones. Their
		// rotation is tested where a file follows the Secret
		// (test/e2e/identity) and in TestChartInstalls.
		{"--renew", "--renew --agents-namespace="},
	})
	runScript(t, f, steps, "REGISTRY="+registryHost+"/kfed-io", "TAG="+appVersion(t, filepath.Join(root, fedtest.ChartDir)))
	k.sync("federation")
	k.sync("cluster-1")
	if n := k.running(); n != 3 {
		t.Errorf("after the README's install %d pods run, want 3 (kfed-controller, kfed-healthcheck, kfed-coredns)", n)
	}
	k.wantProbes(ctx)
	step("the README's install steps 1 and 2: every pod runs and passes its probes")
	runScript(t, f, renew)
	k.wantHeartbeat(ctx, fed, kfedv1alpha1.MemberNamespace("cluster-1"))
	three := fedtest.FederatedService("default", "three")
	fedtest.Create(t, fed, three)
	threeGlobal := shardAddresses(t, f, "default", "three", "")
	framework.Eventually(t, 60*time.Second, func(context.Context) error {
		return fedtest.WantAddresses(bind.Addr, "udp", "three.default.fed.svc.example.com.", dns.TypeA, threeGlobal...)
	})
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		return fedtest.WantAddresses(k.dnsAddr(), "udp", "three.default.fed.svc.example.com.", dns.TypeA, shardAddresses(t, f, "default", "three", "cluster-1")...)
	})
	step("the README's renewal of cluster-1's credentials; a new Service published to BIND and answered by kfed's CoreDNS")
}

// runcPath is the runc hack/install-runc.sh installs (hack/test.sh runs it).
func runcPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("runc")
	if err != nil {
		t.Fatalf("runc is missing: run hack/install-runc.sh (make test does): %v", err)
	}
	return path
}

// previousChart writes the source users upgrade from into a folder of the
// test's and returns its chart and the folder, whose images the chart
// runs: the source of the last release (the nearest v* tag)
// if it differs from this one; else the chart before its last change, that
// is of the commit before the last one that changed its templates, values
// or files (its README aside), or of HEAD when the working tree changes them.
func previousChart(t *testing.T, root string) (chart, source string) {
	t.Helper()
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, errb.String())
		}
		return strings.TrimSpace(out.String()), nil
	}
	paths := []string{"--", fedtest.ChartDir, ":(exclude)" + fedtest.ChartDir + "/README.md"}
	rev := ""
	// The last release, when there is one and its chart differs: what users
	// upgrade from.
	if tag, err := git("describe", "--tags", "--match", "v*", "--abbrev=0"); err == nil && tag != "" {
		if _, err := git(append([]string{"diff", "--quiet", tag}, paths...)...); err != nil {
			rev = tag
		}
	}
	if rev == "" {
		rev = "HEAD"
		if _, err := git(append([]string{"diff", "--quiet", "HEAD"}, paths...)...); err == nil {
			last, err := git(append([]string{"log", "-1", "--format=%H"}, paths...)...)
			if err != nil || last == "" {
				t.Fatalf("no commit changed the chart (a shallow clone?): %v", err)
			}
			rev = last + "^"
		}
	}
	dir := t.TempDir()
	archive := exec.Command("git", "archive", "--format=tar", rev)
	archive.Dir = root
	data, err := archive.Output()
	if err != nil {
		t.Fatalf("git archive %s: %v", rev, err)
	}
	untar := exec.Command("tar", "-x", "-C", dir)
	untar.Stdin = bytes.NewReader(data)
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("unpacking the previous source: %v\n%s", err, out)
	}
	short, _ := git("rev-parse", "--short", rev)
	t.Logf("the previous chart is the one of %s (%s)", rev, short)
	return filepath.Join(dir, fedtest.ChartDir), dir
}

// helmRun runs helm install or upgrade of release kfed in kfed-system.
func helmRun(t *testing.T, f *framework.Federation, cluster, verb, chart string, values ...string) {
	t.Helper()
	args := []string{verb, "kfed", chart, "--kubeconfig", f.Kubeconfig, "--kube-context", cluster, "--namespace", "kfed-system"}
	for _, v := range values {
		args = append(args, "-f", v)
	}
	if _, err := fedtest.RunHelm(t, args...); err != nil {
		t.Fatalf("helm %s in %s: %v", verb, cluster, err)
	}
}

// adoptCRDs marks the test bed's CRDs (the chart's files, as
// TestChartCarriesTheGeneratedCRDsAndRBAC checks) as release kfed's, as
// Helm requires before it takes over objects it did not create, so that the
// chart owns them as if it had made them, and uninstall must keep them.
func adoptCRDs(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("apiextensions.k8s.io/v1")
	list.SetKind("CustomResourceDefinitionList")
	if err := c.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		crd := &list.Items[i]
		labels, annotations := crd.GetLabels(), crd.GetAnnotations()
		if labels == nil {
			labels = map[string]string{}
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		labels["app.kubernetes.io/managed-by"] = "Helm"
		annotations["meta.helm.sh/release-name"] = "kfed"
		annotations["meta.helm.sh/release-namespace"] = "kfed-system"
		crd.SetLabels(labels)
		crd.SetAnnotations(annotations)
		if err := c.Update(ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
}

func isNamespaced(kind string) bool {
	switch kind {
	case "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Namespace":
		return false
	}
	return true
}

// kubelet does for the test what a kubelet (and the Deployment controller)
// would: it runs one pod of each of the chart's Deployments in a cluster
// under runc, and when a Deployment's template changes, starts the new pod,
// waits for it to be ready and stops the old one (the chart's one-replica
// rollout: surge one, none unavailable).
type kubelet struct {
	t  *testing.T
	f  *framework.Federation
	rt *pods.Runtime
	// pulled maps each image reference pulled to its OCI layout: pulled
	// once, as with the chart's imagePullPolicy IfNotPresent.
	pulled map[string]string

	mu   sync.Mutex
	pods map[string]*runningPod // by cluster/Deployment

	// dns is the ready kfed CoreDNS's DNS address, what its Service would
	// route to. Queries hold dnsMu for reading; a roll swaps the address
	// under the write lock before it stops the old pod, so that, as when
	// a terminating pod leaves its Service's endpoints, nothing is sent to
	// a pod that is stopping.
	dnsMu sync.RWMutex
	dns   string
}

type runningPod struct {
	name, image string
	template    corev1.PodTemplateSpec
	run         *pods.Running
	ports       map[int32]string
	started     time.Time
	ready       time.Duration
}

// sync makes the running pods match the cluster's Deployments in
// kfed-system and returns how many pods it started.
func (k *kubelet) sync(cluster string) int {
	t := k.t
	t.Helper()
	var list appsv1.DeploymentList
	if err := k.f.Client(cluster).List(context.Background(), &list, client.InNamespace("kfed-system")); err != nil {
		t.Fatal(err)
	}
	started := 0
	seen := map[string]bool{}
	for _, d := range list.Items {
		key := cluster + "/" + d.Name
		seen[key] = true
		old := k.pods[key]
		if old != nil && equalTemplates(old.template, d.Spec.Template) {
			continue
		}
		p := k.startPod(cluster, &d)
		started++
		k.mu.Lock()
		k.pods[key] = p
		k.mu.Unlock()
		if d.Name == "kfed-coredns" {
			k.dnsMu.Lock()
			k.dns = p.ports[5353]
			k.dnsMu.Unlock()
		}
		if old != nil {
			old.run.Stop(context.Background())
		}
	}
	for key, p := range k.pods {
		if strings.HasPrefix(key, cluster+"/") && !seen[key] {
			p.run.Stop(context.Background())
			k.mu.Lock()
			delete(k.pods, key)
			k.mu.Unlock()
		}
	}
	return started
}

func equalTemplates(a, b corev1.PodTemplateSpec) bool {
	return a.Spec.String() == b.Spec.String() && fmt.Sprint(a.Annotations) == fmt.Sprint(b.Annotations)
}

// startPod runs a pod of Deployment d and waits until it is ready. Each port
// of its containers moves to a free loopback address: in the flags that
// bind it (--metrics-bind-address=:8080) and in a Corefile of a ConfigMap.
func (k *kubelet) startPod(cluster string, d *appsv1.Deployment) *runningPod {
	t := k.t
	t.Helper()
	spec := *d.Spec.Template.Spec.DeepCopy()
	ports := map[int32]string{}
	images := map[string]string{}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		for _, p := range c.Ports {
			if _, ok := ports[p.ContainerPort]; !ok {
				ports[p.ContainerPort] = framework.FreeAddr(t)
			}
		}
		for j, a := range c.Args {
			if flag, value, ok := strings.Cut(a, "=:"); ok {
				var n int32
				if _, err := fmt.Sscan(value, &n); err == nil && ports[n] != "" {
					c.Args[j] = flag + "=" + ports[n]
				}
			}
		}
		layout, ok := k.pulled[c.Image]
		if !ok {
			layout = t.TempDir()
			if err := pods.Pull(context.Background(), c.Image, layout); err != nil {
				t.Fatalf("%s: %v", d.Name, err)
			}
			k.pulled[c.Image] = layout
		}
		images[c.Image] = layout
	}
	name := fmt.Sprintf("%s-%d", d.Name, d.Generation)
	pod := &pods.Pod{
		Name: name, Namespace: d.Namespace, Spec: spec, Images: images,
		Client: k.f.Clientset(cluster), APIServer: k.f.Cluster(cluster).Config, Ports: ports, Dir: t.TempDir(),
		Edit: func(volume, key string, data []byte) ([]byte, error) {
			if key != "Corefile" {
				return data, nil
			}
			return []byte(fedtest.LoopbackCorefile(t, string(data), map[string]string{
				":5353 {":          ":" + fedtest.Port(ports[5353]) + " {\n    bind 127.0.0.1",
				"health :8080":     "health " + ports[8080],
				"ready :8181":      "ready " + ports[8181],
				"prometheus :9153": "prometheus " + ports[9153],
			})), nil
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	started := time.Now()
	run, err := k.rt.Start(ctx, pod)
	if err != nil {
		t.Fatalf("%s: %v", cluster, err)
	}
	t.Cleanup(func() {
		run.Stop(context.Background())
		if t.Failed() {
			for _, c := range spec.Containers {
				t.Logf("%s, container %s:\n%s", name, c.Name, run.Log(c.Name))
			}
		}
	})
	p := &runningPod{name: name, image: spec.Containers[0].Image, template: d.Spec.Template, run: run, ports: ports, started: started}
	for _, c := range spec.Containers {
		ready, err := run.WaitReady(ctx, c.Name)
		if err != nil {
			t.Fatalf("%s: %v", cluster, err)
		}
		p.ready = max(p.ready, ready)
	}
	t.Logf("FIGURE start-to-ready %s (%s): %v", name, p.image, p.ready.Round(5*time.Millisecond))
	return p
}

func (k *kubelet) dnsAddr() string {
	k.dnsMu.RLock()
	defer k.dnsMu.RUnlock()
	return k.dns
}

// withDNS calls f with the ready kfed CoreDNS's address, which stays
// served until f returns.
func (k *kubelet) withDNS(f func(addr string) error) error {
	k.dnsMu.RLock()
	defer k.dnsMu.RUnlock()
	return f(k.dns)
}

func (k *kubelet) sortedPods() []*runningPod {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []*runningPod
	for _, key := range slices.Sorted(maps.Keys(k.pods)) {
		out = append(out, k.pods[key])
	}
	return out
}

// running is how many pods still run.
func (k *kubelet) running() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.pods)
}

// wantProbes runs every container's liveness and readiness probes, as
// rendered, against the running containers, and checks what the kernel
// says of each container's process.
func (k *kubelet) wantProbes(ctx context.Context) {
	t := k.t
	t.Helper()
	for _, p := range k.sortedPods() {
		if err := p.run.Exited(); err != nil {
			t.Error(err)
			continue
		}
		for _, c := range p.template.Spec.Containers {
			// The kernel's view: the chart's user and fsGroup, no
			// capabilities, no new privileges, a read-only root.
			proc, err := p.run.Kernel(ctx, c.Name)
			if err != nil {
				t.Error(err)
			} else if proc.UID != "65532 65532 65532 65532" || proc.GID != "65532 65532 65532 65532" || proc.Groups != "65532" ||
				proc.CapEff != "0000000000000000" || proc.CapBnd != "0000000000000000" || !proc.NoNewPrivs || !proc.RootReadOnly {
				t.Errorf("%s/%s runs as %+v, want uid and gid 65532, group 65532, no capabilities, no new privileges, read-only root", p.name, c.Name, proc)
			} else if limit := c.Resources.Limits.Memory().Value(); limit == 0 || proc.MemoryLimit != limit {
				t.Errorf("%s/%s: memory cgroup limit %d, want the chart's %d", p.name, c.Name, proc.MemoryLimit, limit)
			}
			for kind, probe := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
				if probe == nil {
					continue
				}
				if err := probeAsKubelet(ctx, p.run, c.Name, probe); err != nil {
					t.Errorf("%s/%s: %s probe: %v", p.name, c.Name, kind, err)
				}
			}
		}
	}
}

// probeAsKubelet runs a probe as often as the kubelet would before acting
// on it (failureThreshold times in a row, default 3), a second apart rather
// than periodSeconds, and returns the last error if every try failed: the
// kubelet would then restart the container (liveness) or take it out of
// its Services (readiness).
func probeAsKubelet(ctx context.Context, run *pods.Running, container string, probe *corev1.Probe) error {
	tries := int(probe.FailureThreshold)
	if tries == 0 {
		tries = 3
	}
	var err error
	for i := 0; i < tries; i++ {
		if i > 0 {
			time.Sleep(time.Second)
		}
		if err = run.Probe(ctx, container, probe); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%d tries in a row: %w", tries, err)
}

// wantHeartbeat waits for the running agent's heartbeat Lease, named after
// its pod (--checker=$(POD_NAME)), to be written in cluster-1's member
// namespace of the control plane since the pod started.
func (k *kubelet) wantHeartbeat(ctx context.Context, fed client.Client, namespace string) {
	t := k.t
	t.Helper()
	k.mu.Lock()
	agent := k.pods["cluster-1/kfed-healthcheck"]
	k.mu.Unlock()
	if agent == nil {
		t.Fatal("no agent pod runs")
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var l coordinationv1.Lease
		if err := fed.Get(ctx, client.ObjectKey{Namespace: namespace, Name: agent.name}, &l); err != nil {
			return fmt.Errorf("no heartbeat of agent %s: %w", agent.name, err)
		}
		if l.Labels[kfedv1alpha1.LabelCluster] != "cluster-1" {
			return fmt.Errorf("heartbeat labels %v", l.Labels)
		}
		// Lease times have microseconds; the pod's start has more.
		if l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(agent.started.Truncate(time.Second)) {
			return errors.New("no heartbeat since the agent started")
		}
		return nil
	})
}

// published is what BIND and kfed's CoreDNS answer for kfed's names: every
// record of BIND's zone but the SOA (by AXFR), and CoreDNS's answer to each
// A, AAAA, CNAME and SRV name of it (its own cluster's endpoints are cluster
// IPs there, so its answers are its own).
type published struct {
	bind    map[string]bool   // each record, as dns.RR.String gives it
	coredns map[string]string // "NAME TYPE" → the answers, sorted
}

func snapshotPublished(bind *bindtest.Server, corednsAddr string) (published, error) {
	rrs, err := bind.Transfer()
	if err != nil {
		return published{}, err
	}
	p := published{bind: map[string]bool{}, coredns: map[string]string{}}
	for _, rr := range rrs {
		h := rr.Header()
		if h.Rrtype == dns.TypeSOA {
			continue
		}
		p.bind[rr.String()] = true
		switch h.Rrtype {
		case dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeSRV:
		default:
			continue
		}
		r, err := fedtest.Query(corednsAddr, "udp", h.Name, h.Rrtype)
		if err != nil {
			return published{}, err
		}
		answers := fedtest.AnswerStrings(r)
		slices.Sort(answers)
		p.coredns[h.Name+" "+dns.TypeToString[h.Rrtype]] = dns.RcodeToString[r.Rcode] + " " + strings.Join(answers, ", ")
	}
	return p, nil
}

// missing lists what of want p lacks: records gone from BIND, and answers
// of CoreDNS that changed. Records p has in addition are not listed.
func (p published) missing(want published) []string {
	var out []string
	for rr := range want.bind {
		if !p.bind[rr] {
			out = append(out, "BIND lost "+rr)
		}
	}
	for q, a := range want.coredns {
		if p.coredns[q] != a {
			out = append(out, fmt.Sprintf("kfed's CoreDNS answers %s with %q, was %q", q, p.coredns[q], a))
		}
	}
	slices.Sort(out)
	return out
}

// dnsWatch compares, every 100 ms, what BIND and kfed's CoreDNS answer with
// a snapshot of before, and notes every record lost or answer changed.
type dnsWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	gaps   []string
	n      int
}

func startDNSWatch(bind *bindtest.Server, withCoreDNS func(func(addr string) error) error, want published) *dnsWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &dnsWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			var got published
			err := withCoreDNS(func(addr string) error {
				var err error
				got, err = snapshotPublished(bind, addr)
				return err
			})
			w.mu.Lock()
			w.n++
			now := time.Now().Format("15:04:05.000")
			if err != nil {
				w.gaps = append(w.gaps, now+" "+err.Error())
			}
			for _, m := range got.missing(want) {
				if err == nil {
					w.gaps = append(w.gaps, now+" "+m)
				}
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *dnsWatch) stop() []string {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gaps
}

func (w *dnsWatch) queries() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// appVersion is the appVersion of the chart in dir.
func appVersion(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &chart); err != nil || chart.AppVersion == "" {
		t.Fatalf("%s/Chart.yaml: no appVersion: %v", dir, err)
	}
	return chart.AppVersion
}

// imageSize is an image's size for this machine: its blobs (manifest,
// config, compressed layers: what a pull transfers) and its layers
// unpacked, read from the OCI layout.
func imageSize(t *testing.T, layout string) (compressed, unpacked int64) {
	t.Helper()
	dir := t.TempDir()
	img, err := pods.Unpack(layout, dir)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.Walk(img.Rootfs, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			unpacked += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	compressed, err = pods.PulledSize(layout)
	if err != nil {
		t.Fatal(err)
	}
	return compressed, unpacked
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
