package healthcheck

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// Load: an endpoint may say how loaded it is on the answers to http and
// https probes, in ORCA's form (Open Request Cost Aggregation, as Envoy
// and gRPC read it from a backend's responses): the header
//
//	endpoint-load-metrics: TEXT application_utilization=0.8, cpu_utilization=0.7, named_metrics.queue=0.4
//	endpoint-load-metrics: JSON {"application_utilization": 0.8, "named_metrics": {"queue": 0.4}}
//	endpoint-load-metrics: BIN <base64 of an xds.data.orca.v3.OrcaLoadReport>
//
// or endpoint-load-metrics-bin: <base64> as gRPC sends it. One figure of the
// report is the endpoint's load (Spec.LoadMetric): by default
// application_utilization when it is above 0, else cpu_utilization, as
// gRPC's weighted round robin takes it; divided by Spec.LoadTarget, so
// that 1.0 is the endpoint's target.

// ORCA's header names.
const (
	LoadHeader    = "endpoint-load-metrics"
	LoadHeaderBin = "endpoint-load-metrics-bin"
)

// The metrics of an ORCA report a Service may name (kfed.io/health-load-metric),
// besides a named metric (MetricNamedPrefix) or an entry of the
// utilization map (MetricUtilizationPrefix).
const (
	MetricApplication = "application_utilization"
	MetricCPU         = "cpu_utilization"
	MetricMemory      = "mem_utilization"
	MetricRPS         = "rps_fractional"
	MetricEPS         = "eps"
	// MetricNamedPrefix starts a named metric: named_metrics.queue.
	MetricNamedPrefix = "named_metrics."
	// MetricUtilizationPrefix starts an entry of the utilization map.
	MetricUtilizationPrefix = "utilization."
)

// maxLoadHeader bounds the header a probe reads a figure from.
const maxLoadHeader = 4 << 10

// checkMetric reports whether m names a metric an ORCA report can carry.
func checkMetric(m string) error {
	switch m {
	case MetricApplication, MetricCPU, MetricMemory, MetricRPS, MetricEPS:
		return nil
	}
	for _, p := range []string{MetricNamedPrefix, MetricUtilizationPrefix} {
		if name, ok := strings.CutPrefix(m, p); ok && name != "" && !strings.ContainsAny(name, "=, \t") {
			return nil
		}
	}
	return fmt.Errorf("metric %q: must be %s, %s, %s, %s, %s, %sNAME or %sNAME", m,
		MetricApplication, MetricCPU, MetricMemory, MetricRPS, MetricEPS, MetricNamedPrefix, MetricUtilizationPrefix)
}

// readLoad is the load the ORCA report in h gives for spec: its metric
// over its target. ok is false when h carries no report or the report not
// the metric; err says why a report could not be read.
func readLoad(h http.Header, spec Spec) (u float64, ok bool, err error) {
	v, bin := h.Get(LoadHeader), false
	if v == "" {
		if v = h.Get(LoadHeaderBin); v == "" {
			return 0, false, nil
		}
		bin = true
	}
	if len(v) > maxLoadHeader {
		return 0, false, fmt.Errorf("%s of %d bytes: at most %d", LoadHeader, len(v), maxLoadHeader)
	}
	r := orcaReport{want: spec.LoadMetric}
	switch {
	case bin:
		err = r.readBin(v)
	case strings.HasPrefix(v, "TEXT "):
		err = r.readText(v[len("TEXT "):])
	case strings.HasPrefix(v, "JSON "):
		err = r.readJSON(v[len("JSON "):])
	case strings.HasPrefix(v, "BIN "):
		err = r.readBin(v[len("BIN "):])
	default:
		err = errors.New("want TEXT, JSON or BIN before the report")
	}
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", LoadHeader, err)
	}
	f, ok := r.figure()
	if !ok {
		return 0, false, nil
	}
	if spec.LoadTarget > 0 {
		f /= spec.LoadTarget
	}
	return f, true, nil
}

// orcaReport keeps, of an ORCA report, the figures a load can come from:
// the metric asked for, and the two the default picks between. Metrics of
// the maps are named with their prefix, as the TEXT form spells them.
type orcaReport struct {
	want                 string
	v, app, cpu          float64
	hasV, hasApp, hasCPU bool
}

func (r *orcaReport) set(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%s=%v: must be a finite number, not negative", name, v)
	}
	switch {
	case r.want != "":
		if name == r.want {
			r.v, r.hasV = v, true
		}
	case name == MetricApplication:
		r.app, r.hasApp = v, true
	case name == MetricCPU:
		r.cpu, r.hasCPU = v, true
	}
	return nil
}

// figure is the report's metric asked for, or the default one: the
// application's utilisation when above 0, else the CPU's, else the
// application's 0 (an idle endpoint that reports only that is idle, not
// silent: read as no figure, the figure it had before it went idle would
// stand until it expires, and an endpoint shed at that figure would stay
// shed). A BIN report cannot say 0 (protobuf leaves zeros out), so an idle
// one says nothing.
func (r *orcaReport) figure() (float64, bool) {
	switch {
	case r.want != "":
		return r.v, r.hasV
	case r.hasApp && r.app > 0:
		return r.app, true
	case r.hasCPU:
		return r.cpu, true
	}
	return r.app, r.hasApp
}

// readText reads "key=value, key=value".
func (r *orcaReport) readText(s string) error {
	for kv := range strings.SplitSeq(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, found := strings.Cut(kv, "=")
		if !found {
			return fmt.Errorf("%q: want key=value", kv)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return fmt.Errorf("%q: not a number", kv)
		}
		if err := r.set(strings.TrimSpace(k), f); err != nil {
			return err
		}
	}
	return nil
}

// readJSON reads the report as JSON, its maps under their field names.
func (r *orcaReport) readJSON(s string) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return fmt.Errorf("JSON: %w", err)
	}
	for k, v := range raw {
		switch k {
		case "named_metrics", "utilization", "request_cost":
			var m map[string]float64
			if err := json.Unmarshal(v, &m); err != nil {
				return fmt.Errorf("JSON %s: %w", k, err)
			}
			for name, f := range m {
				if err := r.set(k+"."+name, f); err != nil {
					return err
				}
			}
		default:
			var f float64
			if json.Unmarshal(v, &f) != nil {
				continue // a field that is no figure (rps as a string, say) names none
			}
			if err := r.set(k, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// The field numbers of xds.data.orca.v3.OrcaLoadReport.
var orcaFields = map[protowire.Number]string{
	1: MetricCPU, 2: MetricMemory, 6: MetricRPS, 7: MetricEPS, 9: MetricApplication,
	4: "request_cost", 5: "utilization", 8: "named_metrics",
}

// readBin reads the base64 of a serialised OrcaLoadReport.
func (r *orcaReport) readBin(s string) error {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(strings.TrimSpace(s)); err != nil {
			return fmt.Errorf("BIN: not base64: %w", err)
		}
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("BIN: %w", protowire.ParseError(n))
		}
		b = b[n:]
		name := orcaFields[num]
		switch {
		case typ == protowire.Fixed64Type && name != "":
			v, n := protowire.ConsumeFixed64(b)
			if n < 0 {
				return fmt.Errorf("BIN %s: %w", name, protowire.ParseError(n))
			}
			if err := r.set(name, math.Float64frombits(v)); err != nil {
				return err
			}
			b = b[n:]
		case typ == protowire.BytesType && name != "" && (num == 4 || num == 5 || num == 8):
			entry, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("BIN %s: %w", name, protowire.ParseError(n))
			}
			if err := r.readBinEntry(name, entry); err != nil {
				return err
			}
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("BIN field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	return nil
}

// readBinEntry reads one entry of a map<string, double> (key 1, value 2).
func (r *orcaReport) readBinEntry(field string, b []byte) error {
	var key string
	var val float64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("BIN %s: %w", field, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			v, n := protowire.ConsumeString(b)
			if n < 0 {
				return fmt.Errorf("BIN %s key: %w", field, protowire.ParseError(n))
			}
			key, b = v, b[n:]
		case num == 2 && typ == protowire.Fixed64Type:
			v, n := protowire.ConsumeFixed64(b)
			if n < 0 {
				return fmt.Errorf("BIN %s value: %w", field, protowire.ParseError(n))
			}
			val, b = math.Float64frombits(v), b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("BIN %s: %w", field, protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	return r.set(field+"."+key, val)
}
