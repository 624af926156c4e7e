package pods

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
)

// Spec is the part of an OCI runtime configuration (config.json, runtime
// spec 1.0) this package writes; runc reads it from the bundle.
type Spec struct {
	OCIVersion string  `json:"ociVersion"`
	Process    Process `json:"process"`
	Root       Root    `json:"root"`
	Hostname   string  `json:"hostname,omitempty"`
	Mounts     []Mount `json:"mounts"`
	Linux      Linux   `json:"linux"`
}

// Process is what runs in the container and as whom.
type Process struct {
	User            User          `json:"user"`
	Args            []string      `json:"args"`
	Env             []string      `json:"env"`
	Cwd             string        `json:"cwd"`
	Capabilities    *Capabilities `json:"capabilities,omitempty"`
	NoNewPrivileges bool          `json:"noNewPrivileges,omitempty"`
}

// User is the process's identity.
type User struct {
	UID            uint32   `json:"uid"`
	GID            uint32   `json:"gid"`
	AdditionalGids []uint32 `json:"additionalGids,omitempty"`
}

// Capabilities are the process's capability sets.
type Capabilities struct {
	Bounding    []string `json:"bounding"`
	Effective   []string `json:"effective"`
	Inheritable []string `json:"inheritable"`
	Permitted   []string `json:"permitted"`
	Ambient     []string `json:"ambient"`
}

// Root is the container's root file system.
type Root struct {
	Path     string `json:"path"`
	Readonly bool   `json:"readonly"`
}

// Mount is one mount in the container.
type Mount struct {
	Destination string   `json:"destination"`
	Type        string   `json:"type,omitempty"`
	Source      string   `json:"source,omitempty"`
	Options     []string `json:"options,omitempty"`
}

// Linux holds the Linux-specific settings.
type Linux struct {
	Namespaces    []Namespace `json:"namespaces"`
	Resources     *Resources  `json:"resources,omitempty"`
	MaskedPaths   []string    `json:"maskedPaths,omitempty"`
	ReadonlyPaths []string    `json:"readonlyPaths,omitempty"`
}

// Namespace is a namespace the container gets of its own.
type Namespace struct {
	Type string `json:"type"`
}

// Resources are the container's cgroup limits.
type Resources struct {
	Memory *MemoryResources `json:"memory,omitempty"`
	CPU    *CPUResources    `json:"cpu,omitempty"`
}

// MemoryResources limit memory, in bytes.
type MemoryResources struct {
	Limit *int64 `json:"limit,omitempty"`
}

// CPUResources cap CPU as the kubelet does from a CPU limit.
type CPUResources struct {
	Quota  *int64  `json:"quota,omitempty"`
	Period *uint64 `json:"period,omitempty"`
}

// defaultCapabilities are what containerd and CRI-O give a container that
// neither adds nor drops any.
var defaultCapabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID",
	"CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// Container is what one container's runtime configuration is made from.
type Container struct {
	Pod       *corev1.PodSpec
	Container *corev1.Container
	// Image is the image's configuration (entrypoint, cmd, env, user).
	Image v1.Config
	// Hostname is the pod's name, as a pod's UTS namespace has it.
	Hostname string
	// Env is the container's environment as the kubelet resolves it (the
	// API server's service variables, then the container's env with
	// references and the downward API filled), without the image's.
	Env []EnvVar
	// Volumes maps each of the pod's volumes to the host folder holding it.
	Volumes map[string]string
	// EtcFiles maps /etc/hosts, /etc/hostname and /etc/resolv.conf to the
	// host files the kubelet writes for the pod.
	EtcFiles map[string]string
}

// EnvVar is a resolved environment variable.
type EnvVar struct{ Name, Value string }

// RuntimeSpec turns a container of a pod into the runtime configuration a
// kubelet's runtime would give runc, or says why a kubelet would refuse to
// start it (a root user under runAsNonRoot, a user it cannot check).
func RuntimeSpec(c Container) (*Spec, error) {
	user, err := processUser(c)
	if err != nil {
		return nil, err
	}
	args, err := commandLine(c)
	if err != nil {
		return nil, err
	}
	sc := c.Container.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	s := &Spec{
		OCIVersion: "1.0.2",
		Process: Process{
			User:         user,
			Args:         args,
			Env:          environment(c.Image.Env, c.Env),
			Cwd:          firstOf(c.Container.WorkingDir, c.Image.WorkingDir, "/"),
			Capabilities: capabilities(sc.Capabilities),
			// The kubelet sets no_new_privs unless privilege escalation is
			// allowed, which is the default.
			NoNewPrivileges: sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
		},
		Root:     Root{Path: "rootfs", Readonly: sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem},
		Hostname: c.Hostname,
		Mounts:   systemMounts(),
		Linux: Linux{
			// No network namespace: the host's loopback is the network.
			Namespaces:    []Namespace{{"pid"}, {"ipc"}, {"uts"}, {"mount"}},
			Resources:     resources(c.Container.Resources),
			MaskedPaths:   []string{"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware"},
			ReadonlyPaths: []string{"/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
	for _, dst := range slices.Sorted(maps.Keys(c.EtcFiles)) {
		s.Mounts = append(s.Mounts, Mount{Destination: dst, Type: "bind", Source: c.EtcFiles[dst], Options: []string{"rbind", "rprivate"}})
	}
	for _, vm := range c.Container.VolumeMounts {
		src, ok := c.Volumes[vm.Name]
		if !ok {
			return nil, fmt.Errorf("container %s mounts volume %q, which the pod does not have", c.Container.Name, vm.Name)
		}
		if vm.SubPath != "" {
			src = filepath.Join(src, vm.SubPath)
		}
		opts := []string{"rbind", "rprivate"}
		if vm.ReadOnly {
			opts = append(opts, "ro")
		}
		s.Mounts = append(s.Mounts, Mount{Destination: vm.MountPath, Type: "bind", Source: src, Options: opts})
	}
	return s, nil
}

// processUser is the user and groups the container runs as: the container's
// runAsUser and runAsGroup, else the pod's, else the image's; fsGroup and
// supplementalGroups are added groups. Like the kubelet, it refuses to run
// as root under runAsNonRoot, and refuses a user name it cannot check.
func processUser(c Container) (User, error) {
	var uid, gid *int64
	nonRoot := false
	if ps := c.Pod.SecurityContext; ps != nil {
		uid, gid = ps.RunAsUser, ps.RunAsGroup
		nonRoot = ps.RunAsNonRoot != nil && *ps.RunAsNonRoot
	}
	if cs := c.Container.SecurityContext; cs != nil {
		if cs.RunAsUser != nil {
			uid = cs.RunAsUser
		}
		if cs.RunAsGroup != nil {
			gid = cs.RunAsGroup
		}
		if cs.RunAsNonRoot != nil {
			nonRoot = *cs.RunAsNonRoot
		}
	}
	imgUser, imgGroup, _ := strings.Cut(c.Image.User, ":")
	if uid == nil {
		if imgUser == "" {
			imgUser = "0"
		}
		n, err := strconv.ParseInt(imgUser, 10, 64)
		if err != nil {
			if nonRoot {
				return User{}, fmt.Errorf("container %s: image has non-numeric user (%s), cannot verify user is non-root", c.Container.Name, imgUser)
			}
			return User{}, fmt.Errorf("container %s: image user %q is a name, which this runtime does not look up", c.Container.Name, imgUser)
		}
		uid = &n
	}
	if nonRoot && *uid == 0 {
		return User{}, fmt.Errorf("container %s: container has runAsNonRoot and image will run as root", c.Container.Name)
	}
	if gid == nil {
		n := int64(0)
		if imgGroup != "" {
			var err error
			if n, err = strconv.ParseInt(imgGroup, 10, 64); err != nil {
				return User{}, fmt.Errorf("container %s: image group %q is not a number", c.Container.Name, imgGroup)
			}
		}
		gid = &n
	}
	u := User{UID: uint32(*uid), GID: uint32(*gid)}
	if ps := c.Pod.SecurityContext; ps != nil {
		if ps.FSGroup != nil {
			u.AdditionalGids = append(u.AdditionalGids, uint32(*ps.FSGroup))
		}
		for _, g := range ps.SupplementalGroups {
			u.AdditionalGids = append(u.AdditionalGids, uint32(g))
		}
	}
	return u, nil
}

// commandLine is the process's argv: the container's command, else the
// image's entrypoint; then the container's args, else (only when the
// container gives no command) the image's cmd. $(VAR) in the container's
// command and args is expanded from its env, as the kubelet does.
func commandLine(c Container) ([]string, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	var argv []string
	if len(c.Container.Command) > 0 {
		for _, a := range c.Container.Command {
			argv = append(argv, Expand(a, env))
		}
	} else {
		argv = append(argv, c.Image.Entrypoint...)
	}
	switch {
	case len(c.Container.Args) > 0:
		for _, a := range c.Container.Args {
			argv = append(argv, Expand(a, env))
		}
	case len(c.Container.Command) == 0:
		argv = append(argv, c.Image.Cmd...)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("container %s: neither it nor its image says what to run", c.Container.Name)
	}
	return argv, nil
}

// Expand replaces $(NAME) in s with env's value of NAME, as Kubernetes does
// in a container's command, args and env values: a reference to an unknown
// name stays as written, and $$ is a literal $.
func Expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// environment is the image's env overridden by the container's, in order.
func environment(image []string, container []EnvVar) []string {
	var out []string
	index := map[string]int{}
	set := func(name, value string) {
		if i, ok := index[name]; ok {
			out[i] = name + "=" + value
			return
		}
		index[name] = len(out)
		out = append(out, name+"="+value)
	}
	for _, kv := range image {
		name, value, _ := strings.Cut(kv, "=")
		set(name, value)
	}
	for _, e := range container {
		set(e.Name, e.Value)
	}
	return out
}

// capabilities applies the container's drop and add to the runtime's
// default set; "ALL" drops or adds every capability.
func capabilities(c *corev1.Capabilities) *Capabilities {
	caps := slices.Clone(defaultCapabilities)
	if c != nil {
		for _, d := range c.Drop {
			if d == "ALL" {
				caps = nil
				break
			}
			caps = slices.DeleteFunc(caps, func(s string) bool { return s == "CAP_"+string(d) })
		}
		for _, a := range c.Add {
			if name := "CAP_" + string(a); !slices.Contains(caps, name) {
				caps = append(caps, name)
			}
		}
	}
	if caps == nil {
		caps = []string{}
	}
	return &Capabilities{Bounding: caps, Effective: caps, Inheritable: []string{}, Permitted: caps, Ambient: []string{}}
}

// resources are the cgroup settings the kubelet derives from limits: the
// memory limit, and a CFS quota from a CPU limit. A CPU request is not
// applied: the kubelet turns it into shares relative to the other pods
// under its kubepods cgroup, and here the container's cgroup would compete
// with every process of the host instead (50m is 51 shares against their
// 1024), which no node arranges.
func resources(r corev1.ResourceRequirements) *Resources {
	out := &Resources{}
	if m, ok := r.Limits[corev1.ResourceMemory]; ok {
		out.Memory = &MemoryResources{Limit: new(m.Value())}
	}
	if q, ok := r.Limits[corev1.ResourceCPU]; ok {
		out.CPU = &CPUResources{Period: new(uint64(100000)), Quota: new(q.MilliValue() * 100)}
	}
	return out
}

// systemMounts are the mounts every container gets from its runtime.
func systemMounts() []Mount {
	return []Mount{
		{Destination: "/proc", Type: "proc", Source: "proc"},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
	}
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
