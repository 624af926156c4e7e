package kfed

import (
	"fmt"
	"strconv"
	"sync/atomic"
)

// zoneSerial is the SOA serial of the plugin's zones, derived from the
// DNSEndpoints rather than from a clock, so that every replica over the same
// control plane reports the same serial for the same data (ADR 0004): the
// highest resourceVersion among the DNSEndpoints the plugin has seen, as they
// are and as they were deleted, modulo 2^32.
//
// An object's resourceVersion only grows (each write gets the store's next
// revision), so a create or an update raises the serial at once, in every
// replica alike. Each object's own version counts, never a list's, which is
// the store's revision at the time of the list and differs between replicas.
// A deletion raises it in the replicas that see the deletion event; one that
// starts afterwards sees only what is left, so the writer of DNSEndpoints
// follows each deletion with a write to the federation's serial marker (see
// README, "Serials"), whose newer version every replica then agrees on.
//
// Serial arithmetic (RFC 1982) makes the wrap at 2^32 harmless as long as a
// secondary never misses 2^31 writes to the control plane's store.
type zoneSerial struct {
	highest atomic.Uint64
}

// observe raises the serial to resourceVersion rv if that is higher.
func (s *zoneSerial) observe(rv string) error {
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return fmt.Errorf("resourceVersion %q is not a number: the SOA serial does not follow it", rv)
	}
	for {
		old := s.highest.Load()
		if v <= old || s.highest.CompareAndSwap(old, v) {
			return nil
		}
	}
}

// soa is the serial for the zones' SOA.
func (s *zoneSerial) soa() uint32 { return uint32(s.highest.Load()) }
