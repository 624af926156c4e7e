//go:build kubernetes

package main

// With -tags kubernetes, kfed's CoreDNS also has the kubernetes and
// k8s_external plugins, so that it can be a cluster's own DNS server with the
// federation's zone in it (deploy/coredns/Corefile): about 20 MiB more
// resident memory (BENCHMARKS.md).
import (
	_ "github.com/coredns/coredns/plugin/k8s_external"
	_ "github.com/coredns/coredns/plugin/kubernetes"
)
