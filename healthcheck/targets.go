package healthcheck

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// Target is one endpoint to probe.
type Target struct {
	// Key identifies the endpoint, e.g. "namespace/service/cluster".
	Key string
	// Cluster is the cluster the endpoint is in; the degraded self-check
	// counts failures per cluster.
	Cluster string
	// Addrs are the endpoint's addresses. The endpoint is up in this
	// checker's view while any of them passes: a round probes them all
	// together and passes when one does.
	Addrs []netip.AddrPort
	// Spec is how the endpoint is probed and judged.
	Spec Spec
}

// target is a Target with its schedule and verdict state.
type target struct {
	Target
	next     time.Time // when the next round is due
	index    int       // position in the queue
	gen      uint64    // bumped when Addrs or Spec change; older rounds' results are dropped
	inFlight bool

	healthy bool   // the local verdict
	streak  int    // consecutive rounds disagreeing with the verdict
	probed  bool   // a round has completed, so last is meaningful
	lastOK  bool   // the latest round's outcome
	last    Result // the latest round's result
	rtt     rttWindow
	load    loadAverage
}

// screen sorts targets into those to set, by key, and the keys of refused
// ones, which keep what the engine has for them; the error names each
// refusal. A Spec's interval and timeout must be at least minInterval and
// minTimeout.
func screen(targets []Target, minInterval, minTimeout time.Duration) (want map[string]Target, keep map[string]bool, err error) {
	var errs []error
	want = make(map[string]Target, len(targets))
	keep = map[string]bool{}
	for i, t := range targets {
		var err error
		switch _, dup := want[t.Key]; {
		case t.Key == "":
			err = errors.New("empty key")
		case dup || keep[t.Key]:
			err = errors.New("key repeated; the first one counts")
		case len(t.Addrs) == 0:
			err = errors.New("no addresses")
		default:
			if verr := t.Spec.validate(minInterval, minTimeout); verr != nil {
				err = verr
			} else if j := slices.IndexFunc(t.Addrs, func(a netip.AddrPort) bool { return !a.IsValid() || a.Port() == 0 && t.Spec.Port == 0 }); j >= 0 {
				err = fmt.Errorf("address %d (%v): not an address with a port", j, t.Addrs[j])
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("target %d %q: %w", i, t.Key, err))
			if t.Key != "" {
				if _, dup := want[t.Key]; !dup {
					keep[t.Key] = true
				}
			}
			continue
		}
		want[t.Key] = t
	}
	return want, keep, errors.Join(errs...)
}
