package zone

import "net/netip"

// Import is what the zone reads of a ServiceImport.
type Import struct {
	Namespace, Name string
	Headless        bool
	// IPs are the clusterset IPs this member's import holds (spec.ips, one
	// per IP family); a headless import has none.
	IPs   []netip.Addr
	Ports []Port
}

// Port is a port of an import or an EndpointSlice.
type Port struct {
	Name     string // "" for an unnamed port, which has no SRV name of its own
	Protocol string // lower case: "tcp", "udp", "sctp"
	Port     uint16
}

// Slice is what the zone reads of an MCS EndpointSlice: its service, the
// cluster it came from, its ready endpoints and their ports.
type Slice struct {
	Namespace, Service, Cluster string
	Endpoints                   []Endpoint
	Ports                       []Port
}

// Endpoint is a ready endpoint of a Slice.
type Endpoint struct {
	Hostname string // "" when the endpoint has none
	Addrs    []netip.Addr
}
