package healthcheck

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// Kind is how an endpoint is probed.
type Kind string

// Probe kinds.
const (
	// KindTCP passes when a TCP connection is established.
	KindTCP Kind = "tcp"
	// KindHTTP passes when a GET of the path answers a status in range.
	KindHTTP Kind = "http"
	// KindHTTPS is KindHTTP over TLS, without certificate verification.
	KindHTTPS Kind = "https"
)

// Limits on the settings, the same for annotations and flags.
const (
	MinInterval  = time.Second
	MaxInterval  = time.Hour
	MinTimeout   = 100 * time.Millisecond
	MaxThreshold = 10 // the most Rise or Fall may be; the least is 1
	maxPathLen   = 1024
)

// Spec is how one endpoint is probed and judged. Path and the status range
// belong to http and https only: they are empty for tcp, so that two Specs
// that probe alike compare equal. Port 0 means the endpoint's own port.
type Spec struct {
	Kind      Kind
	Path      string // http, https: the path GET asks for, starting with /
	Host      string // http, https: Host header and TLS server name; "" for the address
	Port      uint16 // 0: the endpoint's first port
	StatusMin int    // http, https: lowest passing status
	StatusMax int    // http, https: highest passing status
	Interval  time.Duration
	Timeout   time.Duration
	Rise      int // consecutive passes that turn an unhealthy endpoint healthy
	Fall      int // consecutive failures that turn a healthy endpoint unhealthy
	// LoadMetric (http, https) is the ORCA metric an endpoint's load is
	// read from (orca.go); "" for the default, application_utilization
	// above 0, else cpu_utilization.
	LoadMetric string
	// LoadTarget (http, https) is the metric's value that counts as the
	// endpoint's target, 1.0 of its load; 0 for 1.
	LoadTarget float64
}

// Default settings: Route53's fast interval, HAProxy's rise and fall.
const (
	DefaultInterval  = 10 * time.Second
	DefaultTimeout   = 4 * time.Second
	DefaultRise      = 2
	DefaultFall      = 3
	DefaultPath      = "/"
	DefaultStatusMin = 200
	DefaultStatusMax = 399
)

// Defaults returns the agent's default Spec: TCP connect every 10 s with a
// 4 s timeout, rise 2, fall 3.
func Defaults() Spec {
	return Spec{Kind: KindTCP, Interval: DefaultInterval, Timeout: DefaultTimeout, Rise: DefaultRise, Fall: DefaultFall}
}

// ParseAnnotations reads the health annotations of a Service over defaults
// (the agent's settings, normally Defaults with flags applied) and returns
// the Spec its endpoints are probed with. Every problem is reported in one
// error, each naming the annotation and its value, so a user fixes them in
// one go; with an error the returned Spec is the zero Spec.
//
// Choices a user may not guess:
//   - http and https without a path GET /, and pass on 200–399, unless the
//     defaults say otherwise; a path or status annotation on a tcp check is
//     an error rather than silently ignored;
//   - when the interval is set and the timeout is not, the timeout is the
//     default timeout or 40 % of the interval, whichever is shorter (10 s
//     and 4 s keep that ratio), so a short interval alone is valid.
func ParseAnnotations(annotations map[string]string, defaults Spec) (Spec, error) {
	r := annotationReader{annotations: annotations}
	s := defaults
	web := r.kind(&s)
	r.path(&s, web)
	r.host(&s, web)
	r.port(&s)
	r.status(&s, web)
	r.timing(&s, defaults.Timeout)
	r.thresholds(&s)
	r.load(&s, web)
	if len(r.errs) > 0 {
		return Spec{}, errors.Join(r.errs...)
	}
	if err := s.Validate(); err != nil {
		// Only the defaults can be at fault here: every annotation was checked.
		return Spec{}, fmt.Errorf("health-check defaults: %w", err)
	}
	return s, nil
}

// annotationReader reads a Service's health annotations into a Spec, one
// setting at a time, and gathers every problem rather than stopping at the
// first.
type annotationReader struct {
	annotations map[string]string
	errs        []error
}

// bad records a problem with the annotation key.
func (r *annotationReader) bad(key, format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf("annotation %s=%q: %s", key, r.annotations[key], fmt.Sprintf(format, args...)))
}

// kind reads the probe kind and reports whether it is http or https. A tcp
// check drops the path and status range the defaults may carry; an http or
// https one without them takes DefaultPath and 200–399.
func (r *annotationReader) kind(s *Spec) (web bool) {
	if v, ok := r.annotations[kfedv1alpha1.AnnotationHealthCheck]; ok {
		switch k := Kind(strings.ToLower(strings.TrimSpace(v))); k {
		case KindTCP, KindHTTP, KindHTTPS:
			s.Kind = k
		default:
			r.bad(kfedv1alpha1.AnnotationHealthCheck, "must be tcp, http or https")
		}
	}
	web = s.Kind == KindHTTP || s.Kind == KindHTTPS
	if !web {
		s.Path, s.StatusMin, s.StatusMax = "", 0, 0
		s.LoadMetric, s.LoadTarget = "", 0
		return false
	}
	if s.Path == "" {
		s.Path = DefaultPath
	}
	if s.StatusMin == 0 && s.StatusMax == 0 {
		s.StatusMin, s.StatusMax = DefaultStatusMin, DefaultStatusMax
	}
	return true
}

func (r *annotationReader) path(s *Spec, web bool) {
	v, ok := r.annotations[kfedv1alpha1.AnnotationHealthPath]
	if !ok {
		return
	}
	p := strings.TrimSpace(v)
	if !web {
		r.bad(kfedv1alpha1.AnnotationHealthPath, "a path needs %s http or https", kfedv1alpha1.AnnotationHealthCheck)
		return
	}
	if err := checkPath(p); err != nil {
		r.bad(kfedv1alpha1.AnnotationHealthPath, "%v", err)
		return
	}
	s.Path = p
}

func (r *annotationReader) host(s *Spec, web bool) {
	v, ok := r.annotations[kfedv1alpha1.AnnotationHealthHost]
	if !ok {
		return
	}
	h := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(v), "."))
	if !web {
		r.bad(kfedv1alpha1.AnnotationHealthHost, "a host needs %s http or https", kfedv1alpha1.AnnotationHealthCheck)
		return
	}
	if msgs := validation.IsDNS1123Subdomain(h); len(msgs) > 0 {
		r.bad(kfedv1alpha1.AnnotationHealthHost, "not a host name: %s", strings.Join(msgs, "; "))
		return
	}
	s.Host = h
}

func (r *annotationReader) port(s *Spec) {
	v, ok := r.annotations[kfedv1alpha1.AnnotationHealthPort]
	if !ok {
		return
	}
	p, err := strconv.ParseUint(strings.TrimSpace(v), 10, 16)
	if err != nil || p == 0 {
		r.bad(kfedv1alpha1.AnnotationHealthPort, "must be a port number from 1 to 65535")
		return
	}
	s.Port = uint16(p)
}

func (r *annotationReader) status(s *Spec, web bool) {
	v, ok := r.annotations[kfedv1alpha1.AnnotationHealthStatus]
	if !ok {
		return
	}
	lo, hi, err := parseStatus(strings.TrimSpace(v))
	switch {
	case !web:
		r.bad(kfedv1alpha1.AnnotationHealthStatus, "a status range needs %s http or https", kfedv1alpha1.AnnotationHealthCheck)
	case err != nil:
		r.bad(kfedv1alpha1.AnnotationHealthStatus, "%v", err)
	default:
		s.StatusMin, s.StatusMax = lo, hi
	}
}

// timing reads the interval and the timeout. An interval set without a
// timeout takes defaultTimeout or 40 % of the interval, whichever is
// shorter; a timeout is checked against the interval only when the
// interval annotation, if any, was valid, so one mistake is reported once.
func (r *annotationReader) timing(s *Spec, defaultTimeout time.Duration) {
	intervalOK := true
	if v, ok := r.annotations[kfedv1alpha1.AnnotationHealthInterval]; ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		switch {
		case err != nil:
			intervalOK = false
			r.bad(kfedv1alpha1.AnnotationHealthInterval, "not a duration such as 10s or 1m")
		case d < MinInterval || d > MaxInterval:
			intervalOK = false
			r.bad(kfedv1alpha1.AnnotationHealthInterval, "must be from %v to %v", MinInterval, MaxInterval)
		default:
			s.Interval = d
			if _, set := r.annotations[kfedv1alpha1.AnnotationHealthTimeout]; !set {
				s.Timeout = min(defaultTimeout, d*2/5)
			}
		}
	}
	v, ok := r.annotations[kfedv1alpha1.AnnotationHealthTimeout]
	if !ok {
		return
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	switch {
	case err != nil:
		r.bad(kfedv1alpha1.AnnotationHealthTimeout, "not a duration such as 4s or 500ms")
	case d < MinTimeout:
		r.bad(kfedv1alpha1.AnnotationHealthTimeout, "must be at least %v", MinTimeout)
	case intervalOK && d >= s.Interval:
		r.bad(kfedv1alpha1.AnnotationHealthTimeout, "must be shorter than the interval, %v", s.Interval)
	default:
		s.Timeout = d
	}
}

// thresholds reads rise and fall.
func (r *annotationReader) thresholds(s *Spec) {
	for _, a := range []struct {
		key string
		to  *int
	}{{kfedv1alpha1.AnnotationHealthRise, &s.Rise}, {kfedv1alpha1.AnnotationHealthFall, &s.Fall}} {
		v, ok := r.annotations[a.key]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > MaxThreshold {
			r.bad(a.key, "must be a whole number from 1 to %d", MaxThreshold)
			continue
		}
		*a.to = n
	}
}

// maxLoadTarget bounds kfed.io/health-load-target: a rate of requests a
// second can be large, but not unbounded.
const maxLoadTarget = 1e9

// load reads the load metric and its target.
func (r *annotationReader) load(s *Spec, web bool) {
	if v, ok := r.annotations[kfedv1alpha1.AnnotationHealthLoadMetric]; ok {
		m := strings.TrimSpace(v)
		switch err := checkMetric(m); {
		case !web:
			r.bad(kfedv1alpha1.AnnotationHealthLoadMetric, "load is read from http or https answers: needs %s http or https", kfedv1alpha1.AnnotationHealthCheck)
		case err != nil:
			r.bad(kfedv1alpha1.AnnotationHealthLoadMetric, "%v", err)
		default:
			s.LoadMetric = m
		}
	}
	v, ok := r.annotations[kfedv1alpha1.AnnotationHealthLoadTarget]
	if !ok {
		return
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	switch {
	case !web:
		r.bad(kfedv1alpha1.AnnotationHealthLoadTarget, "load is read from http or https answers: needs %s http or https", kfedv1alpha1.AnnotationHealthCheck)
	case err != nil || !(f > 0) || f > maxLoadTarget:
		r.bad(kfedv1alpha1.AnnotationHealthLoadTarget, "must be a number above 0 and at most %g, such as 0.8 or 1000", float64(maxLoadTarget))
	default:
		s.LoadTarget = f
	}
}

// Validate reports every way s is not a Spec the agent can probe with.
func (s Spec) Validate() error { return s.validate(MinInterval, MinTimeout) }

// validate is Validate with the floors on interval and timeout as
// parameters, so tests can run an engine on intervals of milliseconds.
func (s Spec) validate(minInterval, minTimeout time.Duration) error {
	var errs []error
	web := s.Kind == KindHTTP || s.Kind == KindHTTPS
	switch {
	case s.Kind == KindTCP:
		if s.Path != "" || s.StatusMin != 0 || s.StatusMax != 0 {
			errs = append(errs, errors.New("a tcp check has no path or status range"))
		}
		if s.LoadMetric != "" || s.LoadTarget != 0 {
			errs = append(errs, errors.New("a tcp check reads no load"))
		}
	case web:
		if err := checkPath(s.Path); err != nil {
			errs = append(errs, err)
		}
		if s.StatusMin < 100 || s.StatusMax > 599 || s.StatusMin > s.StatusMax {
			errs = append(errs, fmt.Errorf("status range %d-%d: must lie within 100-599, lowest first", s.StatusMin, s.StatusMax))
		}
		if s.LoadMetric != "" {
			if err := checkMetric(s.LoadMetric); err != nil {
				errs = append(errs, err)
			}
		}
		if s.LoadTarget < 0 || s.LoadTarget > maxLoadTarget || math.IsNaN(s.LoadTarget) {
			errs = append(errs, fmt.Errorf("load target %v: must be from 0 (for 1) to %g", s.LoadTarget, float64(maxLoadTarget)))
		}
	default:
		errs = append(errs, fmt.Errorf("kind %q: must be tcp, http or https", s.Kind))
	}
	if s.Interval < minInterval || s.Interval > MaxInterval {
		errs = append(errs, fmt.Errorf("interval %v: must be from %v to %v", s.Interval, minInterval, MaxInterval))
	}
	if s.Timeout < minTimeout || s.Timeout >= s.Interval {
		errs = append(errs, fmt.Errorf("timeout %v: must be at least %v and shorter than the interval", s.Timeout, minTimeout))
	}
	if s.Rise < 1 || s.Rise > MaxThreshold {
		errs = append(errs, fmt.Errorf("rise %d: must be from 1 to %d", s.Rise, MaxThreshold))
	}
	if s.Fall < 1 || s.Fall > MaxThreshold {
		errs = append(errs, fmt.Errorf("fall %d: must be from 1 to %d", s.Fall, MaxThreshold))
	}
	return errors.Join(errs...)
}

// parseStatus reads "200-399" or "200".
func parseStatus(v string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(v, "-")
	lo, err1 := strconv.Atoi(a)
	hi, err2 := lo, error(nil)
	if isRange {
		hi, err2 = strconv.Atoi(b)
	}
	switch {
	case err1 != nil || err2 != nil:
		return 0, 0, errors.New("want a status such as 200 or a range such as 200-399")
	case lo < 100 || hi > 599 || lo > hi:
		return 0, 0, errors.New("statuses must lie within 100-599, lowest first")
	}
	return lo, hi, nil
}

// checkPath accepts what can follow GET on a request line: an absolute path,
// optionally with a query, printable ASCII without spaces (percent-encode
// the rest).
func checkPath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("path %q: must start with /", p)
	}
	if len(p) > maxPathLen {
		return fmt.Errorf("path of %d bytes: at most %d", len(p), maxPathLen)
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f || c == '#' {
			return fmt.Errorf("path %q: byte %q at %d: use printable ASCII without spaces or #, percent-encoded", p, c, i)
		}
	}
	if _, err := url.ParseRequestURI(p); err != nil {
		return fmt.Errorf("path %q: %w", p, err)
	}
	return nil
}
