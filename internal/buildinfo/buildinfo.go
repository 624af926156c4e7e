// Package buildinfo owns the version every kfed binary reports: in
// `--version`, in `kfed version`, and in the build-info metric
// (kfed_build_info{version,revision,goversion} 1) that lets a dashboard show
// which build each replica runs.
//
// The release build stamps it with the linker:
//
//	go build -ldflags "-X github.com/kfed-io/kfed/buildinfo.version=v0.3.0 -X github.com/kfed-io/kfed/buildinfo.revision=<commit>"
//
// (make build and make images do). An unstamped binary falls back to what the
// Go toolchain recorded: the module version for `go install ...@v0.3.0`, and
// the VCS revision when it was built in a git checkout with -buildvcs.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Set by -ldflags -X, the only way the linker can stamp a value: these are
// written once at link time and never at run time.
var (
	version  string
	revision string
)

// Unknown is the version or revision of a binary that was neither stamped
// nor built with module or VCS information.
const Unknown = "unknown"

// Info is one binary's build.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	GoVersion string `json:"goVersion"`
}

// Get returns this binary's build: the stamped version and revision, else
// what the Go toolchain recorded.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, revision, bi)
}

// resolve picks each field from the stamp, then from the build info.
func resolve(version, revision string, bi *debug.BuildInfo) Info {
	i := Info{Version: version, Revision: revision, GoVersion: runtime.Version()}
	if bi != nil {
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		if i.Revision == "" {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					i.Revision = s.Value
				}
			}
		}
	}
	if i.Version == "" {
		i.Version = Unknown
	}
	if i.Revision == "" {
		i.Revision = Unknown
	}
	return i
}

// String is the one line `--version` prints: "v0.3.0 (revision 1a2b3c, go1.26.8)".
func (i Info) String() string {
	return fmt.Sprintf("%s (revision %s, %s)", i.Version, i.Revision, i.GoVersion)
}

// GaugeOpts describe the build-info gauge namespace_subsystem_build_info
// (subsystem may be empty) whose constant labels version, revision and
// goversion are i's: the Prometheus convention for exposing a build, always 1,
// joined onto other series with `* on(instance) group_left(version)`.
func (i Info) GaugeOpts(namespace, subsystem string) prometheus.GaugeOpts {
	return prometheus.GaugeOpts{
		Namespace:   namespace,
		Subsystem:   subsystem,
		Name:        "build_info",
		Help:        "The build of this binary: its version, VCS revision and Go version. Always 1.",
		ConstLabels: prometheus.Labels{"version": i.Version, "revision": i.Revision, "goversion": i.GoVersion},
	}
}

// NewCollector returns the build-info gauge of i.GaugeOpts.
func NewCollector(namespace, subsystem string, i Info) prometheus.Collector {
	return prometheus.NewGaugeFunc(i.GaugeOpts(namespace, subsystem), func() float64 { return 1 })
}

// Gathered finds the build-info gauge name in what g gathers and returns its
// labels; an error when it is absent, not 1, or there more than once. Tests
// of each binary's registry use it.
func Gathered(g prometheus.Gatherer, name string) (map[string]string, error) {
	families, err := g.Gather()
	if err != nil {
		return nil, fmt.Errorf("gathering metrics: %w", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		if len(f.Metric) != 1 || f.Metric[0].GetGauge().GetValue() != 1 {
			return nil, fmt.Errorf("%s: want one series of value 1, have %v", name, f.Metric)
		}
		labels := map[string]string{}
		for _, l := range f.Metric[0].Label {
			labels[l.GetName()] = l.GetValue()
		}
		return labels, nil
	}
	return nil, fmt.Errorf("%s not registered", name)
}
