package dnsendpoint

import (
	"fmt"
	"strconv"
	"strings"
)

// SRVTarget is the value of one SRV record.
type SRVTarget struct {
	Priority, Weight, Port uint16
	// Target is a fully qualified name, lower case, without a trailing dot.
	Target string
}

// String formats t as an SRV endpoint's target: "priority weight port
// target." with the target fully qualified, as ExternalDNS requires.
func (t SRVTarget) String() string {
	return fmt.Sprintf("%d %d %d %s.", t.Priority, t.Weight, t.Port, strings.TrimSuffix(t.Target, "."))
}

// ParseSRVTarget reads an SRV endpoint's target, "priority weight port
// target", with or without the target's trailing dot.
func ParseSRVTarget(s string) (SRVTarget, error) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return SRVTarget{}, fmt.Errorf("SRV target %q is not \"priority weight port target\"", s)
	}
	var n [3]uint16
	for i := range n {
		v, err := strconv.ParseUint(f[i], 10, 16)
		if err != nil {
			return SRVTarget{}, fmt.Errorf("SRV target %q: %q is not a 16-bit number", s, f[i])
		}
		n[i] = uint16(v)
	}
	target := strings.ToLower(strings.TrimSuffix(f[3], "."))
	if target == "" {
		return SRVTarget{}, fmt.Errorf("SRV target %q names no host", s)
	}
	// An empty label ("a..", "..") is no host name, and would not survive
	// being printed with String and read again.
	if strings.HasPrefix(target, ".") || strings.HasSuffix(target, ".") || strings.Contains(target, "..") {
		return SRVTarget{}, fmt.Errorf("SRV target %q: %q has an empty label", s, f[3])
	}
	return SRVTarget{Priority: n[0], Weight: n[1], Port: n[2], Target: target}, nil
}

// SRVWeight is a cluster weight as an SRV weight, which has 16 bits.
func SRVWeight(w int) uint16 { return uint16(min(max(w, 0), 1<<16-1)) }
