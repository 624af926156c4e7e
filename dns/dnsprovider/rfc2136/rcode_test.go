package rfc2136

import (
	"errors"
	"testing"

	"github.com/miekg/dns"

	"github.com/kfed-io/kfed/dns/dnsprovider"
)

// The response codes of RFC 2136 2.2 and what each means to a sync: the
// update refused (skip the names to blame, publish the rest), the zone
// changed since it was listed, or an outage (stop, list again).
func TestRcodeErrorTellsARefusedUpdateFromAnOutage(t *testing.T) {
	const ok, rejected, precondition, outage = "ok", "rejected", "precondition", "outage"
	for _, tc := range []struct {
		rcode int
		want  string
	}{
		{dns.RcodeSuccess, ok},
		{dns.RcodeFormatError, rejected},
		{dns.RcodeNotZone, rejected},
		{dns.RcodeRefused, rejected},
		{dns.RcodeYXDomain, precondition},
		{dns.RcodeYXRrset, precondition},
		{dns.RcodeNXRrset, precondition},
		{dns.RcodeNameError, precondition},
		{dns.RcodeServerFailure, outage},
		{dns.RcodeNotImplemented, outage},
		{dns.RcodeNotAuth, outage},
		{dns.RcodeBadSig, outage},
	} {
		t.Run(dns.RcodeToString[tc.rcode], func(t *testing.T) {
			err := rcodeError(tc.rcode)
			got := outage
			switch {
			case err == nil:
				got = ok
			case errors.Is(err, dnsprovider.ErrRejected):
				got = rejected
			case errors.Is(err, dnsprovider.ErrPrecondition):
				got = precondition
			}
			if got != tc.want {
				t.Errorf("rcodeError(%s) = %v: %s, want %s", dns.RcodeToString[tc.rcode], err, got, tc.want)
			}
		})
	}
}
