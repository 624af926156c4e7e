// Command images builds kfed's container images — kfed-controller,
// kfed-healthcheck and the CoreDNS build with the kfed plugin — without a
// container daemon and without a network beyond the Go module proxy: it
// cross-compiles each static binary with `go build` and assembles an OCI image
// per platform with go-containerregistry, on an empty (scratch) base, into a
// multi-platform OCI image index written as an OCI layout directory:
//
//	bin/images/kfed-controller/     OCI layout: index.json → image index → one image per platform
//	bin/images/kfed-healthcheck/
//	bin/images/kfed-coredns/
//	bin/images/images.txt           each image's reference and index digest
//
// `make images` runs it; docs/images.md says what is in an image and how to
// push one.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := runImages(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

// runImages builds the images that args (the command's flags) ask for, and
// prints each one's reference, digest and directory.
func runImages(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	var (
		o         Options
		platforms = fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch[/variant] to build for")
		only      = fs.String("images", "", "comma-separated image names to build (default: all)")
	)
	fs.StringVar(&o.Version, "version", "", "version to stamp into the binaries and tag the images with (required)")
	fs.StringVar(&o.Revision, "revision", "", "VCS revision to stamp and label the images with (required)")
	fs.StringVar(&o.Out, "out", "bin/images", "directory the OCI layouts are written under")
	fs.StringVar(&o.Registry, "registry", DefaultRegistry, "registry and owner the image names start with")
	fs.StringVar(&o.Source, "source", DefaultSource, "org.opencontainers.image.source label")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ps, err := ParsePlatforms(*platforms)
	if err != nil {
		return err
	}
	o.Platforms = ps
	// Reproducible builds: the same commit gives the same digests. The time
	// is SOURCE_DATE_EPOCH's when set (make images sets the commit's).
	o.Created = time.Unix(0, 0).UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
		}
		o.Created = time.Unix(sec, 0).UTC()
	}
	specs := Images()
	if *only != "" {
		specs, err = selectImages(specs, strings.Split(*only, ","))
		if err != nil {
			return err
		}
	}
	built, err := Build(ctx, o, specs)
	if err != nil {
		return err
	}
	for _, b := range built {
		fmt.Printf("%s@%s\t%s\n", b.Ref, b.Digest, b.Dir)
	}
	return nil
}

func selectImages(all []Spec, names []string) ([]Spec, error) {
	var out []Spec
	for _, n := range names {
		found := false
		for _, s := range all {
			if s.Name == n {
				out, found = append(out, s), true
			}
		}
		if !found {
			return nil, fmt.Errorf("no image named %q", n)
		}
	}
	return out, nil
}
