package access

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"

	inventoryv1alpha1 "github.com/kfed-io/kfed/api/inventory/v1alpha1"
)

const providerFile = `{"providers": [
 {"name": "secretreader", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/sr",
  "args": ["--v=1"], "env": [{"name": "NS", "value": "fleet"}], "provideClusterInfo": true},
  "profileSourcedCLIArgsPolicy": "Append", "profileSourcedEnvVarsPolicy": "AppendIfNotExists"},
 {"name": "gke", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/gke"}}]}`

func profile(providers ...inventoryv1alpha1.AccessProvider) *inventoryv1alpha1.ClusterProfile {
	p := &inventoryv1alpha1.ClusterProfile{}
	p.Namespace, p.Name = "fleet", "c1"
	p.Status.AccessProviders = providers
	return p
}

func TestRESTConfig(t *testing.T) {
	cfg, err := Parse([]byte(providerFile))
	if err != nil {
		t.Fatal(err)
	}
	ext := func(name, raw string) clientcmdv1.NamedExtension {
		return clientcmdv1.NamedExtension{Name: name, Extension: runtime.RawExtension{Raw: []byte(raw)}}
	}
	tests := []struct {
		name                string
		profile             *inventoryv1alpha1.ClusterProfile
		command, host, args string
		env, execConfig     string
		errHas              string
	}{
		{name: "the first provider of the file that the profile offers is used",
			profile: profile(
				inventoryv1alpha1.AccessProvider{Name: "gke", Cluster: clientcmdv1.Cluster{Server: "https://gke"}},
				inventoryv1alpha1.AccessProvider{Name: "secretreader", Cluster: clientcmdv1.Cluster{Server: "https://sr", CertificateAuthorityData: []byte("CA")}}),
			command: "/bin/sr", host: "https://sr", args: "--v=1", env: "NS=fleet"},
		{name: "profile-sourced args and envs follow the file's policies, the exec extension is the plugin's cluster config",
			profile: profile(inventoryv1alpha1.AccessProvider{Name: "secretreader", Cluster: clientcmdv1.Cluster{Server: "https://sr",
				Extensions: []clientcmdv1.NamedExtension{
					ext(inventoryv1alpha1.ExecArgsExtension, `["--cluster=c1"]`),
					ext(inventoryv1alpha1.ExecEnvsExtension, `{"NS": "other", "REGION": "us"}`),
					ext(inventoryv1alpha1.ExecExtension, `{"clusterName":"c1"}`),
				}}}),
			command: "/bin/sr", host: "https://sr", args: "--v=1 --cluster=c1", env: "NS=fleet REGION=us", execConfig: `{"clusterName":"c1"}`},
		{name: "a profile offering no known provider is refused",
			profile: profile(inventoryv1alpha1.AccessProvider{Name: "oidc", Cluster: clientcmdv1.Cluster{Server: "https://x"}}),
			errHas:  "no access provider kfed has a plugin for"},
		{name: "a provider without a server is refused",
			profile: profile(inventoryv1alpha1.AccessProvider{Name: "gke"}), errHas: "has no server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc, err := cfg.RESTConfig(tt.profile)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("error %v, want one containing %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var env []string
			for _, e := range rc.ExecProvider.Env {
				env = append(env, e.Name+"="+e.Value)
			}
			got := []string{rc.Host, rc.ExecProvider.Command, strings.Join(rc.ExecProvider.Args, " "), strings.Join(env, " ")}
			want := []string{tt.host, tt.command, tt.args, tt.env}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("host, command, args, env = %q, want %q", got, want)
			}
			if rc.ExecProvider.InteractiveMode != "Never" {
				t.Errorf("interactive mode %q, want Never: a controller has no terminal", rc.ExecProvider.InteractiveMode)
			}
			if tt.execConfig != "" {
				if rc.ExecProvider.Config == nil {
					t.Fatal("no exec cluster config")
				}
				if raw := string(rc.ExecProvider.Config.(*runtime.Unknown).Raw); raw != tt.execConfig {
					t.Errorf("exec cluster config %s, want %s", raw, tt.execConfig)
				}
			}
		})
	}
	// The profile's additions are made to a copy: the file's plugin is the
	// same for the next profile.
	if got := cfg.Providers[0].ExecConfig.Args; len(got) != 1 {
		t.Errorf("the file's args became %q", got)
	}
}

func TestParseRefusesBadFiles(t *testing.T) {
	for _, tt := range []struct{ file, errHas string }{
		{`{"providers": []}`, "names no provider"},
		{`{"providers": [{"name": "a"}]}`, "no execConfig.command"},
		{`{"providers": [{"name": "a", "execConfig": {"command": "x"}}, {"name": "a", "execConfig": {"command": "y"}}]}`, "named twice"},
		{`{"providers": [{"name": "a", "execConfig": {"command": "x"}, "profileSourcedCLIArgsPolicy": "Prepend"}]}`, "unknown profileSourcedCLIArgsPolicy"},
		{`{"provider": []}`, "unknown field"},
	} {
		if _, err := Parse([]byte(tt.file)); err == nil || !strings.Contains(err.Error(), tt.errHas) {
			t.Errorf("Parse(%s): error %v, want one containing %q", tt.file, err, tt.errHas)
		}
	}
}
