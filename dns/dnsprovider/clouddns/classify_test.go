package clouddns

import (
	"errors"
	"net"
	"testing"

	"google.golang.org/api/googleapi"

	"github.com/kfed-io/kfed/dns/dnsprovider"
)

// Cloud DNS's answers to changes.create, as its API documents them, and
// what each means to a sync: a record set refused (skip its name, publish
// the rest), the zone changed since it was listed, or an outage (stop, list
// again).
func TestClassifyTellsARefusedRecordSetFromAnOutage(t *testing.T) {
	const rejected, precondition, outage = "rejected", "precondition", "outage"
	api := func(code int, reason, msg string) error {
		return &googleapi.Error{Code: code, Message: msg, Errors: []googleapi.ErrorItem{{Reason: reason, Message: msg}}}
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"an invalid name", api(400, "invalid", "Invalid value for 'entity.change.additions[0].name': 'x….kfed.test.'"), rejected},
		{"an invalid rrdata", api(400, "invalid", "Invalid value for 'entity.change.additions[0].rrdata[0]': '1.2.3'"), rejected},
		{"a CNAME beside other data", api(400, "cnameResourceRecordSetConflict", "The resource 'entity.change.additions[0]' named 'a.kfed.test. (CNAME)' cannot be created because it conflicts with another"), rejected},
		{"a request too large", api(413, "", "Request Entity Too Large"), rejected},
		{"a deletion that no longer matches", api(412, "conditionNotMet", "Precondition not met for 'entity.change.deletions[0]'"), precondition},
		{"a deletion of nothing", api(404, "notFound", "The 'entity.change.deletions[0]' resource named 'a.kfed.test. (A)' does not exist."), precondition},
		{"an addition over a record set", api(409, "alreadyExists", "The resource 'entity.change.additions[0]' named 'a.kfed.test. (A)' already exists"), precondition},
		{"the managed zone is gone", api(404, "notFound", "The 'parameters.managedZone' resource named 'kfed-test' does not exist."), outage},
		{"unauthenticated", api(401, "authError", "Request had invalid authentication credentials."), outage},
		{"forbidden", api(403, "forbidden", "Forbidden"), outage},
		{"a quota past the retries", api(403, "quotaExceeded", "Quota exceeded for 'rrsetAdditionsPerChange'"), outage},
		{"throttled past the retries", api(429, "rateLimitExceeded", "Rate Limit Exceeded"), outage},
		{"a request timeout", api(408, "", "Request Timeout"), outage},
		{"a server error", api(503, "backendError", "Backend Error"), outage},
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
