package release

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/test/fedtest"

	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/devenv"
	"github.com/kfed-io/kfed/internal/memlimit"
	"github.com/kfed-io/kfed/policy/tenancy"
	"github.com/kfed-io/kfed/test/bindtest"
	"github.com/kfed-io/kfed/test/framework"
)

// renderChart runs helm template for release kfed in kfed-system with the
// values files and --set values, and returns the objects.
func renderChart(t *testing.T, valueFiles []string, set ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", "kfed", fedtest.ChartDir, "--namespace", "kfed-system"}
	for _, f := range valueFiles {
		args = append(args, "-f", f)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := fedtest.RunHelm(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects([]byte(out))
	if err != nil {
		t.Fatalf("helm template %v %v: %v", valueFiles, set, err)
	}
	return objs
}

// decodeObjects decodes a YAML stream strictly: a document that is not an
// object with apiVersion, kind and name, or has a key twice, is an error.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.UnmarshalStrict(doc, &m); err != nil {
			return nil, fmt.Errorf("%w in\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("an object without apiVersion, kind or name:\n%s", doc)
		}
		objs = append(objs, u)
	}
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func mustFind(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	o := find(objs, kind, name)
	if o == nil {
		t.Fatalf("the chart renders no %s %s", kind, name)
	}
	return o
}

func convert[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	var v T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &v); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return &v
}

func examples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(framework.RepoRoot(t), fedtest.ChartDir, "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no values examples in %s/examples: %v", fedtest.ChartDir, err)
	}
	return files
}

// TestChartLintsAndRendersEveryExample runs helm lint and helm template for
// every values example and checks what every pod of the chart promises.
func TestChartLintsAndRendersEveryExample(t *testing.T) {
	fedtest.Helm(t)
	for _, file := range examples(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			if out, err := fedtest.RunHelm(t, "lint", "--strict", fedtest.ChartDir, "-f", file); err != nil {
				t.Fatalf("helm lint: %v\n%s", err, out)
			}
			objs := renderChart(t, []string{file})
			deployments := 0
			for _, o := range objs {
				if o.GetKind() != "Deployment" {
					continue
				}
				deployments++
				d := convert[appsv1.Deployment](t, o)
				wantHardenedPod(t, d)
			}
			if deployments == 0 && find(objs, "ClusterRole", "kfed-controller") == nil {
				t.Errorf("neither a Deployment nor the control plane's RBAC rendered")
			}
			if find(objs, "Secret", "") != nil {
				t.Errorf("a Secret without a name")
			}
			// Objects of the Prometheus Operator's CRDs fail an install
			// without them: only where asked for, and said so.
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				if strings.HasPrefix(o.GetAPIVersion(), "monitoring.coreos.com/") && !strings.Contains(string(data), "Prometheus Operator") {
					t.Errorf("renders %s %s, whose CRD is the Prometheus Operator's, without saying so", o.GetKind(), o.GetName())
				}
			}
		})
	}
}

// TestChartPassesHostnameReservationsAsTheControllerReadsThem: the
// chart's hostnameReservations reach kfed-controller's --hostname-namespaces
// in the form its parser takes.
func TestChartPassesHostnameReservationsAsTheControllerReadsThem(t *testing.T) {
	fedtest.Helm(t)
	objs := renderChart(t, nil, "federation=fed", "domain=example.com",
		`hostnameReservations.shop\.example\.com={shop}`, `hostnameReservations.example\.com={web,ops}`)
	d := convert[appsv1.Deployment](t, mustFind(t, objs, "Deployment", "kfed-controller"))
	var flag string
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--hostname-namespaces="); ok {
			flag = v
		}
	}
	got, err := tenancy.ParseReservations(flag)
	if err != nil {
		t.Fatalf("kfed-controller would refuse --hostname-namespaces=%s: %v", flag, err)
	}
	want := []tenancy.Reservation{{Suffix: "example.com", Namespaces: []string{"web", "ops"}}, {Suffix: "shop.example.com", Namespaces: []string{"shop"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reservations %+v, want %+v", got, want)
	}
	if objs := renderChart(t, nil, "federation=fed", "domain=example.com"); slices.ContainsFunc(
		convert[appsv1.Deployment](t, mustFind(t, objs, "Deployment", "kfed-controller")).Spec.Template.Spec.Containers[0].Args,
		func(a string) bool { return strings.HasPrefix(a, "--hostname-namespaces") }) {
		t.Error("--hostname-namespaces rendered without reservations")
	}
}

// wantHardenedPod checks a Deployment's pods run as user 65532, non-root,
// read-only, without capabilities, under RuntimeDefault seccomp, with the
// chart's image and resources, and take no secret from values.
func wantHardenedPod(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ps := d.Spec.Template.Spec
	if sc := ps.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext %+v", d.Name, sc)
	}
	for _, c := range ps.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
			*sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("%s/%s: container securityContext %+v", d.Name, c.Name, sc)
		}
		if !strings.HasPrefix(c.Image, "ghcr.io/kfed-io/kfed-") || !strings.HasSuffix(c.Image, ":0.1.0") {
			t.Errorf("%s/%s: image %s, want ghcr.io/kfed-io/kfed-*:<appVersion>", d.Name, c.Name, c.Image)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s/%s: resources %+v", d.Name, c.Name, c.Resources)
		}
		if c.ReadinessProbe == nil && c.Name != "kfed-healthcheck" || c.LivenessProbe == nil {
			t.Errorf("%s/%s: probes missing", d.Name, c.Name)
		}
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == memlimit.EnvContainerLimit && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil &&
				e.ValueFrom.ResourceFieldRef.Resource == "limits.memory"
		}) {
			t.Errorf("%s/%s: no %s from the container's limits.memory: the Go runtime would not know its limit", d.Name, c.Name, memlimit.EnvContainerLimit)
		}
		for _, e := range c.Env {
			if e.Value != "" && strings.Contains(strings.ToLower(e.Name), "secret") {
				t.Errorf("%s/%s: env %s carries a value; secrets come from Secrets", d.Name, c.Name, e.Name)
			}
		}
		for _, a := range c.Args {
			if strings.HasPrefix(a, "--rfc2136-tsig-secret=") {
				t.Errorf("%s/%s: the TSIG secret on the command line", d.Name, c.Name)
			}
		}
	}
}

// TestChartRendersMonitoringFromItsFiles: the PrometheusRule's spec is
// files/alerts.yaml and the dashboard ConfigMap holds files/dashboard.json;
// without those files (or with the options off) neither renders. The chart
// is copied so the files can be added or taken away; the real ones are used
// when they exist.
func TestChartRendersMonitoringFromItsFiles(t *testing.T) {
	fedtest.Helm(t)
	root := framework.RepoRoot(t)
	copyChart := func(t *testing.T, withFiles bool) string {
		dir := filepath.Join(t.TempDir(), "kfed")
		if out, err := exec.Command("cp", "-r", filepath.Join(root, fedtest.ChartDir), dir).CombinedOutput(); err != nil {
			t.Fatalf("copying the chart: %v\n%s", err, out)
		}
		files := map[string]string{
			"alerts.yaml":    "groups:\n- name: kfed\n  rules:\n  - alert: KfedMemberOffline\n    expr: kfed_member_clusters_ready < 1\n",
			"dashboard.json": `{"title": "kfed", "panels": []}`,
		}
		for name, sample := range files {
			p := filepath.Join(dir, "files", name)
			if !withFiles {
				_ = os.Remove(p)
			} else if _, err := os.Stat(p); err != nil {
				fedtest.WriteFile(t, filepath.Join(dir, "files"), name, sample)
			}
		}
		return dir
	}
	render := func(t *testing.T, dir string, set ...string) []*unstructured.Unstructured {
		args := []string{"template", "kfed", dir, "-n", "kfed-system", "--set", "federation=fed", "--set", "domain=example.com"}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		out, err := fedtest.RunHelm(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeObjects([]byte(out))
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	on := []string{"metrics.prometheusRule.enabled=true", "metrics.dashboard.enabled=true", "metrics.serviceMonitor.enabled=true"}

	dir := copyChart(t, true)
	objs := render(t, dir, on...)
	rule := mustFind(t, objs, "PrometheusRule", "kfed")
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	if len(groups) == 0 {
		t.Errorf("PrometheusRule has no groups: %v", rule.Object["spec"])
	}
	cm := mustFind(t, objs, "ConfigMap", "kfed-dashboard")
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v", cm.GetLabels())
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", "kfed.json")
	want, _ := os.ReadFile(filepath.Join(dir, "files", "dashboard.json"))
	if strings.TrimSpace(data) != strings.TrimSpace(string(want)) {
		t.Errorf("the dashboard ConfigMap does not hold files/dashboard.json")
	}
	sm := mustFind(t, objs, "ServiceMonitor", "kfed")
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	metricsServices := 0
	for _, o := range objs {
		if o.GetKind() == "Service" && o.GetLabels()["kfed.io/metrics"] == "true" && o.GetLabels()["app.kubernetes.io/instance"] == sel["app.kubernetes.io/instance"] {
			metricsServices++
		}
	}
	if metricsServices == 0 {
		t.Errorf("the ServiceMonitor (%v) selects no Service", sel)
	}

	if objs := render(t, dir); find(objs, "PrometheusRule", "kfed") != nil || find(objs, "ConfigMap", "kfed-dashboard") != nil || find(objs, "ServiceMonitor", "kfed") != nil {
		t.Errorf("monitoring rendered with its options off")
	}
	if objs := render(t, copyChart(t, false), on...); find(objs, "PrometheusRule", "kfed") != nil || find(objs, "ConfigMap", "kfed-dashboard") != nil {
		t.Errorf("a PrometheusRule or dashboard rendered without its file")
	}
}

// TestChartSplitsTheControlPlaneForADedicatedAPIServer: a federation API
// server without nodes gets the CRDs, RBAC and kfed-controller's
// ServiceAccount but no controller; the hosting cluster gets the
// controller, reading the control plane's kubeconfig from a Secret, and no
// RBAC or CRDs of its own.
func TestChartSplitsTheControlPlaneForADedicatedAPIServer(t *testing.T) {
	fedtest.Helm(t)
	dir := filepath.Join(framework.RepoRoot(t), fedtest.ChartDir, "examples")
	api := renderChart(t, []string{filepath.Join(dir, "dedicated-apiserver.yaml")})
	for _, want := range []struct{ kind, name string }{
		{"CustomResourceDefinition", "clusters.kfed.io"}, {"ServiceAccount", "kfed-controller"}, {"ClusterRole", "kfed-controller"},
		{"RoleBinding", "kfed-controller"},
	} {
		mustFind(t, api, want.kind, want.name)
	}
	for _, o := range api {
		if o.GetKind() == "Deployment" || o.GetKind() == "PodDisruptionBudget" {
			t.Errorf("the dedicated API server gets %s %s, which nothing there would run", o.GetKind(), o.GetName())
		}
	}

	host := renderChart(t, []string{filepath.Join(dir, "dedicated-controller.yaml")})
	for _, o := range host {
		switch o.GetKind() {
		case "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			t.Errorf("the hosting cluster gets %s %s; it belongs in the control plane", o.GetKind(), o.GetName())
		}
	}
	d := convert[appsv1.Deployment](t, mustFind(t, host, "Deployment", "kfed-controller"))
	if path := mountSecretPath(t, d, "--kubeconfig"); path != "kfed-control-plane/kubeconfig" {
		t.Errorf("--kubeconfig is %s, want the Secret kfed-control-plane's key kubeconfig", path)
	}
	if path := mountSecretPath(t, d, "--rfc2136-tsig-secret-file"); path != "kfed-tsig/secret" {
		t.Errorf("--rfc2136-tsig-secret-file is %s, want the Secret kfed-tsig's key secret", path)
	}
	if d.Spec.Template.Spec.HostNetwork {
		t.Errorf("the controller runs in its node's network namespace by default")
	}
	// A hosting cluster whose pods do not reach the API servers but whose
	// nodes do: the controller in the node's network, resolving cluster
	// names still (test/e2e/nodes runs it so on a real node).
	hostNet := renderChart(t, []string{filepath.Join(dir, "dedicated-controller.yaml")}, "controller.hostNetwork=true")
	spec := convert[appsv1.Deployment](t, mustFind(t, hostNet, "Deployment", "kfed-controller")).Spec.Template.Spec
	if !spec.HostNetwork || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("controller.hostNetwork=true: hostNetwork %t, dnsPolicy %q; want true, %s", spec.HostNetwork, spec.DNSPolicy, corev1.DNSClusterFirstWithHostNet)
	}
}

// mountSecretPath names the Secret and key ("SECRET/KEY") mounted at the
// file a flag of d's first container gives.
func mountSecretPath(t *testing.T, d *appsv1.Deployment, flag string) string {
	t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	var path string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			path = v
		}
	}
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(path, m.MountPath+"/")
		if !ok {
			continue
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				for _, it := range v.Secret.Items {
					if it.Path == rel {
						return v.Secret.SecretName + "/" + it.Key
					}
				}
			}
		}
	}
	return fmt.Sprintf("%q, on no Secret", path)
}

// TestChartRefusesBadValuesWithAClearMessage: a values mistake stops helm
// (helm template, as helm install renders; or helm lint) with a message
// naming the value, not a broken install. values.schema.json refuses
// unknown keys and values outside a fixed set; the templates the rest.
func TestChartRefusesBadValuesWithAClearMessage(t *testing.T) {
	fedtest.Helm(t)
	base := []string{"federation=fed", "domain=example.com"}
	tests := []struct {
		name string
		lint bool
		set  []string
		want string
	}{
		{name: "a misspelt key", lint: true, set: append(base, "dns.provider=route53", "dns.route53.zoneId=Z1"),
			want: "at '/dns/route53': additional properties 'zoneId' not allowed"},
		{name: "a misspelt key at the top", set: append(base, "domian=example.org"), want: "additional properties 'domian' not allowed"},
		{name: "a word where a number goes", set: append(base, "logVerbosity=high"), want: "at '/logVerbosity': got string, want integer"},
		{name: "unknown probe", set: append(base, "role=member", "member.cluster=c1", "member.controlPlane.server=https://cp:6443", "healthcheck.check=udp"),
			want: "at '/healthcheck/check': value must be one of 'tcp', 'http', 'https'"},
		{name: "unknown role", set: append(base, "role=leader"), want: "at '/role': value must be one of 'controlPlane', 'member'"},
		{name: "no federation", set: []string{"domain=example.com"}, want: "federation is required"},
		{name: "member without its cluster name", set: append(base, "role=member", "member.controlPlane.server=https://cp:6443"), want: "member.cluster is required"},
		{name: "member without a way to the control plane", set: append(base, "role=member", "member.cluster=c1"), want: "member.controlPlane.server is required"},
		{name: "unknown DNS provider", set: append(base, "dns.provider=bind"), want: "at '/dns/provider': value must be one of '', 'route53', 'clouddns', 'rfc2136'"},
		{name: "controller kubeconfig without a controller", set: append(base, "controller.enabled=false", "controller.kubeconfigSecret.name=cp"),
			want: "controller.kubeconfigSecret is for a release that runs the controller"},
		{name: "TSIG key without its Secret", set: append(base, "dns.provider=rfc2136", "dns.rfc2136.host=ns1", "dns.rfc2136.zone=example.com", "dns.rfc2136.tsigKeyName=k"),
			want: "dns.rfc2136.tsigKeyName needs dns.rfc2136.tsigSecret.name"},
		{name: "a hostname reservation that is not a list", set: append(base, `hostnameReservations.shop\.example\.com=shop`),
			want: "hostnameReservations.shop.example.com must be a list of namespaces"},
		{name: "forward without a fixed cluster IP", set: append(base, "role=member", "member.cluster=c1", "member.controlPlane.server=https://cp:6443", "dnsForward.corednsCustom.enabled=true"),
			want: "dnsForward.corednsCustom needs coredns.service.clusterIP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"template", "kfed", fedtest.ChartDir}
			if tt.lint {
				args = []string{"lint", "--strict", fedtest.ChartDir}
			}
			for _, s := range tt.set {
				args = append(args, "--set", s)
			}
			_, err := fedtest.RunHelm(t, args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestChartCarriesTheGeneratedCRDsAndRBAC: the chart's copies (make
// generate) are the generated files, the roles it renders have exactly
// their rules, and it makes no identity of the members' agents: kfed join
// makes each member's own (ADR 0013).
func TestChartCarriesTheGeneratedCRDsAndRBAC(t *testing.T) {
	fedtest.Helm(t)
	root := framework.RepoRoot(t)
	copies := map[string]string{
		"deploy/rbac/role.yaml":               "files/rbac/controller.yaml",
		"deploy/member/rbac.yaml":             "files/rbac/member.yaml",
		"deploy/coredns/clusterset-rbac.yaml": "files/rbac/clusterset.yaml",
	}
	crds, _ := filepath.Glob(filepath.Join(root, "deploy/crds/*.yaml"))
	for _, c := range crds {
		copies["deploy/crds/"+filepath.Base(c)] = "files/crds/" + filepath.Base(c)
	}
	for src, dst := range copies {
		a, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(root, fedtest.ChartDir, dst))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s/%s differs from %s (run make generate): %v", fedtest.ChartDir, dst, src, err)
		}
	}

	cp := renderChart(t, nil, "federation=fed", "domain=example.com")
	member := renderChart(t, nil, "federation=fed", "domain=example.com", "role=member", "member.cluster=c1", "member.controlPlane.server=https://cp:6443",
		"coredns.clusterset.enabled=true")
	for _, tt := range []struct {
		objs       []*unstructured.Unstructured
		kind, name string
		file       string
	}{
		{cp, "ClusterRole", "kfed-controller", "deploy/rbac/role.yaml"},
		{cp, "Role", "kfed-controller", "deploy/rbac/role.yaml"},
		{member, "ClusterRole", "kfed-member", "deploy/member/rbac.yaml"},
		{member, "ClusterRole", "kfed-clusterset-dns", "deploy/coredns/clusterset-rbac.yaml"},
	} {
		data, err := os.ReadFile(filepath.Join(root, tt.file))
		if err != nil {
			t.Fatal(err)
		}
		want, err := decodeObjects(data)
		if err != nil {
			t.Fatal(err)
		}
		var wantRules []rbacv1.PolicyRule
		for _, w := range want {
			if w.GetKind() == tt.kind {
				wantRules = convert[rbacv1.ClusterRole](t, w).Rules
				break
			}
		}
		got := convert[rbacv1.ClusterRole](t, mustFind(t, tt.objs, tt.kind, tt.name)).Rules
		if fmt.Sprint(got) != fmt.Sprint(wantRules) || len(got) == 0 {
			t.Errorf("%s %s rules\n  %v\nwant the generated\n  %v", tt.kind, tt.name, got, wantRules)
		}
	}
	var names []string
	for _, o := range cp {
		if o.GetKind() == "CustomResourceDefinition" {
			names = append(names, o.GetName())
			if o.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
				t.Errorf("CRD %s is deleted on uninstall", o.GetName())
			}
		}
	}
	if len(names) != len(crds) {
		t.Errorf("control plane CRDs %v, want all %d of deploy/crds", names, len(crds))
	}
	// Each member's agents have identities of their own, which kfed join
	// makes with deploy/identities' roles; an upgrade deletes the shared
	// ones older charts made.
	for _, o := range cp {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if o.GetName() != "kfed-controller" {
				t.Errorf("the control plane gets %s %s; the chart's only identity there is kfed-controller", o.GetKind(), o.GetName())
			}
		}
	}
	for _, o := range member {
		if o.GetKind() == "CustomResourceDefinition" && o.GetName() != "balancers.kfed.io" && o.GetName() != "clusterproperties.about.k8s.io" {
			t.Errorf("a member gets CRD %s; it needs only the Balancer and the ClusterProperty", o.GetName())
		}
	}
}

// TestChartAndDevUpConfigureCoreDNSAndAgentsAlike: the kfed block of the
// member Corefile the chart renders is the one `kfed dev up` writes
// (devenv.KfedCorefile) but for the kubeconfig path, and every flag dev up
// gives an agent, the chart's agent takes too.
func TestChartAndDevUpConfigureCoreDNSAndAgentsAlike(t *testing.T) {
	fedtest.Helm(t)
	objs := renderChart(t, nil, "federation=fed", "domain=example.com", "role=member", "member.cluster=cluster-1",
		"member.controlPlane.server=https://cp:6443")
	chart := mustFind(t, objs, "ConfigMap", "kfed-coredns")
	corefile, _, _ := unstructured.NestedString(chart.Object, "data", "Corefile")
	dev := devenv.KfedCorefile(devenv.KfedZone{
		Zone: "example.com", Federation: "fed", Cluster: "cluster-1", Kubeconfig: "/any/kubeconfig", Context: "federation",
	})
	if got, want := kfedBlock(t, corefile), kfedBlock(t, dev); got != want {
		t.Errorf("the chart's kfed block\n%s\nis not kfed dev up's\n%s", got, want)
	}
	if got, want := zoneOf(corefile), zoneOf(dev); got != want {
		t.Errorf("the chart serves %q, kfed dev up %q", got, want)
	}

	d := convert[appsv1.Deployment](t, mustFind(t, objs, "Deployment", "kfed-healthcheck"))
	chartFlags := flagNames(d.Spec.Template.Spec.Containers[0].Args)
	// What devenv.StartChecker always passes (but --context: the chart's
	// kubeconfig has one context).
	for _, f := range []string{"checker", "cluster", "federation", "kubeconfig", "metrics-bind-address"} {
		if !slices.Contains(chartFlags, f) {
			t.Errorf("kfed dev up gives the agent --%s; the chart does not", f)
		}
	}
	// The probe settings cmd/kfed/dev.go's startCheckers adds are values of the chart.
	with := renderChart(t, nil, "federation=fed", "domain=example.com", "role=member", "member.cluster=cluster-1",
		"member.controlPlane.server=https://cp:6443", "healthcheck.interval=2s", "healthcheck.timeout=1s", "healthcheck.fall=2", "healthcheck.rise=2")
	args := convert[appsv1.Deployment](t, mustFind(t, with, "Deployment", "kfed-healthcheck")).Spec.Template.Spec.Containers[0].Args
	for _, a := range []string{"--interval=2s", "--timeout=1s", "--fall=2", "--rise=2"} {
		if !slices.Contains(args, a) {
			t.Errorf("healthcheck values do not render %s: %v", a, args)
		}
	}
}

// kfedBlock is the kfed { ... } block of a Corefile, one directive a line,
// without the kubeconfig line (a path that differs by design).
func kfedBlock(t *testing.T, corefile string) string {
	t.Helper()
	var out []string
	in := false
	for l := range strings.SplitSeq(corefile, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "kfed ") && strings.HasSuffix(l, "{"):
			in = true
			out = append(out, l)
		case in && l == "}":
			return strings.Join(append(out, l), "\n")
		case in && !strings.HasPrefix(l, "kubeconfig "):
			out = append(out, l)
		}
	}
	t.Fatalf("no kfed block in\n%s", corefile)
	return ""
}

// zoneOf is the zone of a Corefile's first server block, without its port.
func zoneOf(corefile string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(corefile), " ")
	zone, _, _ := strings.Cut(first, ":")
	return zone
}

func flagNames(args []string) []string {
	var names []string
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		names = append(names, name)
	}
	return names
}

// TestChartInstallsOnRealClustersAndServesAFederatedService helm installs
// the chart's control plane and member roles on real API servers, joins the
// members with `kfed join --service-account` as the README says, runs
// kfed-controller with exactly the chart's ServiceAccount and flags (its
// TSIG secret from the Secret the chart mounts) publishing to a real BIND, the
// health-check agent and the member's CoreDNS with the Corefile and
// kubeconfig the chart renders and the tokens of the member's own identities
// that kfed join writes where the chart mounts them, and resolves a federated
// Service through that CoreDNS and through the forward stanza the chart
// writes for the cluster's own CoreDNS.
func TestChartInstallsOnRealClustersAndServesAFederatedService(t *testing.T) {
	fedtest.Helm(t)
	start := time.Now()
	step := func(what string) { t.Logf("%5.1fs %s", time.Since(start).Seconds(), what) }
	// The build (mostly linking CoreDNS) overlaps the federation's start.
	built := make(chan map[string]string, 1)
	go func() { built <- buildBinaries(t, "kfed", "kfed-controller", "kfed-healthcheck", "coredns") }()
	f := framework.Start(t, framework.Members(2), framework.LoadBalancer())
	step("started the federation")
	bins := <-built
	if bins == nil {
		t.FailNow()
	}
	step("built the binaries")
	ctx := context.Background()
	fed := f.Client("federation")
	tmp := t.TempDir()

	// The control plane publishes to a real BIND with the TSIG secret from
	// a Secret: helm install kfed deploy/chart/kfed -n kfed-system -f values.yaml
	bind := bindtest.Start(t, "example.com")
	cpValues := fedtest.WriteFile(t, tmp, "control-plane.yaml", fmt.Sprintf(`
role: controlPlane
federation: fed
domain: example.com
controller:
  clusterProbeInterval: 500ms
dns:
  provider: rfc2136
  ownerID: fed
  interval: 10s
  rfc2136:
    host: 127.0.0.1
    port: %s
    zone: example.com
    tsigKeyName: %s
    tsigSecret: {name: kfed-tsig, key: secret}
`, fedtest.Port(bind.Addr), bindtest.KeyName))
	cpObjs := renderChart(t, []string{cpValues})
	if err := fed.Create(ctx, framework.Namespace("kfed-system")); err != nil {
		t.Fatal(err)
	}
	tsig := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: "kfed-tsig"},
		StringData: map[string]string{"secret": bind.Secret},
	}
	if err := fed.Create(ctx, tsig); err != nil {
		t.Fatal(err)
	}
	// The test bed installed the CRDs already (the same files, as
	// TestChartCarriesTheGeneratedCRDsAndRBAC checks), and helm adopts no
	// object it did not make; the members get the chart's Balancer CRD.
	out, err := fedtest.RunHelm(t, "install", "kfed", fedtest.ChartDir, "--kubeconfig", f.Kubeconfig, "--kube-context", "federation",
		"--namespace", "kfed-system", "-f", cpValues, "--set", "crds.install=false")
	if err != nil {
		t.Fatalf("helm install in the control plane: %v", err)
	}
	if !strings.Contains(out, "kfed join CLUSTER --member-context CLUSTER --context FEDERATION --service-account kfed-system/kfed-member") {
		t.Errorf("the install notes do not say how to join:\n%s", out)
	}

	admin, err := clientcmd.LoadFromFile(f.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	fedCluster := admin.Clusters["federation"]

	// Joining before the member has the chart says what to do, and changes nothing.
	out, err = runCommand(bins["kfed"], "join", "cluster-1", "--kubeconfig", f.Kubeconfig, "--context", "federation",
		"--service-account", "kfed-system/kfed-member", "--region", "us-east1", "--zone", "us-east1-b")
	if err == nil || !strings.Contains(out, "install the kfed chart there with role=member first") {
		t.Fatalf("join before the member chart: %v\n%s", err, out)
	}
	out, err = runCommand(bins["kfed"], "join", "cluster-1", "--kubeconfig", f.Kubeconfig, "--context", "federation",
		"--service-account", "kfed-member", "--region", "us-east1", "--zone", "us-east1-b")
	if err == nil || !strings.Contains(out, `--service-account "kfed-member": want NAMESPACE/NAME`) {
		t.Fatalf("join with a ServiceAccount without namespace: %v\n%s", err, out)
	}
	if got := snapshotClusters(t, fed); got != "[]" {
		t.Fatalf("a failed join left clusters %s", got)
	}

	// In each member: the chart, then kfed join, which writes the agents'
	// tokens into the release's namespace.
	memberObjs := map[string][]*unstructured.Unstructured{}
	for _, m := range f.Members {
		mc := f.Client(m.Name)
		if err := mc.Create(ctx, framework.Namespace("kfed-system")); err != nil {
			t.Fatal(err)
		}
		values := fedtest.WriteFile(t, tmp, m.Name+".yaml", fmt.Sprintf(`
role: member
federation: fed
domain: example.com
member:
  cluster: %s
  controlPlane:
    server: %s
    certificateAuthorityData: %s
`, m.Name, fedCluster.Server, base64.StdEncoding.EncodeToString(fedCluster.CertificateAuthorityData)))
		memberObjs[m.Name] = renderChart(t, []string{values})
		out, err := fedtest.RunHelm(t, "install", "kfed", fedtest.ChartDir, "--kubeconfig", f.Kubeconfig, "--kube-context", m.Name,
			"--namespace", "kfed-system", "-f", values)
		if err != nil {
			t.Fatalf("helm install in %s: %v", m.Name, err)
		}
		if !strings.Contains(out, "forward . KFED_COREDNS_CLUSTER_IP") {
			t.Errorf("the install notes do not show the forward stanza:\n%s", out)
		}

		out, err = runCommand(bins["kfed"], "join", m.Name, "--kubeconfig", f.Kubeconfig, "--context", "federation",
			"--service-account", "kfed-system/kfed-member", "--region", m.Region, "--zone", m.Zones[0])
		if err != nil {
			t.Fatalf("kfed join %s: %v\n%s", m.Name, err, out)
		}
		if !strings.Contains(out, "as ServiceAccount kfed-system/kfed-member") {
			t.Errorf("kfed join said %q", out)
		}
		for _, d := range []string{"kfed-healthcheck", "kfed-coredns"} {
			mountedToken(t, f, m.Name, convert[appsv1.Deployment](t, mustFind(t, memberObjs[m.Name], "Deployment", d)), tmp, m.Name+"-"+d+".token")
		}
		// The stored kubeconfig carries the member ServiceAccount's token,
		// not the admin's client certificate.
		var secret corev1.Secret
		if err := fed.Get(ctx, client.ObjectKey{Namespace: "kfed-system", Name: "kfed-cluster-" + m.Name}, &secret); err != nil {
			t.Fatal(err)
		}
		stored, err := clientcmd.Load(secret.Data["kubeconfig"])
		if err != nil {
			t.Fatal(err)
		}
		for name, ai := range stored.AuthInfos {
			if ai.Token == "" || len(ai.ClientCertificateData) > 0 || len(ai.ClientKeyData) > 0 {
				t.Errorf("stored credentials %s of %s are not the ServiceAccount token", name, m.Name)
			}
		}
	}

	step("installed the chart and joined the members")
	// Every pod the chart makes passes the API server's Pod Security
	// admission at the restricted level (no kubelet runs them here, so the
	// admission is the enforcement there is).
	restrictedPods(t, f, "federation", cpObjs)
	restrictedPods(t, f, "cluster-1", memberObjs["cluster-1"])

	// kfed-controller with the chart's ServiceAccount and the chart's flags.
	controller := convert[appsv1.Deployment](t, mustFind(t, cpObjs, "Deployment", "kfed-controller"))
	if controller.Spec.Template.Spec.ServiceAccountName != "kfed-controller" || *controller.Spec.Replicas != 2 {
		t.Fatalf("controller Deployment: serviceAccount %q, %d replicas", controller.Spec.Template.Spec.ServiceAccountName, *controller.Spec.Replicas)
	}
	cpKubeconfig := tokenKubeconfig(t, tmp, "controller.kubeconfig", fedCluster, f.Token("federation", "kfed-system", "kfed-controller"))
	metricsAddr, healthAddr := framework.FreeAddr(t), framework.FreeAddr(t)
	args := rewriteArgs(controller.Spec.Template.Spec.Containers[0].Args, map[string]string{
		"--metrics-bind-address": metricsAddr, "--health-probe-bind-address": healthAddr,
		"--rfc2136-tsig-secret-file": mountSecretFile(t, f, controller, "--rfc2136-tsig-secret-file", tmp),
	})
	framework.StartProcess(t, exec.Command(bins["kfed-controller"], append(args, "--kubeconfig", cpKubeconfig)...), "kfed-controller")
	for _, probe := range []string{"/healthz", "/readyz"} { // the chart's probes
		framework.Eventually(t, 30*time.Second, func(ctx context.Context) error { return fedtest.GetOK(ctx, "http://"+healthAddr+probe) })
	}
	for _, m := range f.Members {
		fedtest.WantCondition(t, fed, m.Name, "Ready", "True", 30*time.Second)
	}

	step("members Ready")
	svc := fedtest.FederatedService("default", "web")
	if err := fed.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(svc), kfedv1alpha1.ConditionPublished, "True", "cluster-1, cluster-2")
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var got corev1.Service
		if err := fed.Get(ctx, client.ObjectKeyFromObject(svc), &got); err != nil {
			return err
		}
		if ing := got.Status.LoadBalancer.Ingress; len(ing) != 1 || ing[0].Hostname != "web.default.fed.svc.example.com" {
			return fmt.Errorf("status ingress %+v", ing)
		}
		var ep extdnsv1alpha1.DNSEndpoint
		return fed.Get(ctx, client.ObjectKeyFromObject(svc), &ep)
	})
	// CoreDNS in cluster-1 answers cluster-1's shard by its cluster IP
	// (clients there stay there), the other member by its load balancer.
	lbs := shardAddresses(t, f, "default", "web", "cluster-1")

	step("Service published")
	// The health-check agent, with the chart's flags and kubeconfig and the
	// token kfed join wrote, reports to the control plane as cluster-1's own
	// identity, in cluster-1's member namespace (ADR 0013).
	m1 := memberObjs["cluster-1"]
	hc := convert[appsv1.Deployment](t, mustFind(t, m1, "Deployment", "kfed-healthcheck"))
	hcKubeconfig := chartKubeconfig(t, m1, tmp, "healthcheck.kubeconfig", mountedToken(t, f, "cluster-1", hc, tmp, "healthcheck.token"))
	hcArgs := rewriteArgs(hc.Spec.Template.Spec.Containers[0].Args, map[string]string{
		"--metrics-bind-address": framework.FreeAddr(t), "--kubeconfig": hcKubeconfig, "--checker": "kfed-healthcheck-0",
	})
	framework.StartProcess(t, exec.Command(bins["kfed-healthcheck"], hcArgs...), "kfed-healthcheck")
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var l coordinationv1.Lease
		if err := fed.Get(ctx, client.ObjectKey{Namespace: kfedv1alpha1.MemberNamespace("cluster-1"), Name: "kfed-healthcheck-0"}, &l); err != nil {
			return fmt.Errorf("no heartbeat of the chart's agent: %w", err)
		}
		if l.Labels[kfedv1alpha1.LabelCluster] != "cluster-1" {
			return fmt.Errorf("heartbeat labels %v", l.Labels)
		}
		return nil
	})
	step("agent reports")

	// The provider the chart configured published the global name.
	global := slices.Sorted(slices.Values(shardAddresses(t, f, "default", "web", "")))
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		if got := bind.Answers(t, "web.default.fed.svc.example.com", dns.TypeA); !slices.Equal(got, global) {
			return fmt.Errorf("BIND answers %v, want %v", got, global)
		}
		return nil
	})
	step("BIND answers")
	// The member's CoreDNS: the chart's Corefile (ports moved to loopback)
	// and kubeconfig, with the token kfed join wrote: cluster-1's own
	// read-only identity.
	dnsToken := mountedToken(t, f, "cluster-1", convert[appsv1.Deployment](t, mustFind(t, m1, "Deployment", "kfed-coredns")), tmp, "coredns.token")
	dnsKubeconfig := chartKubeconfig(t, m1, tmp, "coredns.kubeconfig", dnsToken)
	cm := mustFind(t, m1, "ConfigMap", "kfed-coredns")
	corefile, _, _ := unstructured.NestedString(cm.Object, "data", "Corefile")
	kfedDNS := framework.FreeAddr(t)
	corefile = fedtest.LoopbackCorefile(t, corefile, map[string]string{
		":5353 {":      ":" + fedtest.Port(kfedDNS) + " {\n    bind 127.0.0.1",
		"health :8080": "health " + framework.FreeAddr(t), "ready :8181": "ready " + framework.FreeAddr(t), "prometheus :9153": "prometheus " + framework.FreeAddr(t),
		`kubeconfig "/etc/kfed/kubeconfig"`: fmt.Sprintf("kubeconfig %q", dnsKubeconfig),
	})
	framework.StartProcess(t, exec.Command(bins["coredns"], "-conf", fedtest.WriteFile(t, tmp, "Corefile", corefile)), "kfed-coredns")
	name := "web.default.fed.svc.example.com."
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		return fedtest.WantAddresses(kfedDNS, "udp", name, dns.TypeA, lbs...)
	})

	step("kfed CoreDNS answers")

	// kfed join --renew: the member's ServiceAccount is recreated (every
	// token of the old one stops working), a new token is stored, and kfed
	// acts there again. The agents' tokens are renewed too, where the chart
	// mounts them, and the old ones revoked: at once, as no agent of
	// cluster-2 runs here to reread its token.
	d2 := convert[appsv1.Deployment](t, mustFind(t, memberObjs["cluster-2"], "Deployment", "kfed-healthcheck"))
	oldAgentToken := readFile(t, mountedToken(t, f, "cluster-2", d2, tmp, "cluster-2-old.token"))
	if err := tokenCheck(t, fedCluster, oldAgentToken); err != nil {
		t.Fatalf("the agent token kfed join wrote into cluster-2 is refused: %v", err)
	}
	fedtest.RevokeTokens(t, f.Client("cluster-2"), "kfed-system", "kfed-member", storedMemberConfig(t, fed, "cluster-2"))
	out, err = runCommand(bins["kfed"], "join", "cluster-2", "--kubeconfig", f.Kubeconfig, "--context", "federation",
		"--service-account", "kfed-system/kfed-member", "--renew", "--revoke-after=0")
	if err != nil || !strings.Contains(out, "with a new token") {
		t.Fatalf("kfed join --renew: %v\n%s", err, out)
	}
	if readFile(t, mountedToken(t, f, "cluster-2", d2, tmp, "cluster-2-new.token")) == oldAgentToken {
		t.Errorf("kfed join --renew left cluster-2's agent token as it was")
	}
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		if err := tokenCheck(t, fedCluster, oldAgentToken); !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("cluster-2's old agent token after kfed join --renew: %v, want 401 Unauthorized", err)
		}
		return nil
	})
	two := fedtest.FederatedService("default", "two")
	if err := fed.Create(ctx, two); err != nil {
		t.Fatal(err)
	}
	fedtest.WantServiceCondition(t, fed, client.ObjectKeyFromObject(two), kfedv1alpha1.ConditionPublished, "True", "cluster-1, cluster-2")
	step("renewed the token of cluster-2")
	// The cluster's own CoreDNS with the forward block the chart writes
	// (dnsForward.corednsCustom) imported, as k3s and AKS import it.
	fwd := renderChart(t, []string{filepath.Join(tmp, "cluster-1.yaml")},
		"dnsForward.corednsCustom.enabled=true", "coredns.service.clusterIP=127.0.0.1")
	custom := mustFind(t, fwd, "ConfigMap", "coredns-custom")
	if custom.GetNamespace() != "kube-system" {
		t.Errorf("coredns-custom in %q, want kube-system", custom.GetNamespace())
	}
	server, _, _ := unstructured.NestedString(custom.Object, "data", "kfed.server")
	clusterDNS := framework.FreeAddr(t)
	server = fedtest.LoopbackCorefile(t, server, map[string]string{
		"example.com:53 {":    "example.com:" + fedtest.Port(clusterDNS) + " {\n    bind 127.0.0.1",
		"forward . 127.0.0.1": "forward . " + kfedDNS,
	})
	customDir := filepath.Join(tmp, "custom")
	if err := os.MkdirAll(customDir, 0o755); err != nil {
		t.Fatal(err)
	}
	fedtest.WriteFile(t, customDir, "kfed.server", server)
	framework.StartProcess(t, exec.Command(bins["coredns"], "-conf", fedtest.WriteFile(t, tmp, "cluster.Corefile",
		fmt.Sprintf(".:%s {\n    bind 127.0.0.1\n    errors\n    whoami\n}\nimport %s/*.server\n", fedtest.Port(clusterDNS), customDir))), "cluster-coredns")
	framework.Eventually(t, 30*time.Second, func(context.Context) error {
		r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), clusterDNS)
		if err != nil {
			return err
		}
		got := fedtest.AnswerStrings(r)
		slices.Sort(got)
		want := slices.Sorted(slices.Values(lbs))
		if !slices.Equal(got, want) {
			return fmt.Errorf("the cluster's CoreDNS answered %v (%s), want %v", got, dns.RcodeToString[r.Rcode], want)
		}
		return nil
	})
}

// shardAddresses are the addresses of the shards of ns/name as a CoreDNS in
// member local answers them: its own by cluster IP, others' by load balancer.
func shardAddresses(t *testing.T, f *framework.Federation, ns, name, local string) []string {
	t.Helper()
	var addrs []string
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		addrs = addrs[:0]
		for _, m := range f.Members {
			var s corev1.Service
			if err := f.Client(m.Name).Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
				return err
			}
			if len(s.Status.LoadBalancer.Ingress) == 0 {
				return fmt.Errorf("shard in %s has no ingress", m.Name)
			}
			if m.Name == local {
				addrs = append(addrs, s.Spec.ClusterIP)
				continue
			}
			addrs = append(addrs, s.Status.LoadBalancer.Ingress[0].IP)
		}
		return nil
	})
	return addrs
}

// storedMemberConfig is the client config kfed join stored for a member.
func storedMemberConfig(t *testing.T, fed client.Client, name string) *rest.Config {
	t.Helper()
	var secret corev1.Secret
	if err := fed.Get(context.Background(), client.ObjectKey{Namespace: "kfed-system", Name: "kfed-cluster-" + name}, &secret); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// restrictedPods creates, with a server-side dry run, a pod from each
// Deployment's template in a namespace that enforces the restricted Pod
// Security Standard, and fails the test for any the API server refuses.
func restrictedPods(t *testing.T, f *framework.Federation, cluster string, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	c := f.Client(cluster)
	ns := framework.Namespace("kfed-restricted")
	ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// No controller manager makes the default ServiceAccount here.
	if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	// The API server enforces the level: a plain pod is refused.
	plain := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "plain"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/c"}}},
	}
	if err := c.Create(ctx, plain, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "restricted") {
		t.Fatalf("%s: a pod without a securityContext was not refused at the restricted level: %v", cluster, err)
	}
	n := 0
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		d := convert[appsv1.Deployment](t, o)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: d.Name, Labels: d.Spec.Template.Labels},
			Spec:       d.Spec.Template.Spec,
		}
		pod.Spec.ServiceAccountName = "" // the ServiceAccount lives in kfed-system
		if err := c.Create(ctx, pod, client.DryRunAll); err != nil {
			t.Errorf("%s: a pod of Deployment %s is refused at the restricted level: %v", cluster, d.Name, err)
		}
		n++
	}
	if n == 0 {
		t.Errorf("%s: no Deployment to check", cluster)
	}
}

// mountSecretFile does what the kubelet does for the file a flag of d's
// container names: reads the Secret's key mounted there from the API server
// and writes it under dir; it returns the file's path.
func mountSecretFile(t *testing.T, f *framework.Federation, d *appsv1.Deployment, flag, dir string) string {
	t.Helper()
	name, key, ok := strings.Cut(mountSecretPath(t, d, flag), "/")
	if !ok {
		t.Fatalf("%s of %s is on no Secret", flag, d.Name)
	}
	var s corev1.Secret
	if err := f.Client("federation").Get(context.Background(), client.ObjectKey{Namespace: d.Namespace, Name: name}, &s); err != nil {
		t.Fatalf("the Secret behind %s: %v", flag, err)
	}
	return fedtest.WriteFile(t, dir, key, string(s.Data[key]))
}

// mountedToken does what member's kubelet does for the token volume of d
// (healthcheck.tokenSecret, coredns.tokenSecret): reads that key of the
// Secret from member's API server and writes it to dir/name; it returns the
// file's path.
func mountedToken(t *testing.T, f *framework.Federation, member string, d *appsv1.Deployment, dir, name string) string {
	t.Helper()
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name != "token" || v.Secret == nil || len(v.Secret.Items) != 1 {
			continue
		}
		var s corev1.Secret
		if err := f.Client(member).Get(context.Background(), client.ObjectKey{Namespace: d.Namespace, Name: v.Secret.SecretName}, &s); err != nil {
			t.Fatalf("%s: the token Secret of %s, which kfed join writes: %v", member, d.Name, err)
		}
		token := s.Data[v.Secret.Items[0].Key]
		if len(token) == 0 {
			t.Fatalf("%s: Secret %s/%s has no key %s", member, s.Namespace, s.Name, v.Secret.Items[0].Key)
		}
		return fedtest.WriteFile(t, dir, name, string(token))
	}
	t.Fatalf("%s mounts no token Secret", d.Name)
	return ""
}

// tokenCheck asks the control plane at server for its version with token:
// nil when the token is accepted.
func tokenCheck(t *testing.T, server *clientcmdapi.Cluster, token string) error {
	t.Helper()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: server.Server, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: server.CertificateAuthorityData, ServerName: server.TLSServerName}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.Discovery().ServerVersion()
	return err
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// chartKubeconfig writes the kubeconfig the member chart renders, its
// tokenFile moved from the pod's mount to tokenFile.
func chartKubeconfig(t *testing.T, objs []*unstructured.Unstructured, dir, name, tokenFile string) string {
	t.Helper()
	s := mustFind(t, objs, "Secret", "kfed-control-plane-kubeconfig")
	data, _, _ := unstructured.NestedString(s.Object, "stringData", "kubeconfig")
	if !strings.Contains(data, "tokenFile: /var/run/secrets/kfed/token") {
		t.Fatalf("the chart's kubeconfig reads no token file:\n%s", data)
	}
	cfg, err := clientcmd.Load([]byte(data))
	if err != nil {
		t.Fatalf("the chart's kubeconfig: %v", err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.TokenFile = tokenFile
	}
	path := filepath.Join(dir, name)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func tokenKubeconfig(t *testing.T, dir, name string, cluster *clientcmdapi.Cluster, token string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["federation"] = cluster
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["federation"] = &clientcmdapi.Context{Cluster: "federation", AuthInfo: "sa"}
	cfg.CurrentContext = "federation"
	path := filepath.Join(dir, name)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// rewriteArgs replaces the values of the named flags (--name=value), adding
// those that are missing.
func rewriteArgs(args []string, set map[string]string) []string {
	out := slices.Clone(args)
	done := map[string]bool{}
	for i, a := range out {
		name, _, _ := strings.Cut(a, "=")
		if v, ok := set[name]; ok {
			out[i], done[name] = name+"="+v, true
		}
	}
	for name, v := range set {
		if !done[name] {
			out = append(out, name+"="+v)
		}
	}
	return out
}

// buildBinaries returns ./cmd/NAME's binary for each name (framework.Build)
// by name; it may run in its own goroutine, and returns nil when the build
// fails.
func buildBinaries(t *testing.T, names ...string) map[string]string {
	var pkgs []string
	for _, n := range names {
		pkgs = append(pkgs, "./cmd/"+n)
	}
	dir, err := framework.Build(t, pkgs...)
	if err != nil {
		t.Error(err)
		return nil
	}
	bins := map[string]string{}
	for _, n := range names {
		bins[n] = filepath.Join(dir, n)
	}
	return bins
}

func runCommand(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

func snapshotClusters(t *testing.T, fed client.Client) string {
	t.Helper()
	var cl kfedv1alpha1.ClusterList
	if err := fed.List(context.Background(), &cl); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cl.Items {
		names = append(names, c.Name)
	}
	return fmt.Sprint(names)
}
