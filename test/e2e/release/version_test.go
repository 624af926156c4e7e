package release

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kfed-io/kfed/test/fedtest"
	"github.com/kfed-io/kfed/test/framework"
)

// TestChartShipsAtTheVersionOfTheImagesAndCLI: make release builds kfed reporting the
// version make images tags the images with, packages the chart with that
// version as appVersion so that it pulls those tags by default, and writes
// checksums that verify; the README's helm installs pass the same tag.
func TestChartShipsAtTheVersionOfTheImagesAndCLI(t *testing.T) {
	helm := fedtest.Helm(t)
	root := framework.RepoRoot(t)
	const version = "v9.8.7-2-gabcdef0"

	out, err := exec.Command("make", "-s", "-C", root, "-n", "images", "VERSION="+version).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-version "+version+" ") {
		t.Fatalf("make images does not tag with VERSION: %v\n%s", err, out)
	}
	if out, err := exec.Command("make", "-s", "-C", root, "version", "VERSION="+version).Output(); err != nil || strings.TrimSpace(string(out)) != version {
		t.Fatalf("make -s version printed %q (%v), want %s", out, err, version)
	}

	dir := t.TempDir()
	cmd := exec.Command("make", "-s", "-C", root, "release", "VERSION="+version)
	cmd.Env = append(os.Environ(), "RELEASE_PLATFORMS=linux/amd64", "RELEASE_OUT="+dir, "KFED_HELM="+helm)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	sums := exec.Command("sha256sum", "-c", "SHA256SUMS")
	sums.Dir = dir
	if out, err := sums.CombinedOutput(); err != nil || strings.Count(string(out), ": OK") != 2 {
		t.Errorf("SHA256SUMS does not verify the binary and the chart: %v\n%s", err, out)
	}

	out, err = exec.Command(filepath.Join(dir, "kfed-"+version+"-linux-amd64"), "version", "-o", "json").Output()
	var info struct{ Version string }
	if err != nil || json.Unmarshal(out, &info) != nil || info.Version != version {
		t.Errorf("the released kfed reports %q (%v), want %s", out, err, version)
	}

	chart := filepath.Join(dir, "kfed-9.8.7-2-gabcdef0.tgz") // SemVer: no v
	rendered, err := fedtest.RunHelm(t, "template", "kfed", chart, "--set", "federation=fed", "--set", "domain=example.com")
	if err != nil {
		t.Fatalf("the packaged chart: %v", err)
	}
	images := regexp.MustCompile(`image: "?([^"\s]+)`).FindAllStringSubmatch(rendered, -1)
	if len(images) == 0 {
		t.Fatal("the packaged chart renders no image")
	}
	for _, m := range images {
		if !strings.HasSuffix(m[1], ":"+version) {
			t.Errorf("the packaged chart pulls %s, want the tag %s that make images builds", m[1], version)
		}
	}

	// The README's install pulls the tag make images built.
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "TAG=$(make -s version)") {
		t.Error("the README's install does not set TAG from make -s version")
	}
	installs := regexp.MustCompile(`helm install kfed deploy/chart/kfed(?:[^\n]*\\\n)*[^\n]*`).FindAllString(string(readme), -1)
	if len(installs) < 2 {
		t.Fatalf("the README has %d helm installs, want the control plane's and the members'", len(installs))
	}
	for _, cmd := range installs {
		if !strings.Contains(cmd, "--set-string image.tag=$TAG") || !strings.Contains(cmd, "--set image.registry=$REGISTRY") {
			t.Errorf("a README install does not pull make images' tag from REGISTRY:\n%s", cmd)
		}
	}
}
