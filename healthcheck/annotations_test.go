package healthcheck

import (
	"strings"
	"testing"
	"time"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

func TestParseAnnotations(t *testing.T) {
	web := func(kind Kind, path string, lo, hi int) Spec {
		s := Defaults()
		s.Kind, s.Path, s.StatusMin, s.StatusMax = kind, path, lo, hi
		return s
	}
	with := func(s Spec, f func(*Spec)) Spec { f(&s); return s }
	tests := []struct {
		name        string
		annotations map[string]string
		defaults    Spec // zero: Defaults()
		want        Spec
		errHas      []string
	}{
		{name: "no annotations probe by TCP connect every 10s", want: Defaults()},
		{name: "http check GETs / and passes 200-399",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http"}, want: web(KindHTTP, "/", 200, 399)},
		{name: "https check with a path and one status",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: " HTTPS ", kfedv1alpha1.AnnotationHealthPath: "/healthz?full=1", kfedv1alpha1.AnnotationHealthStatus: "204"},
			want:        web(KindHTTPS, "/healthz?full=1", 204, 204)},
		{name: "status range is read lowest first",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthStatus: "200-299"}, want: web(KindHTTP, "/", 200, 299)},
		{name: "tcp check clears an http default's path and status",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "tcp"}, defaults: web(KindHTTP, "/ready", 200, 200), want: Defaults()},
		{name: "an http default's path is kept",
			defaults: web(KindHTTP, "/ready", 200, 200), want: web(KindHTTP, "/ready", 200, 200)},
		{name: "an http check asks for a host",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthHost: "Shop.Example.COM."},
			want:        with(web(KindHTTP, "/", 200, 399), func(s *Spec) { s.Host = "shop.example.com" })},
		{name: "a host needs http or https",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthHost: "shop.example.com"}, errHas: []string{kfedv1alpha1.AnnotationHealthHost, "needs"}},
		{name: "a host is a host name",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthHost: "shop example"}, errHas: []string{kfedv1alpha1.AnnotationHealthHost, "not a host name"}},
		{name: "port probes another port",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthPort: "8080"}, want: with(Defaults(), func(s *Spec) { s.Port = 8080 })},
		{name: "interval and timeout are Go durations",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthInterval: "1m", kfedv1alpha1.AnnotationHealthTimeout: "30s"},
			want:        with(Defaults(), func(s *Spec) { s.Interval, s.Timeout = time.Minute, 30*time.Second })},
		{name: "a short interval alone shortens the default timeout to 40 percent of it",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthInterval: "1s"},
			want:        with(Defaults(), func(s *Spec) { s.Interval, s.Timeout = time.Second, 400*time.Millisecond })},
		{name: "a long interval alone keeps the default timeout",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthInterval: "30s"},
			want:        with(Defaults(), func(s *Spec) { s.Interval = 30 * time.Second })},
		{name: "rise and fall are whole numbers",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthRise: "1", kfedv1alpha1.AnnotationHealthFall: " 10 "},
			want:        with(Defaults(), func(s *Spec) { s.Rise, s.Fall = 1, 10 })},
		{name: "an http check reads a named load metric against a target",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthLoadMetric: " named_metrics.queue ", kfedv1alpha1.AnnotationHealthLoadTarget: "40"},
			want:        with(web(KindHTTP, "/", 200, 399), func(s *Spec) { s.LoadMetric, s.LoadTarget = "named_metrics.queue", 40 })},
		{name: "a load metric needs http or https",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthLoadMetric: "cpu_utilization"}, errHas: []string{kfedv1alpha1.AnnotationHealthLoadMetric, "needs"}},
		{name: "a load metric is one ORCA carries",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthLoadMetric: "loadavg"},
			errHas:      []string{kfedv1alpha1.AnnotationHealthLoadMetric, "named_metrics.NAME"}},
		{name: "a load target is a positive number",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "https", kfedv1alpha1.AnnotationHealthLoadTarget: "0"},
			errHas:      []string{kfedv1alpha1.AnnotationHealthLoadTarget, "above 0"}},
		{name: "unknown check kind is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "icmp"},
			errHas: []string{`kfed.io/health-check="icmp": must be tcp, http or https`}},
		{name: "path on a tcp check is refused, not ignored", annotations: map[string]string{kfedv1alpha1.AnnotationHealthPath: "/healthz"},
			errHas: []string{`kfed.io/health-path="/healthz": a path needs kfed.io/health-check http or https`}},
		{name: "relative path is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthPath: "healthz"},
			errHas: []string{`kfed.io/health-path="healthz"`, "must start with /"}},
		{name: "path with a space is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthPath: "/a b"},
			errHas: []string{`kfed.io/health-path="/a b"`, "without spaces"}},
		{name: "path with a bad escape is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthPath: "/a%zz"},
			errHas: []string{`kfed.io/health-path="/a%zz"`, "invalid URL escape"}},
		{name: "empty path is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthPath: ""},
			errHas: []string{`kfed.io/health-path=""`}},
		{name: "port zero is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthPort: "0"},
			errHas: []string{`kfed.io/health-port="0": must be a port number from 1 to 65535`}},
		{name: "port beyond 65535 is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthPort: "65536"},
			errHas: []string{`kfed.io/health-port="65536"`}},
		{name: "named port is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthPort: "http"},
			errHas: []string{`kfed.io/health-port="http"`}},
		{name: "status on a tcp check is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthStatus: "200"},
			errHas: []string{`kfed.io/health-status="200": a status range needs kfed.io/health-check http or https`}},
		{name: "status range backwards is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthStatus: "399-200"},
			errHas: []string{`kfed.io/health-status="399-200": statuses must lie within 100-599, lowest first`}},
		{name: "status beyond 599 is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthStatus: "200-600"},
			errHas: []string{`kfed.io/health-status="200-600"`}},
		{name: "status that is not a number is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "http", kfedv1alpha1.AnnotationHealthStatus: "2xx"},
			errHas: []string{`kfed.io/health-status="2xx": want a status such as 200`}},
		{name: "interval without a unit is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthInterval: "10"},
			errHas: []string{`kfed.io/health-interval="10": not a duration`}},
		{name: "interval under a second is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthInterval: "500ms"},
			errHas: []string{`kfed.io/health-interval="500ms": must be from 1s to 1h0m0s`}},
		{name: "interval over an hour is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthInterval: "2h"},
			errHas: []string{`kfed.io/health-interval="2h"`}},
		{name: "timeout under 100ms is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthTimeout: "50ms"},
			errHas: []string{`kfed.io/health-timeout="50ms": must be at least 100ms`}},
		{name: "timeout as long as the interval is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthTimeout: "10s"},
			errHas: []string{`kfed.io/health-timeout="10s": must be shorter than the interval, 10s`}},
		{name: "timeout is checked against the interval annotation", annotations: map[string]string{kfedv1alpha1.AnnotationHealthInterval: "5s", kfedv1alpha1.AnnotationHealthTimeout: "6s"},
			errHas: []string{`kfed.io/health-timeout="6s": must be shorter than the interval, 5s`}},
		{name: "timeout that is not a duration is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthTimeout: "soon"},
			errHas: []string{`kfed.io/health-timeout="soon": not a duration`}},
		{name: "rise zero is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthRise: "0"},
			errHas: []string{`kfed.io/health-rise="0": must be a whole number from 1 to 10`}},
		{name: "fall eleven is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthFall: "11"},
			errHas: []string{`kfed.io/health-fall="11": must be a whole number from 1 to 10`}},
		{name: "fall that is not a number is refused", annotations: map[string]string{kfedv1alpha1.AnnotationHealthFall: "three"},
			errHas: []string{`kfed.io/health-fall="three"`}},
		{name: "every problem is reported at once",
			annotations: map[string]string{kfedv1alpha1.AnnotationHealthCheck: "udp", kfedv1alpha1.AnnotationHealthPort: "-1", kfedv1alpha1.AnnotationHealthInterval: "x", kfedv1alpha1.AnnotationHealthTimeout: "1ms", kfedv1alpha1.AnnotationHealthRise: "0", kfedv1alpha1.AnnotationHealthFall: "99"},
			errHas:      []string{kfedv1alpha1.AnnotationHealthCheck, kfedv1alpha1.AnnotationHealthPort, kfedv1alpha1.AnnotationHealthInterval, kfedv1alpha1.AnnotationHealthTimeout, kfedv1alpha1.AnnotationHealthRise, kfedv1alpha1.AnnotationHealthFall}},
		{name: "invalid defaults are reported as such",
			defaults: with(Defaults(), func(s *Spec) { s.Timeout = time.Minute }),
			errHas:   []string{"health-check defaults: timeout 1m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defaults := tt.defaults
			if defaults == (Spec{}) {
				defaults = Defaults()
			}
			got, err := ParseAnnotations(tt.annotations, defaults)
			if len(tt.errHas) > 0 {
				if err == nil {
					t.Fatalf("no error, got %v", got)
				}
				for _, want := range tt.errHas {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		spec   Spec
		errHas []string
	}{
		{name: "defaults are valid", spec: Defaults()},
		{name: "zero Spec names everything missing", spec: Spec{},
			errHas: []string{`kind ""`, "interval 0s", "timeout 0s", "rise 0", "fall 0"}},
		{name: "tcp with a path is invalid", spec: Spec{Kind: KindTCP, Path: "/", Interval: time.Second, Timeout: time.Millisecond * 100, Rise: 1, Fall: 1},
			errHas: []string{"a tcp check has no path"}},
		{name: "http without a status range is invalid", spec: Spec{Kind: KindHTTP, Path: "/", Interval: time.Second, Timeout: time.Millisecond * 100, Rise: 1, Fall: 1},
			errHas: []string{"status range 0-0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if len(tt.errHas) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tt.errHas {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// FuzzParseAnnotations feeds arbitrary annotation values; present is a bit
// mask saying which annotations exist at all (an empty value is not an
// absent one). Whatever the input, ParseAnnotations must not panic, a Spec
// it accepts must validate, and a refusal must come with the zero Spec.
func FuzzParseAnnotations(f *testing.F) {
	keys := []string{kfedv1alpha1.AnnotationHealthCheck, kfedv1alpha1.AnnotationHealthPath, kfedv1alpha1.AnnotationHealthPort, kfedv1alpha1.AnnotationHealthStatus,
		kfedv1alpha1.AnnotationHealthInterval, kfedv1alpha1.AnnotationHealthTimeout, kfedv1alpha1.AnnotationHealthRise, kfedv1alpha1.AnnotationHealthFall}
	f.Fuzz(func(t *testing.T, present uint8, check, path, port, status, interval, timeout, rise, fall string) {
		values := []string{check, path, port, status, interval, timeout, rise, fall}
		annotations := map[string]string{}
		for i, k := range keys {
			if present&(1<<i) != 0 {
				annotations[k] = values[i]
			}
		}
		spec, err := ParseAnnotations(annotations, Defaults())
		if err != nil {
			if spec != (Spec{}) {
				t.Fatalf("error %v with a non-zero Spec %v", err, spec)
			}
			return
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("accepted %v, which does not validate: %v", spec, err)
		}
	})
}
