// Command nodeimages builds, as OCI layouts, the images a real node of the
// dev bed (kfed dev up --real-nodes) needs and cannot pull, for this
// machine's platform, without a registry or a container daemon:
//
//	OUT/pause/     registry.k8s.io/pause:3.10, the sandbox image (./hack/nodeimages/pause)
//	OUT/netshoot/  docker.io/nicolaka/netshoot:v0.15, a stand-in
//	OUT/socat/     docker.io/alpine/socat:1.7.4.4, a stand-in
//
// The stand-ins are not those images: they hold what the Multi-Cluster
// Services conformance suite runs in them (nslookup, grep, awk, tr, wget and
// the rest of Debian's busybox-static; Debian's dash as sh; socat with the
// shared libraries it and dash load; an nc script taking netcat's -v, -w,
// -4 and -6 and connecting with socat), tagged under their names so that
// pods asking for them with imagePullPolicy IfNotPresent start.
// hack/install-cni.sh installs busybox-static and socat.
//
//	go run ./hack/nodeimages -out bin/nodeimages
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fs := flag.NewFlagSet("nodeimages", flag.ContinueOnError)
	out := fs.String("out", "bin/nodeimages", "directory the OCI layouts are written under")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	built, err := Build(ctx, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodeimages:", err)
		os.Exit(1)
	}
	for _, b := range built {
		fmt.Printf("%s\t%s\n", b.Ref, b.Dir)
	}
}
