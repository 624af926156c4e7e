package release

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// readmeStep is the first sh block after a step's bold title in the
// README's "Install" section ("**1. The control plane**").
func readmeStep(t *testing.T, readme, title string) string {
	t.Helper()
	i := strings.Index(readme, "**"+title)
	if i < 0 {
		t.Fatalf("the README has no step %q", title)
	}
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme[i:])
	if m == nil {
		t.Fatalf("the README's step %q has no sh block", title)
	}
	return m[1]
}

// readmeInstall is the README's install as the test bed runs it: steps 1
// and 2 as written, then, for a cluster that stayed joined, the renewal of
// its credentials the README gives after step 3. What the bed cannot run as
// written is replaced, each replacement required to match so that a README
// change the test does not follow fails it:
//   - Route53, which the bed cannot reach: the RFC 2136 example, at BIND;
//   - the federation, domain and members: the bed's (fed, example.com,
//     cluster-1), which the install before had;
//   - `kubectl rollout status`: the bed has no Deployment controller (the
//     test's kubelet runs the pods and waits until they are ready);
//   - bin/kfed: the kfed the test built.
func readmeInstall(t *testing.T, replace [][2]string) (steps1and2, renew string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(framework.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	steps1and2 = readmeStep(t, readme, "1. The control plane") + readmeStep(t, readme, "2. Each member")
	m := regexp.MustCompile("`(bin/kfed join [^`]*--renew)`").FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("the README does not say how to renew a joined cluster's credentials (bin/kfed join … --renew)")
	}
	renew = strings.Join(strings.Fields(m[1]), " ") + "\n"
	for _, r := range replace {
		old, new := r[0], r[1]
		if !strings.Contains(steps1and2, old) && !strings.Contains(renew, old) {
			t.Fatalf("the README's install no longer has %q, which the test replaces with %q: update the test", old, new)
		}
		steps1and2, renew = strings.ReplaceAll(steps1and2, old, new), strings.ReplaceAll(renew, old, new)
	}
	return steps1and2, renew
}

// runScript runs script with bash -euo pipefail in the repository root,
// with kubectl and helm on PATH, KUBECONFIG the bed's, helm's state in the
// test's folders, and env.
func runScript(t *testing.T, f *framework.Federation, script string, env ...string) string {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = framework.RepoRoot(t)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "KUBECONFIG="+f.Kubeconfig,
		"PATH="+filepath.Dir(fedtest.Helm(t))+":"+framework.BinDir(t)+":"+os.Getenv("PATH"),
		"HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's commands failed: %v\n%s\n--- script:\n%s", err, out.String(), script)
	}
	return out.String()
}
