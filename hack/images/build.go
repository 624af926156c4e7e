package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// DefaultRegistry is where kfed's images are published; the Helm chart
	// names the same.
	DefaultRegistry = "ghcr.io/kfed-io"
	// DefaultSource is the org.opencontainers.image.source label, which also
	// links a GHCR package to its repository.
	DefaultSource = "https://github.com/kfed-io/kfed"

	// User and group every image runs as: not root, and the number
	// distroless and ko use, so policies written for those fit.
	User = "65532:65532"

	module = "github.com/kfed-io/kfed"
)

// Spec is one image: the Go package of its one binary and its name.
type Spec struct {
	Name        string // image name under the registry: kfed-controller
	Package     string // Go package of the binary: ./cmd/kfed-controller
	Binary      string // file name in the image's root; the entrypoint is /Binary
	Description string
}

// Images are kfed's images.
func Images() []Spec {
	return []Spec{
		{Name: "kfed-controller", Package: "./cmd/kfed-controller", Binary: "kfed-controller",
			Description: "kfed's controllers for the federation control plane, leader-elected"},
		{Name: "kfed-healthcheck", Package: "./cmd/kfed-healthcheck", Binary: "kfed-healthcheck",
			Description: "kfed's health-check agent, run in each member cluster"},
		{Name: "kfed-coredns", Package: "./cmd/coredns", Binary: "coredns",
			Description: "CoreDNS with the kfed plugin, serving a federation's zone in a member cluster"},
	}
}

// Options say what to build.
type Options struct {
	Version, Revision string
	Platforms         []v1.Platform
	Out               string // the OCI layouts go to Out/<name>
	Registry, Source  string
	Created           time.Time // every file's and every image's time
	// Dir is the module root, where go build runs (default: the one `go env
	// GOMOD` names from the working directory).
	Dir string
}

// Built is one image written.
type Built struct {
	Ref    string // registry/name:version
	Digest v1.Hash
	Dir    string // its OCI layout
}

// tagRE is what a registry accepts as a tag (the OCI distribution spec).
var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// Build compiles and assembles each image for every platform and writes it
// as an OCI layout under o.Out, with a list of what it wrote in
// o.Out/images.txt.
func Build(ctx context.Context, o Options, specs []Spec) ([]Built, error) {
	if !tagRE.MatchString(o.Version) {
		return nil, fmt.Errorf("version %q cannot be an image tag (letters, digits, '.', '_', '-'; at most 128)", o.Version)
	}
	if o.Revision == "" {
		return nil, errors.New("a revision is required")
	}
	if len(o.Platforms) == 0 {
		return nil, errors.New("no platform to build for")
	}
	if o.Dir == "" {
		dir, err := moduleRoot(ctx)
		if err != nil {
			return nil, err
		}
		o.Dir = dir
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", o.Out, err)
	}
	// The binaries are built beside the layouts, not in $TMPDIR: they are
	// large, and o.Out is where space was asked for.
	work, err := os.MkdirTemp(o.Out, ".build-")
	if err != nil {
		return nil, fmt.Errorf("creating a work directory: %w", err)
	}
	defer os.RemoveAll(work)

	base, err := baseLayer(o.Created)
	if err != nil {
		return nil, err
	}
	var built []Built
	var list strings.Builder
	for _, s := range specs {
		idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
		for _, p := range o.Platforms {
			bin := filepath.Join(work, fmt.Sprintf("%s-%s-%s%s", s.Binary, p.OS, p.Architecture, p.Variant))
			if err := goBuild(ctx, o, s.Package, p, bin); err != nil {
				return nil, err
			}
			img, err := image(o, s, p, base, bin)
			if err != nil {
				return nil, fmt.Errorf("%s for %s: %w", s.Name, p, err)
			}
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
		}
		idx = mutate.Annotations(idx, labels(o, s)).(v1.ImageIndex)
		b, err := writeLayout(o, s, idx)
		if err != nil {
			return nil, fmt.Errorf("writing %s: %w", s.Name, err)
		}
		built = append(built, b)
		fmt.Fprintf(&list, "%s@%s\n", b.Ref, b.Digest)
	}
	if err := os.WriteFile(filepath.Join(o.Out, "images.txt"), []byte(list.String()), 0o644); err != nil {
		return nil, err
	}
	return built, nil
}

// goBuild compiles pkg for p: static (no cgo, so no libc in the image),
// -trimpath (no build machine paths), stripped, and stamped with the version.
func goBuild(ctx context.Context, o Options, pkg string, p v1.Platform, out string) error {
	ldflags := fmt.Sprintf("-s -w -X %[1]s/internal/buildinfo.version=%[2]s -X %[1]s/internal/buildinfo.revision=%[3]s", module, o.Version, o.Revision)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if p.Architecture == "arm" && p.Variant != "" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", pkg, p, err, stderr.String())
	}
	return nil
}

// image is one platform's image: the shared base layer, then the binary.
func image(o Options, s Spec, p v1.Platform, base v1.Layer, bin string) (v1.Image, error) {
	binLayer, err := fileLayer(bin, s.Binary, o.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{
			Created: v1.Time{Time: o.Created}, CreatedBy: "hack/images: /etc/passwd, /etc/group, /etc/nsswitch.conf", Comment: "base"}},
		mutate.Addendum{Layer: binLayer, MediaType: types.OCILayer, History: v1.History{
			Created: v1.Time{Time: o.Created}, CreatedBy: "hack/images: go build " + s.Package}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: o.Created}
	cf.Config = v1.Config{
		Entrypoint: []string{"/" + s.Binary},
		User:       User,
		WorkingDir: "/",
		Labels:     labels(o, s),
	}
	return mutate.ConfigFile(img, cf)
}

// labels are the OCI annotations every image and index carries.
func labels(o Options, s Spec) map[string]string {
	return map[string]string{
		"org.opencontainers.image.source":      o.Source,
		"org.opencontainers.image.url":         o.Source,
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.revision":    o.Revision,
		"org.opencontainers.image.title":       s.Name,
		"org.opencontainers.image.description": s.Description,
		"org.opencontainers.image.created":     o.Created.Format(time.RFC3339),
	}
}

// baseLayer holds what a scratch image lacks that a Go binary may read:
// the nonroot user's entries (so tools that resolve a user name find one)
// and nsswitch.conf, without which Go's resolver would try DNS before
// /etc/hosts. No /tmp: kfed writes nothing to disk, and the root file
// system is read-only in the chart.
func baseLayer(created time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := []struct {
		name, body string
	}{
		{"etc/group", "root:x:0:\nnonroot:x:65532:\n"},
		{"etc/nsswitch.conf", "hosts: files dns\n"},
		{"etc/passwd", "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "etc/", Mode: 0o755, ModTime: created, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: created, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return bytesLayer(buf.Bytes())
}

// fileLayer holds the binary at /name, owned by root and executable by all,
// so the non-root user runs it and cannot change it.
func fileLayer(path, name string, created time.Time) (v1.Layer, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(body)), ModTime: created, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return nil, err
	}
	if _, err := tw.Write(body); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return bytesLayer(buf.Bytes())
}

// bytesLayer is an uncompressed tar as a gzip-compressed OCI layer.
func bytesLayer(tar []byte) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tar)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// writeLayout replaces o.Out/<name> with an OCI layout whose index.json
// names the image index by its tag (org.opencontainers.image.ref.name, which
// skopeo's and crane's oci: references match) and by its full reference
// (io.containerd.image.name, which `ctr images import` uses).
func writeLayout(o Options, s Spec, idx v1.ImageIndex) (Built, error) {
	dir := filepath.Join(o.Out, s.Name)
	if err := os.RemoveAll(dir); err != nil {
		return Built{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return Built{}, err
	}
	ref := o.Registry + "/" + s.Name + ":" + o.Version
	err = p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": o.Version,
		"io.containerd.image.name":          ref,
	}))
	if err != nil {
		return Built{}, err
	}
	d, err := idx.Digest()
	if err != nil {
		return Built{}, err
	}
	return Built{Ref: ref, Digest: d, Dir: dir}, nil
}

func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module: run from kfed's checkout")
	}
	return filepath.Dir(gomod), nil
}

// ParsePlatforms reads "linux/amd64,linux/arm64".
func ParsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	for _, f := range strings.Split(s, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("platform %q: %w", f, err)
		}
		if p.OS == "" || p.Architecture == "" {
			return nil, fmt.Errorf("platform %q: want os/arch", f)
		}
		out = append(out, *p)
	}
	return out, nil
}
