package kubeclient

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://127.0.0.1:6443"}}
- {name: b, cluster: {server: "https://127.0.0.2:6443"}}
users:
- {name: u, user: {token: t}}
contexts:
- {name: a, context: {cluster: a, user: u}}
- {name: b, context: {cluster: b, user: u}}
current-context: a
`

func TestConfigReadsTheKubeconfigsContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, context, wantHost, wantErr string
	}{
		{name: "current context", path: path, wantHost: "https://127.0.0.1:6443"},
		{name: "named context", path: path, context: "b", wantHost: "https://127.0.0.2:6443"},
		{name: "a context the file lacks", path: path, context: "c", wantErr: "reading kubeconfig"},
		{name: "no path outside a cluster", wantErr: "not in a cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			cfg, err := Config(tt.path, tt.context)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tt.wantHost {
				t.Errorf("host %s, want %s", cfg.Host, tt.wantHost)
			}
		})
	}
}
