package dnsprovider

import (
	"fmt"
	"strconv"
	"strings"
)

// SRV is the value of one SRV record, as record sets and DNSEndpoints both
// write it: "priority weight port target".
type SRV struct {
	Priority, Weight, Port uint16
	// Target is a host name, lower case, without a trailing dot.
	Target string
}

// String formats v as an SRV target with the host fully qualified, as
// ExternalDNS requires of a DNSEndpoint: "priority weight port target.".
func (v SRV) String() string {
	return fmt.Sprintf("%d %d %d %s.", v.Priority, v.Weight, v.Port, v.Target)
}

// ParseSRV reads "priority weight port target", the target with or without
// its trailing dot and in any case.
func ParseSRV(s string) (SRV, error) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return SRV{}, fmt.Errorf("SRV target %q is not \"priority weight port target\"", s)
	}
	var n [3]uint16
	for i := range n {
		v, err := strconv.ParseUint(f[i], 10, 16)
		if err != nil {
			return SRV{}, fmt.Errorf("SRV target %q: %q is not a 16-bit number", s, f[i])
		}
		n[i] = uint16(v)
	}
	target := strings.ToLower(strings.TrimSuffix(f[3], "."))
	if target == "" {
		return SRV{}, fmt.Errorf("SRV target %q names no host", s)
	}
	// An empty label ("a..", "..") is no host name, and would not survive
	// being printed with String and read again.
	if strings.HasPrefix(target, ".") || strings.HasSuffix(target, ".") || strings.Contains(target, "..") {
		return SRV{}, fmt.Errorf("SRV target %q: %q has an empty label", s, f[3])
	}
	return SRV{Priority: n[0], Weight: n[1], Port: n[2], Target: target}, nil
}
