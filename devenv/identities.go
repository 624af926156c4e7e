package devenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedscheme "github.com/kfed-io/kfed/api/scheme"
	"github.com/kfed-io/kfed/clusters/identity"
)

// AgentTokenDuration is how long the tokens the bed issues its members'
// agents are valid: longer than any bed runs.
const AgentTokenDuration = 48 * time.Hour

// AgentKubeconfig issues a token of member cluster's identity c in the
// control plane (ADR 0013), creating the identity if it has none, and
// writes it to DIR/agents/CLUSTER-C.token, beside the kubeconfig
// DIR/agents/CLUSTER-C.kubeconfig (context "federation") that reads it
// from there, as the chart's kubeconfig reads a token mounted from a
// Secret: writing a new token into the file is a renewal the agent picks
// up. It returns the kubeconfig's path.
func (e *Env) AgentKubeconfig(ctx context.Context, cluster string, c identity.Component) (string, error) {
	fed, err := e.adminClient()
	if err != nil {
		return "", err
	}
	if err := identity.Ensure(ctx, fed, cluster); err != nil {
		return "", err
	}
	tok, err := identity.Issue(ctx, fed, cluster, c, AgentTokenDuration)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(e.Dir, "agents")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	base := filepath.Join(dir, cluster+"-"+string(c))
	tokenFile, err := filepath.Abs(base + ".token")
	if err != nil {
		return "", err
	}
	if err := WriteTokenFile(tokenFile, tok.Value); err != nil {
		return "", err
	}
	admin, err := clientcmd.LoadFromFile(e.Kubeconfig)
	if err != nil {
		return "", err
	}
	server, ok := admin.Clusters[ControlPlaneName]
	if !ok {
		return "", fmt.Errorf("devenv: no cluster %q in %s", ControlPlaneName, e.Kubeconfig)
	}
	path := base + ".kubeconfig"
	if err := clientcmd.WriteToFile(*identity.Kubeconfig(server, cluster, c, "", tokenFile), path); err != nil {
		return "", err
	}
	return path, nil
}

// WriteTokenFile replaces the token in path at once (a rename), as the
// kubelet updates a mounted Secret: a reader never sees half a token.
func WriteTokenFile(path, token string) error {
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(token), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// adminClient reaches the control plane with the bed's administrator
// credentials.
func (e *Env) adminClient() (client.Client, error) {
	scheme, err := kfedscheme.New()
	if err != nil {
		return nil, err
	}
	return client.New(e.ControlPlane.Config, client.Options{Scheme: scheme})
}
