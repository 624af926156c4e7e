package main

import (
	"archive/tar"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

func testOptions(t *testing.T, platforms ...v1.Platform) Options {
	// Offline: the module cache is all there is, as in CI.
	t.Setenv("GOPROXY", "off")
	return Options{
		Version: "v0.0.0-imagetest", Revision: "0123456789abcdef0123456789abcdef01234567",
		Platforms: platforms, Out: t.TempDir(), Registry: DefaultRegistry, Source: DefaultSource,
		Created: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC),
	}
}

// The real images, built for this machine's architecture only: building
// kfed's three binaries for a second architecture would take minutes on a
// CI machine, and TestImageIndexHasAnImagePerPlatform covers that path with
// a small binary.
func TestImagesRunAsNonRootAndSayTheirVersion(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the images are linux images; their binaries run only on linux")
	}
	host := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	o := testOptions(t, host)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	built, err := Build(ctx, o, Images())
	if err != nil {
		t.Fatal(err)
	}
	listed, err := os.ReadFile(filepath.Join(o.Out, "images.txt"))
	if err != nil {
		t.Fatal(err)
	}
	wantVersion := map[string]string{
		"kfed-controller":  "kfed-controller v0.0.0-imagetest (revision 0123456789abcdef0123456789abcdef01234567, go",
		"kfed-healthcheck": "kfed-healthcheck v0.0.0-imagetest (revision 0123456789abcdef0123456789abcdef01234567, go",
		"kfed-coredns":     "kfed v0.0.0-imagetest (revision 0123456789abcdef0123456789abcdef01234567, go",
	}
	// The images that call cloud APIs over HTTPS carry trusted roots.
	wantRoots := map[string]bool{"kfed-controller": true, "kfed-coredns": true}
	for i, s := range Images() {
		t.Run(s.Name, func(t *testing.T) {
			b := built[i]
			if want := "ghcr.io/kfed-io/" + s.Name + ":v0.0.0-imagetest"; b.Ref != want {
				t.Errorf("ref %s, want %s", b.Ref, want)
			}
			if !strings.Contains(string(listed), b.Ref+"@"+b.Digest.String()+"\n") {
				t.Errorf("images.txt lacks %s@%s:\n%s", b.Ref, b.Digest, listed)
			}
			idx := readLayout(t, b, o)
			images := checkIndex(t, idx, o, s, []v1.Platform{host})
			files := checkImage(t, images[0], o, s, host)
			bin := filepath.Join(t.TempDir(), s.Binary)
			if err := os.WriteFile(bin, files[s.Binary], 0o755); err != nil {
				t.Fatal(err)
			}
			checkStatic(t, bin, host)
			info, err := buildinfo.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			settings := map[string]string{}
			for _, st := range info.Settings {
				settings[st.Key] = st.Value
			}
			if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
				t.Errorf("built with CGO_ENABLED=%q -trimpath=%q, want 0 and true", settings["CGO_ENABLED"], settings["-trimpath"])
			}
			roots := slices.ContainsFunc(info.Deps, func(m *debug.Module) bool { return m.Path == "golang.org/x/crypto/x509roots/fallback" })
			if roots != wantRoots[s.Name] {
				t.Errorf("carries fallback roots: %t, want %t", roots, wantRoots[s.Name])
			}
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			out, err := exec.CommandContext(cctx, bin, "--version").CombinedOutput()
			if err != nil {
				t.Fatalf("%s --version: %v\n%s", s.Binary, err, out)
			}
			if !strings.Contains(string(out), wantVersion[s.Name]) {
				t.Errorf("%s --version printed\n%s\nwant it to contain %q", s.Binary, out, wantVersion[s.Name])
			}
		})
	}
}

func TestImageIndexHasAnImagePerPlatform(t *testing.T) {
	platforms := []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
	o := testOptions(t, platforms...)
	hello := Spec{Name: "hello", Package: "./hack/images/testdata/hello", Binary: "hello", Description: "test"}
	ctx := context.Background()
	built, err := Build(ctx, o, []Spec{hello})
	if err != nil {
		t.Fatal(err)
	}
	idx := readLayout(t, built[0], o)
	images := checkIndex(t, idx, o, hello, platforms)
	for i, p := range platforms {
		files := checkImage(t, images[i], o, hello, p)
		bin := filepath.Join(t.TempDir(), "hello-"+p.Architecture)
		if err := os.WriteFile(bin, files["hello"], 0o755); err != nil {
			t.Fatal(err)
		}
		checkStatic(t, bin, p)
	}

	// The same sources and options give the same digest: the images are
	// reproducible, so a rebuild can be checked against a release.
	o.Out = t.TempDir()
	again, err := Build(ctx, o, []Spec{hello})
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Digest != built[0].Digest {
		t.Errorf("a second build has digest %s, the first %s", again[0].Digest, built[0].Digest)
	}
}

func TestBuildRefusesWhatCannotBeAnImage(t *testing.T) {
	tests := []struct {
		name string
		edit func(o *Options)
		want string
	}{
		{"a version that cannot be a tag", func(o *Options) { o.Version = "v1.0.0+build/3" }, "cannot be an image tag"},
		{"a version with a leading dash", func(o *Options) { o.Version = "-v1" }, "cannot be an image tag"},
		{"no revision", func(o *Options) { o.Revision = "" }, "revision"},
		{"no platform", func(o *Options) { o.Platforms = nil }, "no platform"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{Version: "v1.0.0", Revision: "abc", Platforms: []v1.Platform{{OS: "linux", Architecture: "amd64"}}, Out: t.TempDir()}
			tt.edit(&o)
			if _, err := Build(context.Background(), o, Images()); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := ParsePlatforms("linux"); err == nil {
		t.Error("platform linux without an architecture accepted")
	}
}

// readLayout opens an image's OCI layout: one image index, named by its tag
// and its full reference, whose every blob is there and matches its digest.
func readLayout(t *testing.T, b Built, o Options) v1.ImageIndex {
	t.Helper()
	p, err := layout.FromPath(b.Dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 {
		t.Fatalf("layout index.json has %d entries, want 1", len(tm.Manifests))
	}
	d := tm.Manifests[0]
	if d.MediaType != types.OCIImageIndex || d.Digest != b.Digest {
		t.Errorf("layout names a %s %s, want the image index %s", d.MediaType, d.Digest, b.Digest)
	}
	if d.Annotations["org.opencontainers.image.ref.name"] != o.Version || d.Annotations["io.containerd.image.name"] != b.Ref {
		t.Errorf("layout annotations %v, want the tag %s and the reference %s", d.Annotations, o.Version, b.Ref)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatalf("the image index does not validate: %v", err)
	}
	return idx
}

// checkIndex checks an image index: OCI, labelled, one image per platform,
// in order. It returns the images.
func checkIndex(t *testing.T, idx v1.ImageIndex, o Options, s Spec, platforms []v1.Platform) []v1.Image {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", im.MediaType, types.OCIImageIndex)
	}
	checkLabels(t, "index annotations", im.Annotations, o, s)
	var got []v1.Platform
	var images []v1.Image
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("index entry %s has no platform", d.Digest)
		}
		got = append(got, *d.Platform)
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		images = append(images, img)
	}
	if !slices.EqualFunc(got, platforms, func(a, b v1.Platform) bool { return a.Equals(b) }) {
		t.Fatalf("index platforms %v, want %v", got, platforms)
	}
	return images
}

// checkImage checks one platform's image: OCI media types, its platform,
// entrypoint, user, labels and files, and returns its files' contents.
func checkImage(t *testing.T, img v1.Image, o Options, s Spec, p v1.Platform) map[string][]byte {
	t.Helper()
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s, want %s", mt, types.OCIManifestSchema1)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		t.Errorf("config platform %s/%s, want %s", cf.OS, cf.Architecture, p)
	}
	if want := []string{"/" + s.Binary}; !slices.Equal(cf.Config.Entrypoint, want) {
		t.Errorf("entrypoint %q, want %q", cf.Config.Entrypoint, want)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (not root)", cf.Config.User)
	}
	if !cf.Created.Time.Equal(o.Created) {
		t.Errorf("created %s, want %s", cf.Created, o.Created)
	}
	checkLabels(t, "labels", cf.Config.Labels, o, s)

	files := map[string][]byte{}
	modes := map[string]*tar.Header{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(h.Name, "/")
		files[name], modes[name] = body, h
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	// Nothing but the binary and the user database: no shell, no /tmp
	// (the root file system is read-only; kfed writes nothing to disk).
	want := []string{"etc", "etc/group", "etc/nsswitch.conf", "etc/passwd", s.Binary}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("files %q, want %q", names, want)
	}
	if h := modes[s.Binary]; h == nil || h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 {
		t.Errorf("/%s header %+v, want mode 0755 owned by root (the non-root user runs it, cannot change it)", s.Binary, h)
	}
	if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", files["etc/passwd"])
	}
	return files
}

func checkLabels(t *testing.T, what string, got map[string]string, o Options, s Spec) {
	t.Helper()
	want := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/kfed-io/kfed",
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": o.Revision,
		"org.opencontainers.image.title":    s.Name,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
		}
	}
}

// checkStatic checks that bin is a static ELF executable for p: no
// interpreter, so it runs in an image without libc.
func checkStatic(t *testing.T, bin string, p v1.Platform) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	if f.Machine != machine {
		t.Errorf("%s is for %s, want %s (%s)", bin, f.Machine, machine, p)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked", bin)
		}
	}
}
