package pods

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// This file speaks the OCI distribution API (the /v2/ endpoints) over plain
// HTTP to a registry on loopback: enough to push what `make images` writes,
// as `crane push` would, and to pull it back as a runtime would before it
// creates a container.

// reference is registry/repository:tag.
type reference struct{ host, repo, tag string }

func parseReference(ref string) (reference, error) {
	host, rest, ok := strings.Cut(ref, "/")
	i := strings.LastIndex(rest, ":")
	if !ok || i < 0 || strings.Contains(rest[i:], "/") {
		return reference{}, fmt.Errorf("image reference %q: want REGISTRY/REPOSITORY:TAG", ref)
	}
	return reference{host: host, repo: rest[:i], tag: rest[i+1:]}, nil
}

func (r reference) url(kind, what string) string {
	return "http://" + r.host + "/v2/" + r.repo + "/" + kind + "/" + what
}

// Push uploads the image index an OCI layout written by `make images` holds
// (the one entry of its index.json, as `crane push` pushes it) to ref, with
// every image, config and layer in it.
func Push(ctx context.Context, dir, ref string) error {
	r, err := parseReference(ref)
	if err != nil {
		return err
	}
	outer, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	om, err := outer.IndexManifest()
	if err != nil {
		return err
	}
	if len(om.Manifests) != 1 || !om.Manifests[0].MediaType.IsIndex() {
		return fmt.Errorf("%s: index.json should hold one image index", dir)
	}
	idx, err := outer.ImageIndex(om.Manifests[0].Digest)
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		layers, err := img.Layers()
		if err != nil {
			return err
		}
		for _, l := range layers {
			digest, err := l.Digest()
			if err != nil {
				return err
			}
			rc, err := l.Compressed()
			if err != nil {
				return err
			}
			err = pushBlob(ctx, r, digest, rc)
			rc.Close()
			if err != nil {
				return err
			}
		}
		cfg, err := img.RawConfigFile()
		if err != nil {
			return err
		}
		cfgDigest, err := img.ConfigName()
		if err != nil {
			return err
		}
		if err := pushBlob(ctx, r, cfgDigest, io.NopCloser(bytes.NewReader(cfg))); err != nil {
			return err
		}
		raw, err := img.RawManifest()
		if err != nil {
			return err
		}
		if err := put(ctx, r.url("manifests", d.Digest.String()), string(d.MediaType), raw); err != nil {
			return err
		}
	}
	raw, err := idx.RawManifest()
	if err != nil {
		return err
	}
	mt, err := idx.MediaType()
	if err != nil {
		return err
	}
	return put(ctx, r.url("manifests", r.tag), string(mt), raw)
}

// pushBlob uploads a blob unless the registry has it: a POST opens an
// upload, a PUT with the digest closes it.
func pushBlob(ctx context.Context, r reference, digest v1.Hash, body io.Reader) error {
	head, err := http.NewRequestWithContext(ctx, http.MethodHead, r.url("blobs", digest.String()), nil)
	if err != nil {
		return err
	}
	if resp, err := http.DefaultClient.Do(head); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
	}
	post, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url("blobs", "uploads/"), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(post)
	if err != nil {
		return fmt.Errorf("opening an upload of %s: %w", digest, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("opening an upload of %s: %s", digest, resp.Status)
	}
	loc, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
	if err != nil {
		return err
	}
	q := loc.Query()
	q.Set("digest", digest.String())
	loc.RawQuery = q.Encode()
	data, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	return put(ctx, loc.String(), "application/octet-stream", data)
}

func put(ctx context.Context, url, contentType string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("PUT %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("PUT %s: %s %s", url, resp.Status, msg)
	}
	return nil
}

// Pull downloads the image index ref names, with this machine's image in
// it, its config and layers, into an OCI layout at dir, checking every
// digest: what a runtime does before it creates a container.
func Pull(ctx context.Context, ref, dir string) error {
	r, err := parseReference(ref)
	if err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	indexRaw, indexType, err := fetch(ctx, r.url("manifests", r.tag), string(types.OCIImageIndex), v1.Hash{})
	if err != nil {
		return err
	}
	if !types.MediaType(indexType).IsIndex() {
		return fmt.Errorf("%s is a %s, not an image index", ref, indexType)
	}
	im, err := v1.ParseIndexManifest(bytes.NewReader(indexRaw))
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != runtime.GOARCH {
			continue
		}
		raw, _, err := fetch(ctx, r.url("manifests", d.Digest.String()), string(d.MediaType), d.Digest)
		if err != nil {
			return err
		}
		m, err := v1.ParseManifest(bytes.NewReader(raw))
		if err != nil {
			return err
		}
		for _, b := range append([]v1.Descriptor{m.Config}, m.Layers...) {
			blob, _, err := fetch(ctx, r.url("blobs", b.Digest.String()), "", b.Digest)
			if err != nil {
				return err
			}
			if err := p.WriteBlob(b.Digest, io.NopCloser(bytes.NewReader(blob))); err != nil {
				return err
			}
		}
		if err := p.WriteBlob(d.Digest, io.NopCloser(bytes.NewReader(raw))); err != nil {
			return err
		}
	}
	sum := sha256.Sum256(indexRaw)
	digest := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
	if err := p.WriteBlob(digest, io.NopCloser(bytes.NewReader(indexRaw))); err != nil {
		return err
	}
	return p.AppendDescriptor(v1.Descriptor{MediaType: types.MediaType(indexType), Size: int64(len(indexRaw)), Digest: digest})
}

// fetch GETs url, and checks the body against want when it is set.
func fetch(ctx context.Context, url, accept string, want v1.Hash) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, "", err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if want.Hex != "" {
		sum := sha256.Sum256(body)
		if got := hex.EncodeToString(sum[:]); got != want.Hex {
			return nil, "", fmt.Errorf("GET %s: digest sha256:%s, want %s", url, got, want)
		}
	}
	return body, resp.Header.Get("Content-Type"), nil
}
