package pods

import (
	"cmp"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

func TestExpandReplacesReferencesAsKubernetesDoes(t *testing.T) {
	env := map[string]string{"POD_NAME": "kfed-healthcheck-7d9f", "EMPTY": ""}
	tests := []struct{ name, in, want string }{
		{"a defined variable is replaced", "--checker=$(POD_NAME)", "--checker=kfed-healthcheck-7d9f"},
		{"an unknown variable stays as written", "--x=$(NOPE)", "--x=$(NOPE)"},
		{"$$ is a literal dollar", "$$(POD_NAME)", "$(POD_NAME)"},
		{"an empty value is still a value", "a$(EMPTY)b", "ab"},
		{"an unclosed reference stays", "$(POD_NAME", "$(POD_NAME"},
		{"a lone dollar stays", "cost $5 $", "cost $5 $"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Expand(tt.in, env); got != tt.want {
				t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// chartSecurity is the security context kfed's chart gives every pod.
func chartSecurity() (*corev1.PodSecurityContext, *corev1.SecurityContext) {
	return &corev1.PodSecurityContext{RunAsNonRoot: new(true), RunAsUser: new(int64(65532)), RunAsGroup: new(int64(65532)), FSGroup: new(int64(65532))},
		&corev1.SecurityContext{
			AllowPrivilegeEscalation: new(false), ReadOnlyRootFilesystem: new(true), RunAsNonRoot: new(true), RunAsUser: new(int64(65532)),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
}

func TestRuntimeSpecFollowsThePodSpec(t *testing.T) {
	podSC, sc := chartSecurity()
	tests := []struct {
		name    string
		pod     corev1.PodSecurityContext
		ctr     corev1.Container
		image   string // the image's user
		check   func(t *testing.T, s *Spec)
		wantErr string
	}{
		{
			name: "the chart's context runs as 65532 with the fsGroup, read-only, without capabilities",
			pod:  *podSC, ctr: corev1.Container{Name: "c", Args: []string{"--checker=$(POD_NAME)"}, SecurityContext: sc,
				Env: []corev1.EnvVar{{Name: "POD_NAME"}}},
			image: "65532:65532",
			check: func(t *testing.T, s *Spec) {
				if u := s.Process.User; u.UID != 65532 || u.GID != 65532 || len(u.AdditionalGids) != 1 || u.AdditionalGids[0] != 65532 {
					t.Errorf("user %+v", u)
				}
				if !s.Root.Readonly || !s.Process.NoNewPrivileges || len(s.Process.Capabilities.Bounding) != 0 || len(s.Process.Capabilities.Effective) != 0 {
					t.Errorf("root read-only %v, no new privileges %v, capabilities %+v", s.Root.Readonly, s.Process.NoNewPrivileges, s.Process.Capabilities)
				}
				if got := strings.Join(s.Process.Args, " "); got != "/bin --checker=pod-1" {
					t.Errorf("args %q, want the image's entrypoint and the expanded args", got)
				}
			},
		},
		{
			name: "without a context the image's user runs with the runtime's default capabilities",
			ctr:  corev1.Container{Name: "c"}, image: "1000:1000",
			check: func(t *testing.T, s *Spec) {
				if s.Process.User.UID != 1000 || s.Root.Readonly || len(s.Process.Capabilities.Bounding) != len(defaultCapabilities) {
					t.Errorf("user %+v, read-only %v, capabilities %v", s.Process.User, s.Root.Readonly, s.Process.Capabilities.Bounding)
				}
				if got := strings.Join(s.Process.Args, " "); got != "/bin --from-cmd" {
					t.Errorf("args %q, want the image's entrypoint and cmd", got)
				}
			},
		},
		{
			name: "runAsNonRoot refuses an image that runs as root",
			pod:  corev1.PodSecurityContext{RunAsNonRoot: new(true)}, ctr: corev1.Container{Name: "c"}, image: "",
			wantErr: "container has runAsNonRoot and image will run as root",
		},
		{
			name: "runAsNonRoot refuses a user name it cannot check",
			pod:  corev1.PodSecurityContext{RunAsNonRoot: new(true)}, ctr: corev1.Container{Name: "c"}, image: "nonroot",
			wantErr: "image has non-numeric user (nonroot)",
		},
		{
			name: "a mount of a volume the pod lacks is refused",
			ctr:  corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}}, image: "1",
			wantErr: `mounts volume "nope"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := corev1.PodSpec{SecurityContext: &tt.pod, Containers: []corev1.Container{tt.ctr}}
			var env []EnvVar
			if len(tt.ctr.Env) > 0 {
				env = []EnvVar{{"POD_NAME", "pod-1"}}
			}
			s, err := RuntimeSpec(Container{Pod: &pod, Container: &tt.ctr, Env: env, Image: imageConfig(tt.image)})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

// runc is the runc hack/install-runc.sh installs, which `make test` runs
// first; the test fails without it, as the other tests fail without BIND.
func runc(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("runc")
	if err != nil {
		t.Fatalf("runc is missing: run hack/install-runc.sh (make test does): %v", err)
	}
	return path
}

// repoRoot is the kfed checkout above this package's folder.
func repoRoot(t *testing.T) string {
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "hack", "images")); err != nil {
		t.Fatalf("no kfed checkout at %s: %v", dir, err)
	}
	return dir
}

// TestRuncRunsTheImageOnlyAsThePodAllows runs the kfed-healthcheck image
// that `make images` builds under runc with the chart's security context,
// and shows that a wrong entrypoint, a file the non-root user may not
// execute or read, or a root user under runAsNonRoot keeps it from running,
// as it would in a pod.
func TestRuncRunsTheImageOnlyAsThePodAllows(t *testing.T) {
	rt := &Runtime{Runc: runc(t), State: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	layouts, err := BuildImages(ctx, repoRoot(t), t.TempDir(), "v0.0.0-pods-test", "kfed-healthcheck")
	if err != nil {
		t.Fatal(err)
	}
	const ref = "ghcr.io/kfed-io/kfed-healthcheck:test"
	podSC, sc := chartSecurity()
	kubeconfig := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kfed-system", Name: "kubeconfig"},
		Data:       map[string][]byte{"kubeconfig": []byte("apiVersion: v1\nkind: Config\nclusters: []\n")},
	}
	tests := []struct {
		name    string
		podSC   *corev1.PodSecurityContext
		command []string
		args    []string
		mode    int32
		wantOK  bool
		wantLog string
		// wantStartErr is the error that keeps the pod from starting at all.
		wantStartErr string
	}{
		{name: "the image runs as the chart's user on a read-only root and says its version", podSC: podSC,
			args: []string{"--version"}, wantOK: true, wantLog: "v0.0.0-pods-test"},
		{name: "an entrypoint the image lacks fails", podSC: podSC,
			command: []string{"/kfed-healthchek"}, wantLog: "no such file or directory"},
		{name: "a file the user may not execute fails", podSC: podSC,
			command: []string{"/etc/passwd"}, wantLog: "permission denied"},
		{name: "a Secret the user may not read stops the agent", podSC: &corev1.PodSecurityContext{RunAsNonRoot: new(true), RunAsUser: new(int64(65532))},
			args: []string{"--kubeconfig=/etc/kfed/kubeconfig", "--cluster=c", "--federation=f", "--checker=x"}, mode: 0o400, wantLog: "permission denied"},
		{name: "runAsNonRoot with user 0 does not start", podSC: &corev1.PodSecurityContext{RunAsNonRoot: new(true), RunAsUser: new(int64(0))},
			args: []string{"--version"}, wantStartErr: "container has runAsNonRoot and image will run as root"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csc := sc.DeepCopy()
			csc.RunAsUser = tt.podSC.RunAsUser
			pod := &Pod{
				Name: "pod-" + string(rune('a'+i)), Namespace: "kfed-system",
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: new(false),
					SecurityContext:              tt.podSC,
					Containers: []corev1.Container{{
						Name: "kfed-healthcheck", Image: ref, Command: tt.command, Args: tt.args, SecurityContext: csc,
						VolumeMounts: []corev1.VolumeMount{{Name: "kubeconfig", MountPath: "/etc/kfed", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
						SecretName: "kubeconfig", DefaultMode: new(cmp.Or(tt.mode, 0o440)),
					}}}},
				},
				Images:    map[string]string{ref: layouts["kfed-healthcheck"]},
				Client:    fake.NewClientset(kubeconfig),
				APIServer: &rest.Config{Host: "https://127.0.0.1:1"},
				Dir:       t.TempDir(),
			}
			run, err := rt.Start(ctx, pod)
			if tt.wantStartErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantStartErr) {
					t.Fatalf("start: %v, want an error containing %q", err, tt.wantStartErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer run.Stop(context.Background())
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			err = run.Wait(wctx, "kfed-healthcheck")
			log := run.Log("kfed-healthcheck")
			if (err == nil) != tt.wantOK || !strings.Contains(log, tt.wantLog) {
				t.Errorf("exit %v, want success %v; log (want %q):\n%s", err, tt.wantOK, tt.wantLog, log)
			}
		})
	}
}

func imageConfig(user string) v1.Config {
	return v1.Config{User: user, Entrypoint: []string{"/bin"}, Cmd: []string{"--from-cmd"}}
}

func TestParseReferenceSplitsRegistryRepositoryAndTag(t *testing.T) {
	tests := []struct {
		ref     string
		want    reference
		wantErr bool
	}{
		{ref: "127.0.0.1:5000/kfed-io/kfed-controller:0.1.0", want: reference{"127.0.0.1:5000", "kfed-io/kfed-controller", "0.1.0"}},
		{ref: "ghcr.io/kfed-io/kfed-coredns:v0.3.0", want: reference{"ghcr.io", "kfed-io/kfed-coredns", "v0.3.0"}},
		{ref: "127.0.0.1:5000/kfed-io/kfed-controller", wantErr: true}, // no tag: the port is not one
		{ref: "kfed-controller:0.1.0", wantErr: true},                  // no registry
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, err := parseReference(tt.ref)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseReference(%q) = %+v, %v; want %+v (error %v)", tt.ref, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
