// Package pods runs the containers of a Kubernetes pod spec from OCI image
// layouts under runc, the way a kubelet would on a node: the image's
// entrypoint with the container's args (with $(VAR) expanded), its env with
// the downward API filled, its Secrets, ConfigMaps and emptyDirs mounted with
// the modes and fsGroup the pod asks for, its security context (user, groups,
// read-only root, capabilities, no new privileges) and memory limit; and it
// runs the container's HTTP probes against it. There is no kubelet in kfed's
// test bed; this is the part of one that decides whether an image and the
// chart's pod spec work together.
//
// Every container shares the host's network namespace (nothing but loopback
// is used), so two pods cannot both bind a port: the caller moves each port
// a container listens on to a free loopback address (Pod.Ports) and rewrites
// the flags or files that name it, as a pod's own network namespace would
// have made unnecessary.
package pods

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Image is an image unpacked for running.
type Image struct {
	// Rootfs is the image's file system, owners and modes as in its layers.
	Rootfs string
	// Config is the image's configuration: entrypoint, cmd, env, user.
	Config v1.Config
}

// Unpack finds the image for this machine's platform in the OCI layout dir
// (index.json, possibly through nested indexes) and writes its file system
// under dest/rootfs with the owners and modes its layers give.
func Unpack(dir, dest string) (*Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	img, err := platformImage(idx, v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("%s: image config: %w", dir, err)
	}
	rootfs := filepath.Join(dest, "rootfs")
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return nil, err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	if err := untar(rc, rootfs); err != nil {
		return nil, fmt.Errorf("unpacking %s: %w", dir, err)
	}
	return &Image{Rootfs: rootfs, Config: cf.Config}, nil
}

// platformImage walks idx's manifests, and those of indexes it holds, to the
// image for p.
func platformImage(idx v1.ImageIndex, p v1.Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		switch {
		case d.MediaType.IsIndex():
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, err
			}
			if img, err := platformImage(child, p); err == nil {
				return img, nil
			}
		case d.MediaType.IsImage() && d.Platform != nil && d.Platform.OS == p.OS && d.Platform.Architecture == p.Architecture:
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("no image for %s/%s", p.OS, p.Architecture)
}

// untar writes a flattened image file system (mutate.Extract's stream: no
// whiteouts left) under root, keeping each entry's owner and mode, which
// are what decide whether the container's user may run and read it.
func untar(r io.Reader, root string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean("/" + h.Name)
		if name == "/" {
			continue
		}
		p := filepath.Join(root, name)
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			return fmt.Errorf("entry %q leaves the root", h.Name)
		}
		mode := os.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, mode); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, p); err != nil {
				return err
			}
			if err := os.Lchown(p, h.Uid, h.Gid); err != nil {
				return err
			}
			continue
		default:
			return fmt.Errorf("entry %q: type %c is not supported", h.Name, h.Typeflag)
		}
		// Chown, then chmod: chown clears setuid bits; the umask narrowed
		// the mode OpenFile and MkdirAll gave.
		if err := os.Chown(p, h.Uid, h.Gid); err != nil {
			return err
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
	}
}

// PulledSize is what a pull of the image for this machine's platform from
// the OCI layout dir transfers: its manifest, config and compressed layers.
func PulledSize(dir string) (int64, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return 0, fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	img, err := platformImage(idx, v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", dir, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	n := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		n += l.Size
	}
	return n, nil
}
