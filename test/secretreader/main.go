// Command secretreader is the test bed's exec credential plugin for the
// Cluster Inventory API's access providers (KEP-5339), as the KEP's example
// plugin: client-go runs it with KUBERNETES_EXEC_INFO, whose
// spec.cluster.config (the profile's client.authentication.k8s.io/exec
// extension) names the cluster; it reads the token of that name from the
// Secret KFED_TOKEN_NAMESPACE/<clusterName> (key "token") through $KUBECONFIG,
// and prints an ExecCredential.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "secretreader:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	var info clientauthv1.ExecCredential
	if err := json.Unmarshal([]byte(os.Getenv("KUBERNETES_EXEC_INFO")), &info); err != nil {
		return fmt.Errorf("reading KUBERNETES_EXEC_INFO: %w", err)
	}
	if info.Spec.Cluster == nil || len(info.Spec.Cluster.Config.Raw) == 0 {
		return errors.New("no spec.cluster.config: the plugin needs provideClusterInfo and the profile's exec extension")
	}
	var cluster struct {
		ClusterName string `json:"clusterName"`
	}
	if err := json.Unmarshal(info.Spec.Cluster.Config.Raw, &cluster); err != nil || cluster.ClusterName == "" {
		return fmt.Errorf("spec.cluster.config %s names no clusterName", info.Spec.Cluster.Config.Raw)
	}
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
	ns := os.Getenv("KFED_TOKEN_NAMESPACE")
	s, err := cs.CoreV1().Secrets(ns).Get(ctx, cluster.ClusterName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	token := string(s.Data["token"])
	if token == "" {
		return fmt.Errorf("secret %s/%s has no token", ns, cluster.ClusterName)
	}
	out := clientauthv1.ExecCredential{
		TypeMeta: metav1.TypeMeta{APIVersion: clientauthv1.SchemeGroupVersion.String(), Kind: "ExecCredential"},
		Status:   &clientauthv1.ExecCredentialStatus{Token: token},
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
