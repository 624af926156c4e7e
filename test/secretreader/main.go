// Command secretreader is the test bed's exec credential plugin for the
// Cluster Inventory API's access providers (KEP-5339), as the KEP's example
// plugin: client-go runs it with KUBERNETES_EXEC_INFO, whose
// spec.cluster.config (the profile's client.authentication.k8s.io/exec
// extension) names the cluster; it reads the token of that name from the
// Secret KFED_TOKEN_NAMESPACE/<clusterName> (key "token") through $KUBECONFIG,
// and prints an ExecCredential. `kfed dev credential` is the same plugin
// for kfed dev up --inventory clusterprofile (devenv.ExecCredential).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kfed-io/kfed/devenv"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "secretreader:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := devenv.ExecCredential(ctx, cs, os.Getenv("KFED_TOKEN_NAMESPACE"), []byte(os.Getenv("KUBERNETES_EXEC_INFO")))
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
