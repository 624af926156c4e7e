package buildinfo

import (
	"maps"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestResolve(t *testing.T) {
	vcs := func(rev string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}}
	}
	tests := []struct {
		name                 string
		version, revision    string
		bi                   *debug.BuildInfo
		wantVersion, wantRev string
	}{
		{"a stamped build reports its stamp over the toolchain's", "v0.3.0", "abc",
			&debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}, Settings: vcs("def")}, "v0.3.0", "abc"},
		{"go install module@version reports the module version and VCS revision", "", "",
			&debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}, Settings: vcs("def")}, "v0.2.0", "def"},
		{"a checkout build without a stamp reports its revision and an unknown version", "", "",
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("def")}, Unknown, "def"},
		{"a build with nothing recorded says unknown", "", "", &debug.BuildInfo{}, Unknown, Unknown},
		{"no build info at all says unknown", "", "", nil, Unknown, Unknown},
		{"a stamped version alone keeps the toolchain's revision", "v1.0.0", "",
			&debug.BuildInfo{Settings: vcs("def")}, "v1.0.0", "def"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resolve(tt.version, tt.revision, tt.bi)
			if got.Version != tt.wantVersion || got.Revision != tt.wantRev || got.GoVersion != runtime.Version() {
				t.Errorf("resolve = %+v, want version %q revision %q go %q", got, tt.wantVersion, tt.wantRev, runtime.Version())
			}
		})
	}
}

func TestStringNamesVersionRevisionAndGo(t *testing.T) {
	got := Info{Version: "v0.3.0", Revision: "abc", GoVersion: "go1.26.8"}.String()
	if want := "v0.3.0 (revision abc, go1.26.8)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestCollectorExposesBuildInfo(t *testing.T) {
	i := Info{Version: "v0.3.0", Revision: "abc", GoVersion: "go1.26.8"}
	tests := []struct {
		name                 string
		namespace, subsystem string
		want                 string
	}{
		{"kfed's binaries", "kfed", "", "kfed_build_info"},
		{"the CoreDNS plugin", "coredns", "kfed", "coredns_kfed_build_info"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			reg.MustRegister(NewCollector(tt.namespace, tt.subsystem, i))
			got, err := Gathered(reg, tt.want)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"version": "v0.3.0", "revision": "abc", "goversion": "go1.26.8"}
			if !maps.Equal(got, want) {
				t.Errorf("%s labels = %v, want %v", tt.want, got, want)
			}
		})
	}
}
