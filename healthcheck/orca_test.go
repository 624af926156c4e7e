package healthcheck

import (
	"context"
	"encoding/base64"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// orcaBin is the base64 of an OrcaLoadReport with cpu_utilization cpu,
// application_utilization app, and one named metric.
func orcaBin(cpu, app float64, name string, v float64) string {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(cpu))
	b = protowire.AppendTag(b, 3, protowire.VarintType) // rps, deprecated: skipped
	b = protowire.AppendVarint(b, 12)
	var entry []byte
	entry = protowire.AppendTag(entry, 1, protowire.BytesType)
	entry = protowire.AppendString(entry, name)
	entry = protowire.AppendTag(entry, 2, protowire.Fixed64Type)
	entry = protowire.AppendFixed64(entry, math.Float64bits(v))
	b = protowire.AppendTag(b, 8, protowire.BytesType)
	b = protowire.AppendBytes(b, entry)
	b = protowire.AppendTag(b, 9, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(app))
	return base64.StdEncoding.EncodeToString(b)
}

func TestReadLoad(t *testing.T) {
	web := func(metric string, target float64) Spec {
		return Spec{Kind: KindHTTP, LoadMetric: metric, LoadTarget: target}
	}
	for _, tc := range []struct {
		name   string
		header map[string]string
		spec   Spec
		want   float64
		ok     bool
		err    string
	}{
		{name: "none", spec: web("", 0)},
		{name: "TEXT, application first", header: map[string]string{LoadHeader: "TEXT application_utilization=0.83, cpu_utilization=0.7"}, spec: web("", 0), want: 0.83, ok: true},
		{name: "TEXT, application 0: cpu", header: map[string]string{LoadHeader: "TEXT application_utilization=0, cpu_utilization=0.7"}, spec: web("", 0), want: 0.7, ok: true},
		{name: "TEXT, application 0 alone: idle", header: map[string]string{LoadHeader: "TEXT application_utilization=0"}, spec: web("", 0), want: 0, ok: true},
		{name: "JSON, application 0 alone: idle", header: map[string]string{LoadHeader: `JSON {"application_utilization": 0}`}, spec: web("", 0), want: 0, ok: true},
		{name: "TEXT, neither figure: none", header: map[string]string{LoadHeader: "TEXT named_metrics.q=0.4"}, spec: web("", 0)},
		{name: "TEXT, cpu alone", header: map[string]string{LoadHeader: "TEXT cpu_utilization=0.4"}, spec: web("", 0), want: 0.4, ok: true},
		{name: "TEXT, a named metric over its target", header: map[string]string{LoadHeader: "TEXT cpu_utilization=0.4,named_metrics.queue=30"}, spec: web("named_metrics.queue", 40), want: 0.75, ok: true},
		{name: "TEXT, a rate over its target", header: map[string]string{LoadHeader: "TEXT rps_fractional=1500"}, spec: web(MetricRPS, 1000), want: 1.5, ok: true},
		{name: "TEXT, metric absent", header: map[string]string{LoadHeader: "TEXT cpu_utilization=0.4"}, spec: web(MetricMemory, 0)},
		{name: "TEXT, not a number", header: map[string]string{LoadHeader: "TEXT cpu_utilization=lots"}, spec: web("", 0), err: "not a number"},
		{name: "TEXT, negative", header: map[string]string{LoadHeader: "TEXT cpu_utilization=-1"}, spec: web("", 0), err: "not negative"},
		{name: "TEXT, no =", header: map[string]string{LoadHeader: "TEXT cpu_utilization"}, spec: web("", 0), err: "key=value"},
		{name: "JSON", header: map[string]string{LoadHeader: `JSON {"cpu_utilization": 0.3, "application_utilization": 0.9, "named_metrics": {"q": 0.2}}`}, spec: web("", 0), want: 0.9, ok: true},
		{name: "JSON, named", header: map[string]string{LoadHeader: `JSON {"cpu_utilization": 0.3, "named_metrics": {"q": 0.2}}`}, spec: web("named_metrics.q", 0), want: 0.2, ok: true},
		{name: "JSON, utilization map", header: map[string]string{LoadHeader: `JSON {"utilization": {"gpu": 0.6}}`}, spec: web("utilization.gpu", 0), want: 0.6, ok: true},
		{name: "JSON, broken", header: map[string]string{LoadHeader: `JSON {"cpu_utilization": `}, spec: web("", 0), err: "JSON"},
		{name: "BIN in the header", header: map[string]string{LoadHeader: "BIN " + orcaBin(0.3, 0.95, "q", 0.1)}, spec: web("", 0), want: 0.95, ok: true},
		{name: "BIN, named", header: map[string]string{LoadHeader: "BIN " + orcaBin(0.3, 0.95, "q", 0.1)}, spec: web("named_metrics.q", 0), want: 0.1, ok: true},
		{name: "binary header, gRPC's", header: map[string]string{LoadHeaderBin: orcaBin(0.3, 0, "q", 0.1)}, spec: web("", 0), want: 0.3, ok: true},
		{name: "BIN, not base64", header: map[string]string{LoadHeader: "BIN %%%"}, spec: web("", 0), err: "base64"},
		{name: "BIN, cut short", header: map[string]string{LoadHeader: "BIN " + base64.StdEncoding.EncodeToString([]byte{0x09, 1, 2})}, spec: web("", 0), err: "BIN"},
		{name: "no form", header: map[string]string{LoadHeader: "cpu_utilization=0.4"}, spec: web("", 0), err: "TEXT, JSON or BIN"},
		{name: "too long", header: map[string]string{LoadHeader: "TEXT cpu_utilization=0.4, " + strings.Repeat("x=1, ", 1000)}, spec: web("", 0), err: "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			got, ok, err := readLoad(h, tc.spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				if ok {
					t.Errorf("a figure from an unreadable report: %v", got)
				}
				return
			}
			if err != nil || ok != tc.ok || math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("readLoad = %v, %v, %v; want %v, %v", got, ok, err, tc.want, tc.ok)
			}
		})
	}
}

// An http probe's result carries the figure of the answer, passing or not.
func TestProbeReadsLoad(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(LoadHeader, "TEXT application_utilization=0.6")
		if r.URL.Path == "/down" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer s.Close()
	p := newProber(netip.Addr{})
	for _, path := range []string{"/", "/down"} {
		spec := Defaults()
		spec.Kind, spec.Path, spec.StatusMin, spec.StatusMax = KindHTTP, path, 200, 399
		r := p.probe(context.Background(), serverAddr(t, s), spec)
		if !r.Loaded || r.Load != 0.6 || r.LoadErr != nil {
			t.Errorf("%s: load %v, %v, %v; want 0.6", path, r.Load, r.Loaded, r.LoadErr)
		}
	}
}

// BenchmarkReadLoad is what reading an answer's ORCA report costs a probe.
func BenchmarkReadLoad(b *testing.B) {
	for _, bc := range []struct{ name, header, value string }{
		{"none", "", ""},
		{"TEXT", LoadHeader, "TEXT application_utilization=0.83, cpu_utilization=0.7, rps_fractional=1000"},
		{"JSON", LoadHeader, `JSON {"application_utilization": 0.83, "cpu_utilization": 0.7, "rps_fractional": 1000}`},
		{"BIN", LoadHeaderBin, orcaBin(0.7, 0.83, "q", 0.1)},
	} {
		h := http.Header{}
		if bc.header != "" {
			h.Set(bc.header, bc.value)
		}
		spec := Spec{Kind: KindHTTP}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := readLoad(h, spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A target's load is the average of its rounds' figures, and counts as none
// once no round has renewed it for LoadExpiry.
func TestEngineAveragesLoad(t *testing.T) {
	var figure atomic.Value
	figure.Store("TEXT application_utilization=0.2")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if f := figure.Load().(string); f != "" {
			w.Header().Set(LoadHeader, f)
		}
	}))
	defer srv.Close()
	h := newHarness(t, Options{shortIntervals: true})
	spec := httpSpecEvery(time.Second)
	if err := h.e.Set([]Target{{Key: "ns/web/c1", Cluster: "c1", Addrs: []netip.AddrPort{serverAddr(t, srv)}, Spec: spec}}); err != nil {
		t.Fatal(err)
	}
	loadNow := func() (float64, bool) {
		l, ok := h.e.Loads()["ns/web/c1"]
		return l.Utilization, ok
	}
	h.next()
	if u, ok := loadNow(); !ok || math.Abs(u-0.2) > 1e-9 {
		t.Fatalf("after one round: %v, %v; want 0.2", u, ok)
	}
	figure.Store("TEXT application_utilization=1.0")
	for _, want := range []float64{0.6, 0.8, 0.9} {
		h.next()
		if u, ok := loadNow(); !ok || math.Abs(u-want) > 1e-9 {
			t.Fatalf("load %v, %v; want %v", u, ok, want)
		}
	}
	figure.Store("") // the endpoint stops publishing: the figure stands until it expires
	h.next()
	if _, ok := loadNow(); !ok {
		t.Fatal("the figure went at once")
	}
	for range int(LoadExpiry/spec.Interval) + 1 {
		h.advance(spec.Interval * 11 / 10)
	}
	if u, ok := loadNow(); ok {
		t.Errorf("a figure %v after %v without one", u, LoadExpiry)
	}
}
