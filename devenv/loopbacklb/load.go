package loopbacklb

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Annotations on a Service that have its HTTP answers report load in
// LoadHeader, and make load to report.
const (
	// UtilizationAnnotation fixes the utilization a Service's HTTP answers
	// report: a non-negative decimal ("0.95"). It wins over
	// CapacityAnnotation.
	UtilizationAnnotation = "loopbacklb.kfed.io/utilization"
	// CapacityAnnotation, a positive integer N, has a Service's HTTP
	// answers report as utilization its HTTP requests in flight, averaged
	// over the last second, divided by N.
	CapacityAnnotation = "loopbacklb.kfed.io/capacity"
	// ServiceTimeAnnotation, a Go duration from 0 to 10s, holds each HTTP
	// request of a Service but /healthz that long before it is answered, so
	// that clients make load: with CapacityAnnotation the requests in
	// flight then follow their rate (Little's law).
	ServiceTimeAnnotation = "loopbacklb.kfed.io/service-time"
)

// LoadHeader is the ORCA header, which Envoy and gRPC read, in which HTTP
// answers report load, in its TEXT form:
// "TEXT application_utilization=0.95".
const LoadHeader = "endpoint-load-metrics"

// maxServiceTime bounds ServiceTimeAnnotation: longer, a listener's close
// and a client's timeout would wait on it.
const maxServiceTime = 10 * time.Second

// loadSpec is what a Service's load annotations ask for.
type loadSpec struct {
	// fixed is LoadHeader's value when UtilizationAnnotation sets it.
	fixed string
	// capacity, when positive, divides the requests in flight.
	capacity    int
	serviceTime time.Duration
}

// parseLoad reads a Service's load annotations. A malformed one is left
// out, as if absent, and named in the error; the others still apply.
func parseLoad(annotations map[string]string) (loadSpec, error) {
	var spec loadSpec
	var errs []error
	if v, ok := annotations[UtilizationAnnotation]; ok {
		u, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("annotation %s=%q: %w", UtilizationAnnotation, v, err))
		case !(u >= 0) || math.IsInf(u, 0):
			errs = append(errs, fmt.Errorf("annotation %s=%q: not a non-negative number", UtilizationAnnotation, v))
		default:
			spec.fixed = loadText(math.Abs(u)) // Abs: "-0" reads 0
		}
	}
	if v, ok := annotations[CapacityAnnotation]; ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("annotation %s=%q: %w", CapacityAnnotation, v, err))
		case n <= 0:
			errs = append(errs, fmt.Errorf("annotation %s=%q: not positive", CapacityAnnotation, v))
		default:
			spec.capacity = n
		}
	}
	if v, ok := annotations[ServiceTimeAnnotation]; ok {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("annotation %s=%q: %w", ServiceTimeAnnotation, v, err))
		case d < 0 || d > maxServiceTime:
			errs = append(errs, fmt.Errorf("annotation %s=%q: not between 0 and %v", ServiceTimeAnnotation, v, maxServiceTime))
		default:
			spec.serviceTime = d
		}
	}
	return spec, errors.Join(errs...)
}

// loadText is LoadHeader's value for utilization u.
func loadText(u float64) string {
	return "TEXT application_utilization=" + strconv.FormatFloat(u, 'f', -1, 64)
}

// serviceLoad is shared by a Service's listeners, so that the annotations
// reach every port at once and the count covers them all.
type serviceLoad struct {
	spec     atomic.Pointer[loadSpec] // nil: no annotation read yet
	inFlight inFlight
}

// serviceTime is how long to hold a request that is counted.
func (s *serviceLoad) serviceTime() time.Duration {
	if spec := s.spec.Load(); spec != nil {
		return spec.serviceTime
	}
	return 0
}

// report is LoadHeader's value for an answer at now ("" for none), not
// counting the answered request, in flight since own (zero if not counted).
func (s *serviceLoad) report(now, own time.Time) string {
	spec := s.spec.Load()
	switch {
	case spec == nil:
		return ""
	case spec.fixed != "":
		return spec.fixed
	case spec.capacity > 0:
		u := s.inFlight.average(now, own) / float64(spec.capacity)
		return loadText(math.Round(u*1000) / 1000)
	}
	return ""
}

// The window over which the requests in flight are averaged, so that a
// checker probing once in a few seconds reads the load clients made, not
// a sample of it. It is kept in slices, of which the oldest is taken in
// part as if its load were spread evenly: the average may be off by the
// requests that changed in that slice times loadSlice/loadWindow (2%).
const (
	loadWindow = time.Second
	loadSlices = 50
	loadSlice  = loadWindow / loadSlices
)

// inFlight counts requests in flight and keeps the integral of the count
// over each slice of the last window. The zero value is ready, at no
// request.
type inFlight struct {
	mu    sync.Mutex
	n     int
	since time.Time // up to when n is added into area[cur]
	start time.Time // the start of area[cur]'s slice
	cur   int
	// area is a ring of the integrals of n (requests × time) over the
	// current slice and the loadSlices before it, of which the oldest
	// overlaps the window in part. It is made at the first request: most
	// Services of a large test bed only see /healthz, which is not counted.
	area *[loadSlices + 1]time.Duration
}

// add changes the count by d at now.
func (f *inFlight) add(now time.Time, d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance(now)
	f.n += d
}

// average is the mean count over the window ending at now, less a request
// in flight since own (none if zero).
func (f *inFlight) average(now, own time.Time) float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.area == nil {
		return 0
	}
	now = f.advance(now)
	into := now.Sub(f.start)
	var sum time.Duration
	for i := range loadSlices {
		sum += f.area[(f.cur-i+len(f.area))%len(f.area)]
	}
	// The oldest slice is cur+1 in the ring; the window takes the part of
	// it that the current slice has not yet replaced, as if spread evenly.
	oldest := f.area[(f.cur+1)%len(f.area)]
	sum += time.Duration(float64(oldest) * float64(loadSlice-into) / float64(loadSlice))
	if !own.IsZero() {
		sum -= min(now.Sub(own), loadWindow)
	}
	return max(float64(sum)/float64(loadWindow), 0)
}

// advance adds n up to now into area, moving on to new slices as their
// time comes, and returns now, or the last time accounted if now is
// earlier (callers read the clock before they take the lock).
func (f *inFlight) advance(now time.Time) time.Time {
	if f.area == nil {
		f.area = new([loadSlices + 1]time.Duration)
		f.start, f.since = now, now
	}
	if now.Before(f.since) {
		now = f.since
	}
	// After a whole ring of slices without a change, each held n
	// throughout.
	if k := now.Sub(f.start) / loadSlice; k > loadSlices {
		for i := range f.area {
			f.area[i] = time.Duration(f.n) * loadSlice
		}
		f.start = f.start.Add(k * loadSlice)
		f.since = f.start
		f.area[f.cur] = 0
	}
	for {
		end := f.start.Add(loadSlice)
		if now.Before(end) {
			f.area[f.cur] += time.Duration(f.n) * now.Sub(f.since)
			f.since = now
			return now
		}
		f.area[f.cur] += time.Duration(f.n) * end.Sub(f.since)
		f.cur = (f.cur + 1) % len(f.area)
		f.area[f.cur] = 0
		f.start, f.since = end, end
	}
}
