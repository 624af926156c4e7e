package dnsendpoint

// SRV targets are written in the record model's form (dnsprovider.SRV):
// "priority weight port target." with the target fully qualified, as
// ExternalDNS requires.

// SRVWeight is a cluster weight as an SRV weight, which has 16 bits.
func SRVWeight(w int) uint16 { return uint16(min(max(w, 0), 1<<16-1)) }
