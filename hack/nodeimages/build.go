package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Built is one image written.
type Built struct {
	Name string // the layout's folder under OUT: pause
	Ref  string // the full reference containerd tags it with
	Dir  string
}

// file is one entry of a layer: a regular file copied from Src or holding
// Data, a symlink to Link, or a directory.
type file struct {
	Name string // path in the image, without a leading slash
	Src  string
	Data []byte
	Link string
	Dir  bool
	Mode int64
}

// ncScript is the stand-ins' nc: the netcat options the MCS conformance
// suite passes (echo hi | nc -v -w 2 -4 NAME PORT), the connection made by
// socat. busybox-static's nc takes none of -v, -4 and -6, and no static
// busybox applet can resolve a name (its glibc would load NSS modules);
// socat's shared glibc resolves through the pod's resolv.conf.
const ncScript = `#!/bin/sh
# nc of kfed's stand-in image (hack/nodeimages): socat under netcat's options.
usage() { echo "usage: nc [-v] [-w SEC] [-4|-6] [-u] HOST PORT" >&2; exit 2; }
w=10 fam= proto=TCP verbose=
while getopts vw:46u o; do
	case $o in
	v) verbose=1 ;;
	w) w=$OPTARG ;;
	4) fam=4 ;;
	6) fam=6 ;;
	u) proto=UDP ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || usage
opts=
[ "$proto" = TCP ] && opts=,connect-timeout=$w
[ -n "$verbose" ] && echo "nc: $proto$fam to $1 port $2 (socat)" >&2
exec socat -T "$w" -t "$w" - "$proto$fam:$1:$2$opts"
`

// Build writes the three layouts under out.
func Build(ctx context.Context, out string) ([]Built, error) {
	tmp, err := os.MkdirTemp("", "nodeimages")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	pause := filepath.Join(tmp, "pause")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", pause, "./hack/nodeimages/pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building the pause binary (run from the module root): %w", err)
	}
	tools, err := toolFiles()
	if err != nil {
		return nil, err
	}
	// Entrypoint and command as the originals have them: netshoot has no
	// entrypoint (a pod's args are the whole command, as the suite's
	// request pod passes them), socat's is socat.
	specs := []struct {
		name, ref       string
		files           []file
		entrypoint, cmd []string
	}{
		{"pause", "registry.k8s.io/pause:3.10", []file{{Name: "pause", Src: pause, Mode: 0o755}}, []string{"/pause"}, nil},
		{"netshoot", "docker.io/nicolaka/netshoot:v0.15", tools, nil, []string{"/bin/sh"}},
		{"socat", "docker.io/alpine/socat:1.7.4.4", tools, []string{"/usr/bin/socat"}, nil},
	}
	var built []Built
	for _, s := range specs {
		img, err := image(s.files, s.entrypoint, s.cmd)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", s.ref, err)
		}
		dir := filepath.Join(out, s.name)
		if err := writeLayout(dir, s.ref, img); err != nil {
			return nil, fmt.Errorf("writing %s: %w", dir, err)
		}
		built = append(built, Built{Name: s.name, Ref: s.ref, Dir: dir})
	}
	return built, nil
}

// toolFiles is the stand-ins' file system: busybox with a link per applet
// in /bin but sh and nc, Debian's dash as /bin/sh, the nc script
// (ncScript), socat, with every shared library ldd names for dash and
// socat, and /tmp. The shell is not busybox's: Debian builds busybox-static
// to run its own applets before anything on PATH, so its sh would never run
// the nc script.
func toolFiles() ([]file, error) {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		return nil, fmt.Errorf("busybox (hack/install-cni.sh installs busybox-static): %w", err)
	}
	socat, err := exec.LookPath("socat")
	if err != nil {
		return nil, fmt.Errorf("socat (hack/install-cni.sh installs it): %w", err)
	}
	dash, err := exec.LookPath("dash")
	if err != nil {
		return nil, fmt.Errorf("dash (Debian's /bin/sh): %w", err)
	}
	list, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list: %w", err)
	}
	fs := []file{
		{Name: "bin", Dir: true, Mode: 0o755}, {Name: "tmp", Dir: true, Mode: 0o1777},
		{Name: "bin/busybox", Src: busybox, Mode: 0o755},
		{Name: "bin/sh", Src: dash, Mode: 0o755},
		{Name: "bin/nc", Data: []byte(ncScript), Mode: 0o755},
		{Name: "usr/bin/socat", Src: socat, Mode: 0o755},
	}
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" && applet != "sh" && applet != "nc" {
			fs = append(fs, file{Name: "bin/" + applet, Link: "busybox"})
		}
	}
	libs := map[string]bool{}
	for _, bin := range []string{socat, dash} {
		l, err := sharedLibraries(bin)
		if err != nil {
			return nil, err
		}
		for _, lib := range l {
			libs[lib] = true
		}
	}
	for _, l := range slices.Sorted(maps.Keys(libs)) {
		fs = append(fs, file{Name: strings.TrimPrefix(l, "/"), Src: l, Mode: 0o755})
	}
	return fs, nil
}

// sharedLibraries are the files ldd says bin loads, the dynamic loader
// included, symlinks resolved (the image holds each under the name ldd gave).
func sharedLibraries(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", bin, err)
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "/") {
				libs = append(libs, f)
			}
		}
	}
	sort.Strings(libs)
	return libs, nil
}

// image is one layer of files on an empty base, for this machine's
// platform, running as root (the suite's commands bind ports and read raw
// sockets as the originals do).
func image(files []file, entrypoint, cmd []string) (v1.Image, error) {
	layer, err := filesLayer(files)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config = v1.Config{
		Entrypoint: entrypoint,
		Cmd:        cmd,
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		WorkingDir: "/",
	}
	return mutate.ConfigFile(img, cf)
}

// filesLayer writes files (and the folders they sit in) as one tar layer,
// owned by root, every time the epoch so that a rebuild is identical.
func filesLayer(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	dirs := map[string]bool{}
	for _, f := range files {
		for d := filepath.Dir(f.Name); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		}
		h := &tar.Header{Name: f.Name, Mode: f.Mode, ModTime: epoch, Format: tar.FormatPAX}
		var body []byte
		switch {
		case f.Dir:
			if dirs[f.Name] {
				continue
			}
			dirs[f.Name] = true
			h.Typeflag, h.Name = tar.TypeDir, f.Name+"/"
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.Link, 0o777
		case f.Data != nil:
			h.Typeflag, h.Size, body = tar.TypeReg, int64(len(f.Data)), f.Data
		default:
			b, err := os.ReadFile(f.Src)
			if err != nil {
				return nil, err
			}
			h.Typeflag, h.Size, body = tar.TypeReg, int64(len(b)), b
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// writeLayout replaces dir with an OCI layout holding img under ref
// (io.containerd.image.name, which `ctr images import` tags it with) and
// its tag (org.opencontainers.image.ref.name).
func writeLayout(dir, ref string, img v1.Image) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	tag := ref[strings.LastIndex(ref, ":")+1:]
	return p.AppendImage(img, layout.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}),
		layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": tag,
			"io.containerd.image.name":          ref,
		}))
}
