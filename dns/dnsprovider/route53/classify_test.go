package route53

import (
	"errors"
	"net"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"

	"github.com/kfed-io/kfed/dns/dnsprovider"
)

// Route53's answers to ChangeResourceRecordSets, as its API reference and
// users' reports give them, and what each means to a sync: a record set
// refused (skip its name, publish the rest), the zone changed since it was
// listed, or an outage (stop, list again).
func TestClassifyTellsARefusedRecordSetFromAnOutage(t *testing.T) {
	const rejected, precondition, outage = "rejected", "precondition", "outage"
	api := func(code string) error { return &smithy.GenericAPIError{Code: code, Message: code + " message"} }
	batch := func(msgs ...string) error { return &types.InvalidChangeBatch{Messages: msgs} }
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"a label over 63 octets", batch("FATAL problem: DomainLabelTooLong (Domain label is too long) encountered with 'xxx'"), rejected},
		{"a name outside the zone", batch("RRSet with DNS name a.other. is not permitted in zone kfed.test."), rejected},
		{"a malformed address", batch("ARRDATAIllegalIPv4Address (Value is not a valid IPv4 address) encountered with '1.2.3'"), rejected},
		{"a CNAME beside other data", batch("RRSet of type CNAME with DNS name a.kfed.test. is not permitted as it conflicts with other records with the same DNS name in zone kfed.test."), rejected},
		{"InvalidInput", api("InvalidInput"), rejected},
		{"InvalidDomainName", api("InvalidDomainName"), rejected},
		{"a record set created meanwhile", batch("Tried to create resource record set [name='a.kfed.test.', type='A'] but it already exists"), precondition},
		{"a record set deleted meanwhile", batch("Tried to delete resource record set [name='a.kfed.test.', type='A'] but it was not found"), precondition},
		{"a record set changed meanwhile", batch("Tried to delete resource record set [name='a.kfed.test.', type='A'] but the values provided do not match the current values"), precondition},
		{"throttled past the retries", api("Throttling"), outage},
		{"a change still in progress past the retries", api("PriorRequestNotComplete"), outage},
		{"the zone is gone", &types.NoSuchHostedZone{Message: new("No hosted zone found with ID: Z1")}, outage},
		{"access denied", api("AccessDenied"), outage},
		{"an unknown key", api("InvalidClientTokenId"), outage},
		{"an expired token", api("ExpiredToken"), outage},
		{"a server error", api("InternalFailure"), outage},
		{"the network", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, outage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := classify(tc.err)
			got := outage
			switch {
			case errors.Is(err, dnsprovider.ErrRejected):
				got = rejected
			case errors.Is(err, dnsprovider.ErrPrecondition):
				got = precondition
			}
			if got != tc.want {
				t.Errorf("classify(%v) = %v: %s, want %s", tc.err, err, got, tc.want)
			}
		})
	}
}
