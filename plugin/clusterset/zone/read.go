package zone

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ImportFrom reads si. What cannot be served (an address that is not an
// IP, a port without a number, an unknown type) is left out and named in the
// error; the rest is served.
func ImportFrom(si *ServiceImport) (*Import, error) {
	imp := &Import{Namespace: si.Namespace, Name: si.Name}
	var errs []error
	switch si.Spec.Type {
	case "Headless":
		imp.Headless = true
	case "ClusterSetIP":
	default:
		// The CRD requires one of the two; an older or hand-made object
		// without it reads as the common case.
		errs = append(errs, fmt.Errorf("type %q is neither ClusterSetIP nor Headless: read as ClusterSetIP", si.Spec.Type))
	}
	if !imp.Headless {
		for _, s := range si.Spec.IPs {
			a, err := netip.ParseAddr(s)
			if err != nil || a.Zone() != "" {
				errs = append(errs, fmt.Errorf("ips: %q is not an IP address", s))
				continue
			}
			imp.IPs = append(imp.IPs, a.Unmap())
		}
	}
	for _, p := range si.Spec.Ports {
		port, err := readPort(p.Name, p.Protocol, &p.Port)
		if err != nil {
			errs = append(errs, err)
		}
		if port.Port != 0 {
			imp.Ports = append(imp.Ports, port)
		}
	}
	return imp, errors.Join(errs...)
}

// SliceFrom reads eps, an EndpointSlice labelled with the MCS service name.
// A slice without a valid source cluster, or of FQDN addresses, is not
// served at all (nil, with the reason): its endpoints would have no names.
// Endpoints that are not ready (conditions.ready false; unset reads as
// ready, as the EndpointSlice API says) are left out.
func SliceFrom(eps *EndpointSlice) (*Slice, error) {
	s := &Slice{Namespace: eps.Namespace, Service: eps.Labels[LabelServiceName],
		Cluster: strings.ToLower(eps.Labels[LabelSourceCluster])}
	if errs := validation.IsDNS1123Label(s.Service); len(errs) > 0 {
		return nil, fmt.Errorf("label %s %q: %s", LabelServiceName, s.Service, strings.Join(errs, "; "))
	}
	if s.Cluster == "" {
		return nil, fmt.Errorf("no label %s: its endpoints would have no names", LabelSourceCluster)
	}
	if errs := validation.IsDNS1123Subdomain(s.Cluster); len(errs) > 0 {
		return nil, fmt.Errorf("label %s %q: %s", LabelSourceCluster, s.Cluster, strings.Join(errs, "; "))
	}
	if eps.AddressType != "IPv4" && eps.AddressType != "IPv6" {
		return nil, fmt.Errorf("address type %q: only IPv4 and IPv6 are served", eps.AddressType)
	}
	var errs []error
	for _, p := range eps.Ports {
		if p.Port == nil {
			continue // "all ports": no number to give an SRV record
		}
		name, proto := "", "TCP"
		if p.Name != nil {
			name = *p.Name
		}
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		port, err := readPort(name, proto, p.Port)
		if err != nil {
			errs = append(errs, err)
		}
		if port.Port != 0 {
			s.Ports = append(s.Ports, port)
		}
	}
	for _, ep := range eps.Endpoints {
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
			continue
		}
		e := Endpoint{}
		if ep.Hostname != nil && *ep.Hostname != "" {
			if bad := validation.IsDNS1123Label(*ep.Hostname); len(bad) > 0 {
				errs = append(errs, fmt.Errorf("hostname %q: %s: named by its address instead", *ep.Hostname, strings.Join(bad, "; ")))
			} else {
				e.Hostname = *ep.Hostname
			}
		}
		for _, s := range ep.Addresses {
			a, err := netip.ParseAddr(s)
			if err != nil || a.Zone() != "" || a.Unmap().Is4() != (eps.AddressType == "IPv4") {
				errs = append(errs, fmt.Errorf("address %q is not an %s address", s, eps.AddressType))
				continue
			}
			e.Addrs = append(e.Addrs, a.Unmap())
		}
		if len(e.Addrs) > 0 {
			s.Endpoints = append(s.Endpoints, e)
		}
	}
	return s, errors.Join(errs...)
}

// readPort reads a port of a ServiceImport or EndpointSlice: one without a
// number is the zero Port, one whose name no SRV label can carry is served
// as unnamed; both with an error.
func readPort(name, protocol string, number *int32) (Port, error) {
	if number == nil || *number < 1 || *number > 65535 {
		return Port{}, fmt.Errorf("port %q has no number from 1 to 65535", name)
	}
	if protocol == "" {
		protocol = "TCP" // the API's default
	}
	p := Port{Name: strings.ToLower(name), Protocol: strings.ToLower(protocol), Port: uint16(*number)}
	if p.Name != "" && len(validation.IsDNS1123Label(p.Name)) > 0 {
		// Not a name an SRV label can carry: served under the
		// service name only, as an unnamed port.
		p.Name = ""
		return p, fmt.Errorf("port name %q is not a DNS label: no SRV name of its own", name)
	}
	if len(validation.IsDNS1123Label(p.Protocol)) > 0 {
		return Port{}, fmt.Errorf("port %q: protocol %q is not a DNS label", name, protocol)
	}
	return p, nil
}
