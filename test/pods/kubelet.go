package pods

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kfed-io/kfed/devenv/process"
)

// NodeName is the node every pod here runs on, for spec.nodeName.
const NodeName = "loopback"

// Runtime runs pods' containers with runc.
type Runtime struct {
	// Runc is runc's path.
	Runc string
	// State is runc's --root, the folder of its containers' state: one per
	// test, so that nothing else's containers are seen or touched.
	State string
}

// Pod is a pod to run.
type Pod struct {
	Name, Namespace string
	Spec            corev1.PodSpec
	// Images maps a container's image reference to its OCI layout folder.
	Images map[string]string
	// Client reads the Secrets and ConfigMaps the pod mounts and makes its
	// ServiceAccount's token, in the cluster the pod runs in.
	Client kubernetes.Interface
	// APIServer is that cluster's API server, which the pod's in-cluster
	// configuration reaches (KUBERNETES_SERVICE_HOST/PORT and the CA).
	APIServer *rest.Config
	// Ports maps each containerPort of the pod to the loopback address the
	// caller moved it to (the pods share the host's network).
	Ports map[int32]string
	// Edit, when set, may rewrite a file of a Secret or ConfigMap volume
	// before it is mounted: the caller moves ports named in a file there.
	Edit func(volume, key string, data []byte) ([]byte, error)
	// Dir holds the pod's bundles, volumes and files; it must exist.
	Dir string
}

// Running is a started pod.
type Running struct {
	pod        *Pod
	runtime    *Runtime
	containers []*container
}

type container struct {
	// started is when runc run began: the image is unpacked and the
	// volumes written by then, as a kubelet has them before it starts a
	// container.
	started time.Time
	id      string
	spec    corev1.Container
	p       *process.Process
	log     process.Output
}

// Start prepares the pod's volumes, environment and bundles, and starts its
// containers with runc run, as a kubelet would. It returns once runc has
// been started for every container; WaitReady says when they are ready. On
// error, what was started is stopped.
func (r *Runtime) Start(ctx context.Context, p *Pod) (*Running, error) {
	if len(p.Spec.InitContainers) > 0 {
		return nil, fmt.Errorf("pod %s: init containers are not supported", p.Name)
	}
	volumes, err := p.mountVolumes(ctx)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", p.Name, err)
	}
	etc, err := p.etcFiles()
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", p.Name, err)
	}
	run := &Running{pod: p, runtime: r}
	for _, c := range p.Spec.Containers {
		if err := run.startContainer(ctx, c, volumes, etc); err != nil {
			run.Stop(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("pod %s, container %s: %w", p.Name, c.Name, err)
		}
	}
	return run, nil
}

func (run *Running) startContainer(ctx context.Context, c corev1.Container, volumes, etc map[string]string) error {
	p := run.pod
	layout, ok := p.Images[c.Image]
	if !ok {
		return fmt.Errorf("no OCI layout for image %s", c.Image)
	}
	bundle := filepath.Join(p.Dir, "containers", c.Name)
	img, err := Unpack(layout, bundle)
	if err != nil {
		return err
	}
	env, err := p.environment(ctx, &c)
	if err != nil {
		return err
	}
	spec, err := RuntimeSpec(Container{
		Pod: &p.Spec, Container: &c, Image: img.Config, Hostname: p.Name, Env: env, Volumes: volumes, EtcFiles: etc,
	})
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o600); err != nil {
		return err
	}
	ct := &container{id: p.Namespace + "_" + p.Name + "_" + c.Name, spec: c}
	cmd := exec.Command(run.runtime.Runc, "--root", run.runtime.State, "run", "--bundle", bundle, ct.id)
	cmd.Stdout, cmd.Stderr = &ct.log, &ct.log
	// runc dies with the test binary; Stop ends the container itself.
	ct.started = time.Now()
	if ct.p, err = process.Start(cmd); err != nil {
		return fmt.Errorf("runc run: %w", err)
	}
	run.containers = append(run.containers, ct)
	return nil
}

// Log is what the named container wrote, and runc's own messages.
func (run *Running) Log(name string) string {
	for _, c := range run.containers {
		if c.spec.Name == name {
			return c.log.String()
		}
	}
	return ""
}

// Exited reports a container that has stopped, with its exit status and log.
func (run *Running) Exited() error {
	for _, c := range run.containers {
		select {
		case <-c.p.Done():
			return fmt.Errorf("container %s of pod %s exited (%v):\n%s", c.spec.Name, run.pod.Name, c.p.Err(), c.log.String())
		default:
		}
	}
	return nil
}

// Stop stops the pod as the kubelet does: SIGTERM to every container, SIGKILL
// to what is left after the grace period (at most 10 s here), and removes
// the containers.
func (run *Running) Stop(ctx context.Context) {
	grace := 10 * time.Second
	if g := run.pod.Spec.TerminationGracePeriodSeconds; g != nil && time.Duration(*g)*time.Second < grace {
		grace = time.Duration(*g) * time.Second
	}
	for _, c := range run.containers {
		_ = exec.CommandContext(ctx, run.runtime.Runc, "--root", run.runtime.State, "kill", c.id, "TERM").Run()
	}
	deadline := time.After(grace)
	for _, c := range run.containers {
		select {
		case <-c.p.Done():
		case <-deadline:
		}
	}
	for _, c := range run.containers {
		select {
		case <-c.p.Done():
		default:
			_ = exec.CommandContext(ctx, run.runtime.Runc, "--root", run.runtime.State, "kill", c.id, "KILL").Run()
			select {
			case <-c.p.Done():
			case <-time.After(5 * time.Second):
				c.p.Kill()
			}
		}
		// runc run removes a container that exits; this removes one whose
		// runc was killed.
		_ = exec.CommandContext(ctx, run.runtime.Runc, "--root", run.runtime.State, "delete", "--force", c.id).Run()
	}
}

// Probe runs a probe of the named container once, as the kubelet would:
// an HTTP GET that answers 200-399, or a TCP connect, within its timeout.
func (run *Running) Probe(ctx context.Context, name string, probe *corev1.Probe) error {
	var c *corev1.Container
	for i := range run.pod.Spec.Containers {
		if run.pod.Spec.Containers[i].Name == name {
			c = &run.pod.Spec.Containers[i]
		}
	}
	if c == nil {
		return fmt.Errorf("pod %s has no container %s", run.pod.Name, name)
	}
	timeout := time.Second
	if probe.TimeoutSeconds > 0 {
		timeout = time.Duration(probe.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case probe.HTTPGet != nil:
		g := probe.HTTPGet
		addr, err := run.portAddr(c, g.Port.IntVal, g.Port.StrVal)
		if err != nil {
			return err
		}
		scheme := strings.ToLower(string(g.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+g.Path, nil)
		if err != nil {
			return err
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		// The kubelet checks no certificate and follows no redirect.
		hc := &http.Client{
			Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("GET %s (container port %v): %w", g.Path, g.Port.String(), err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("GET %s (container port %v): %s", g.Path, g.Port.String(), resp.Status)
		}
		return nil
	case probe.TCPSocket != nil:
		addr, err := run.portAddr(c, probe.TCPSocket.Port.IntVal, probe.TCPSocket.Port.StrVal)
		if err != nil {
			return err
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return conn.Close()
	default:
		return errors.New("only httpGet and tcpSocket probes are supported")
	}
}

// portAddr is the loopback address of a container's port, by number or name.
func (run *Running) portAddr(c *corev1.Container, number int32, name string) (string, error) {
	if name != "" {
		number = 0
		for _, p := range c.Ports {
			if p.Name == name {
				number = p.ContainerPort
			}
		}
		if number == 0 {
			return "", fmt.Errorf("container %s has no port named %q", c.Name, name)
		}
	}
	addr, ok := run.pod.Ports[number]
	if !ok {
		return "", fmt.Errorf("container port %d of %s was not moved to a loopback address", number, c.Name)
	}
	return addr, nil
}

// WaitReady waits until the named container is ready, polling every 25 ms
// rather than at the probe's period so that the time it takes is measured:
// its startup probe passes, then its readiness probe (or, without one, its
// liveness probe; without either, it is ready once running). It returns how
// long after runc run began that was, or an error if the container exits or
// ctx ends.
func (run *Running) WaitReady(ctx context.Context, name string) (time.Duration, error) {
	var c *corev1.Container
	var started time.Time
	for i, ct := range run.containers {
		if ct.spec.Name == name {
			c, started = &run.pod.Spec.Containers[i], ct.started
		}
	}
	if c == nil {
		return 0, fmt.Errorf("pod %s has no container %s", run.pod.Name, name)
	}
	var probes []*corev1.Probe
	if c.StartupProbe != nil {
		probes = append(probes, c.StartupProbe)
	}
	switch {
	case c.ReadinessProbe != nil:
		probes = append(probes, c.ReadinessProbe)
	case c.LivenessProbe != nil:
		probes = append(probes, c.LivenessProbe)
	}
	var last error
	for {
		if err := run.Exited(); err != nil {
			return 0, err
		}
		last = nil
		for _, p := range probes {
			if last = run.Probe(ctx, name, p); last != nil {
				break
			}
		}
		if last == nil {
			return time.Since(started), nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("container %s of pod %s is not ready: %w\n%s", name, run.pod.Name, last, run.Log(name))
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// mountVolumes writes each of the pod's volumes, and the ServiceAccount
// volume the kubelet adds, into folders, with the modes and owners the
// kubelet gives them; it returns each volume's folder by name.
func (p *Pod) mountVolumes(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	vols := p.Spec.Volumes
	if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
		vols = append(slices.Clone(vols), corev1.Volume{Name: serviceAccountVolume})
		// The caller's spec stays as it was.
		p.Spec.Containers = slices.Clone(p.Spec.Containers)
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].VolumeMounts = append(slices.Clone(p.Spec.Containers[i].VolumeMounts), corev1.VolumeMount{
				Name: serviceAccountVolume, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true,
			})
		}
	}
	var fsGroup *int64
	if p.Spec.SecurityContext != nil {
		fsGroup = p.Spec.SecurityContext.FSGroup
	}
	for _, v := range vols {
		dir := filepath.Join(p.Dir, "volumes", v.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		out[v.Name] = dir
		var files []volumeFile
		var err error
		switch {
		case v.Name == serviceAccountVolume:
			files, err = p.serviceAccountFiles(ctx)
		case v.Secret != nil:
			files, err = p.secretFiles(ctx, v.Name, v.Secret)
		case v.ConfigMap != nil:
			files, err = p.configMapFiles(ctx, v.Name, v.ConfigMap)
		case v.EmptyDir != nil:
			// The kubelet makes an emptyDir world-writable, its group the
			// fsGroup with setgid so that new files keep it.
			if err := os.Chmod(dir, 0o777); err != nil {
				return nil, err
			}
			if fsGroup != nil {
				if err := os.Chown(dir, 0, int(*fsGroup)); err != nil {
					return nil, err
				}
				if err := os.Chmod(dir, 0o777|os.ModeSetgid); err != nil {
					return nil, err
				}
			}
			continue
		default:
			return nil, fmt.Errorf("volume %s: only Secret, ConfigMap and emptyDir volumes are supported", v.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		for _, f := range files {
			if err := writeVolumeFile(dir, f, fsGroup); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
		}
	}
	return out, nil
}

const serviceAccountVolume = "kube-api-access"

type volumeFile struct {
	path string
	data []byte
	mode os.FileMode
}

// writeVolumeFile writes a file of a read-only volume. With an fsGroup the
// kubelet makes it the file's group and adds group read (0440), as it does
// for Secret, ConfigMap and projected volumes; without one, the file is
// root's with the mode the pod asked for.
func writeVolumeFile(dir string, f volumeFile, fsGroup *int64) error {
	p := filepath.Join(dir, f.path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, f.data, 0o600); err != nil {
		return err
	}
	mode := f.mode
	gid := 0
	if fsGroup != nil {
		mode |= 0o440
		gid = int(*fsGroup)
	}
	if err := os.Chown(p, 0, gid); err != nil {
		return err
	}
	return os.Chmod(p, mode)
}

func (p *Pod) secretFiles(ctx context.Context, volume string, v *corev1.SecretVolumeSource) ([]volumeFile, error) {
	s, err := p.Client.CoreV1().Secrets(p.Namespace).Get(ctx, v.SecretName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s: %w", v.SecretName, err)
	}
	return p.keyFiles(volume, s.Data, v.Items, v.DefaultMode, "Secret "+v.SecretName)
}

func (p *Pod) configMapFiles(ctx context.Context, volume string, v *corev1.ConfigMapVolumeSource) ([]volumeFile, error) {
	cm, err := p.Client.CoreV1().ConfigMaps(p.Namespace).Get(ctx, v.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s: %w", v.Name, err)
	}
	data := map[string][]byte{}
	for k, s := range cm.Data {
		data[k] = []byte(s)
	}
	for k, b := range cm.BinaryData {
		data[k] = b
	}
	return p.keyFiles(volume, data, v.Items, v.DefaultMode, "ConfigMap "+v.Name)
}

// keyFiles are the files of a Secret's or ConfigMap's keys: the items
// listed (each at its path), else every key; a listed key that is missing
// is an error, as it keeps a pod from starting.
func (p *Pod) keyFiles(volume string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, what string) ([]volumeFile, error) {
	mode := os.FileMode(0o644)
	if defaultMode != nil {
		mode = os.FileMode(*defaultMode)
	}
	if len(items) == 0 {
		for k := range data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	var files []volumeFile
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			return nil, fmt.Errorf("%s has no key %q", what, it.Key)
		}
		m := mode
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		if p.Edit != nil {
			var err error
			if b, err = p.Edit(volume, it.Key, b); err != nil {
				return nil, err
			}
		}
		files = append(files, volumeFile{path: it.Path, data: b, mode: m})
	}
	return files, nil
}

// serviceAccountFiles are the kube-api-access volume's: a token of the pod's
// ServiceAccount from the TokenRequest API, the API server's CA and the
// namespace.
func (p *Pod) serviceAccountFiles(ctx context.Context) ([]volumeFile, error) {
	sa := p.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr, err := p.Client.CoreV1().ServiceAccounts(p.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3607))},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("a token of ServiceAccount %s: %w", sa, err)
	}
	ca := p.APIServer.CAData
	if len(ca) == 0 && p.APIServer.CAFile != "" {
		if ca, err = os.ReadFile(p.APIServer.CAFile); err != nil {
			return nil, err
		}
	}
	return []volumeFile{
		{path: "token", data: []byte(tr.Status.Token), mode: 0o644},
		{path: "ca.crt", data: ca, mode: 0o644},
		{path: "namespace", data: []byte(p.Namespace), mode: 0o644},
	}, nil
}

// etcFiles writes the /etc/hosts, /etc/hostname and /etc/resolv.conf the
// kubelet mounts into every container. The resolver points at loopback:
// nothing here may leave the machine.
func (p *Pod) etcFiles() (map[string]string, error) {
	dir := filepath.Join(p.Dir, "etc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	files := map[string]string{
		"hosts":       "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.0.1\t" + p.Name + "\n",
		"hostname":    p.Name + "\n",
		"resolv.conf": "nameserver 127.0.0.1\noptions ndots:5\n",
	}
	out := map[string]string{}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			return nil, err
		}
		out["/etc/"+name] = path
	}
	return out, nil
}

// environment is the container's env as the kubelet resolves it: the API
// server's service variables, then each variable of the container in order,
// its value's $(VAR) references expanded from those before it, or read from
// the downward API, a Secret or a ConfigMap.
func (p *Pod) environment(ctx context.Context, c *corev1.Container) ([]EnvVar, error) {
	u, err := url.Parse(p.APIServer.Host)
	if err != nil {
		return nil, fmt.Errorf("API server %q: %w", p.APIServer.Host, err)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "443"
	}
	env := []EnvVar{
		{"KUBERNETES_SERVICE_HOST", host}, {"KUBERNETES_SERVICE_PORT", port}, {"KUBERNETES_SERVICE_PORT_HTTPS", port},
		{"KUBERNETES_PORT", "tcp://" + net.JoinHostPort(host, port)},
	}
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("envFrom is not supported")
	}
	seen := map[string]string{}
	for _, e := range env {
		seen[e.Name] = e.Value
	}
	for _, e := range c.Env {
		var v string
		switch {
		case e.ValueFrom == nil:
			v = Expand(e.Value, seen)
		case e.ValueFrom.FieldRef != nil:
			if v, err = p.fieldValue(e.ValueFrom.FieldRef.FieldPath); err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		case e.ValueFrom.ResourceFieldRef != nil:
			if v, err = p.resourceValue(c, e.ValueFrom.ResourceFieldRef); err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s, err := p.Client.CoreV1().Secrets(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			v = string(s.Data[ref.Key])
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, err := p.Client.CoreV1().ConfigMaps(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			v = cm.Data[ref.Key]
		default:
			return nil, fmt.Errorf("env %s: its source is not supported", e.Name)
		}
		env = append(env, EnvVar{e.Name, v})
		seen[e.Name] = v
	}
	return env, nil
}

// fieldValue is a pod field the downward API gives.
func (p *Pod) fieldValue(path string) (string, error) {
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "spec.nodeName":
		return NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.podIP", "status.hostIP":
		return "127.0.0.1", nil
	}
	return "", fmt.Errorf("field %s is not supported", path)
}

// resourceValue is a container's request or limit in units of the divisor,
// rounded up, as the downward API gives it. A limit the container does not
// set would be the node's allocatable, which there is no node to say.
func (p *Pod) resourceValue(c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		found := false
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == ref.ContainerName {
				c, found = &p.Spec.Containers[i], true
			}
		}
		if !found {
			return "", fmt.Errorf("no container %s", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", fmt.Errorf("resource %q", ref.Resource)
	}
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok {
		return "", fmt.Errorf("container %s sets no %s", c.Name, ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == "cpu" {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// Wait waits for the named container to exit and returns its exit status:
// nil for 0, else the error of runc run, which exits as the container did.
func (run *Running) Wait(ctx context.Context, name string) error {
	for _, c := range run.containers {
		if c.spec.Name != name {
			continue
		}
		select {
		case <-c.p.Done():
			return c.p.Err()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("pod %s has no container %s", run.pod.Name, name)
}

// Kernel is what the kernel says of a container's main process.
type Kernel struct {
	PID            int
	UID, GID       string // real, effective, saved and file-system IDs, as /proc/PID/status gives them
	Groups         string // supplementary groups
	CapEff, CapBnd string // effective and bounding capability sets, hexadecimal
	NoNewPrivs     bool
	// RootReadOnly says the container's / is mounted read-only.
	RootReadOnly bool
	// MemoryLimit is its memory cgroup's limit in bytes (cgroup v1's
	// memory.limit_in_bytes or v2's memory.max), 0 when it has none.
	MemoryLimit int64
}

// Kernel reads the named container's main process from /proc, found
// through runc state: the identity and privileges it really runs with.
func (run *Running) Kernel(ctx context.Context, name string) (Kernel, error) {
	var id string
	for _, c := range run.containers {
		if c.spec.Name == name {
			id = c.id
		}
	}
	if id == "" {
		return Kernel{}, fmt.Errorf("pod %s has no container %s", run.pod.Name, name)
	}
	out, err := exec.CommandContext(ctx, run.runtime.Runc, "--root", run.runtime.State, "state", id).Output()
	if err != nil {
		return Kernel{}, fmt.Errorf("runc state %s: %w", id, err)
	}
	var state struct {
		Pid    int    `json:"pid"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(out, &state); err != nil {
		return Kernel{}, fmt.Errorf("runc state %s: %w", id, err)
	}
	if state.Status != "running" || state.Pid == 0 {
		return Kernel{}, fmt.Errorf("container %s is %s", id, state.Status)
	}
	p := Kernel{PID: state.Pid}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", state.Pid))
	if err != nil {
		return Kernel{}, err
	}
	for line := range strings.Lines(string(status)) {
		key, value, _ := strings.Cut(strings.TrimSpace(line), ":")
		value = strings.Join(strings.Fields(value), " ")
		switch key {
		case "Uid":
			p.UID = value
		case "Gid":
			p.GID = value
		case "Groups":
			p.Groups = value
		case "CapEff":
			p.CapEff = value
		case "CapBnd":
			p.CapBnd = value
		case "NoNewPrivs":
			p.NoNewPrivs = value == "1"
		}
	}
	mounts, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", state.Pid))
	if err != nil {
		return Kernel{}, err
	}
	// mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ...; the last
	// mount on / is the one the process sees.
	for line := range strings.Lines(string(mounts)) {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			p.RootReadOnly = slices.Contains(strings.Split(f[5], ","), "ro")
		}
	}
	if p.MemoryLimit, err = memoryLimit(state.Pid); err != nil {
		return Kernel{}, err
	}
	return p, nil
}

// memoryLimit reads the memory limit of a process's cgroup, from the v1
// memory hierarchy if the machine has one, else from the v2 hierarchy.
func memoryLimit(pid int) (int64, error) {
	cgroups, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(cgroups)) {
		// ID:CONTROLLERS:PATH
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		var file string
		switch {
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			file = filepath.Join("/sys/fs/cgroup/memory", f[2], "memory.limit_in_bytes")
		case f[0] == "0" && f[1] == "":
			file = filepath.Join("/sys/fs/cgroup", f[2], "memory.max")
			if _, err := os.Stat(file); err != nil {
				continue // a v1 machine's unified hierarchy has no controllers
			}
		default:
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return 0, err
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0, nil
		}
		return strconv.ParseInt(v, 10, 64)
	}
	return 0, errors.New("no memory cgroup")
}
