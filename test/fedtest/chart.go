package fedtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters/identity"
	"github.com/kfed-io/kfed/test/framework"
)

// ChartDir is the Helm chart, relative to the repository root.
const ChartDir = "deploy/chart/kfed"

// Helm returns the helm binary hack/helm.sh built, which hack/test.sh and
// CI pass in KFED_HELM.
func Helm(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("KFED_HELM")
	if bin == "" {
		t.Skip("KFED_HELM is not set, so the chart is not tested: run KFED_HELM=$(hack/helm.sh | tail -n 1) go test ... (hack/test.sh and CI set it)")
	}
	return bin
}

// RunHelm runs helm in the repository root and returns its stdout.
func RunHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(Helm(t), args...)
	cmd.Dir = framework.RepoRoot(t)
	// Helm's own state goes to the test's folder, not the user's home.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), nil
}

// LoopbackCorefile applies the replacements, each of which must match.
func LoopbackCorefile(t *testing.T, corefile string, repl map[string]string) string {
	t.Helper()
	for old, nw := range repl {
		if !strings.Contains(corefile, old) {
			t.Fatalf("the chart's Corefile has no %q:\n%s", old, corefile)
		}
		corefile = strings.ReplaceAll(corefile, old, nw)
	}
	if regexp.MustCompile(`:(53|5353|8080|8181|9153)\b`).MatchString(corefile) {
		t.Fatalf("a port left unmoved to loopback:\n%s", corefile)
	}
	return corefile
}

// Port is the port of a HOST:PORT address.
func Port(addr string) string { _, p, _ := strings.Cut(addr, ":"); return p }

// WriteFile writes data to dir/name and returns the path.
func WriteFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// AgentToken is a new token, valid for an hour, of member cluster's own
// identity c in the control plane (ADR 0013), made first if it has none,
// as kfed join and kfed agent-kubeconfig issue it: for a Secret or a
// kubeconfig of the caller's (AgentKubeconfig writes the bed's). fed is an
// administrator's client of the control plane.
func AgentToken(t testing.TB, fed client.Client, cluster string, c identity.Component) string {
	t.Helper()
	ctx := context.Background()
	if err := identity.Ensure(ctx, fed, cluster); err != nil {
		t.Fatalf("the identities of %s: %v", cluster, err)
	}
	tok, err := identity.Issue(ctx, fed, cluster, c, time.Hour)
	if err != nil {
		t.Fatalf("a token of %s's %s: %v", cluster, c, err)
	}
	return tok.Value
}

// WriteAgentTokens writes what kfed join (and join --renew) writes into a
// member that has kfed-system, for callers that join with clusters.Join: a token of each
// of cluster's agents' identities, in the Secrets the chart mounts by
// default (healthcheck.tokenSecret, coredns.tokenSecret).
func WriteAgentTokens(t testing.TB, fed, member client.Client, cluster string) {
	t.Helper()
	for _, c := range identity.Components() {
		token := AgentToken(t, fed, cluster, c)
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: kfedv1alpha1.DefaultNamespace, Name: c.ServiceAccount() + "-token"}}
		if _, err := controllerutil.CreateOrUpdate(context.Background(), member, s, func() error {
			s.Labels = map[string]string{kfedv1alpha1.LabelManagedBy: kfedv1alpha1.ManagedBy}
			s.Data = map[string][]byte{"token": []byte(token)}
			return nil
		}); err != nil {
			t.Fatalf("writing %s's %s token into the member: %v", cluster, c, err)
		}
	}
}
