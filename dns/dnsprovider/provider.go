package dnsprovider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// ErrPrecondition is wrapped by Apply errors when the zone no longer holds
// what the change set was planned against (someone else changed it since it
// was listed). The caller should list the zone again and re-plan; nothing of
// the failed request was applied.
var ErrPrecondition = errors.New("zone changed since it was listed")

// ErrTooLarge is wrapped when one group of changes (the changes to one name)
// does not fit in a single request of the provider.
var ErrTooLarge = errors.New("changes to one name exceed the provider's request limits")

// Provider is a DNS service kfed publishes to. It is deliberately narrow:
// zones, their record sets, and change sets applied to a zone. Everything
// else (diffing, ownership) is provider-neutral and lives in this package.
type Provider interface {
	// Name is the provider's flag value: route53, clouddns or rfc2136.
	Name() string
	// Zones lists the zones the provider is configured to manage.
	Zones(ctx context.Context) ([]Zone, error)
	// Adjust rewrites normalised desired record sets into what the provider
	// can hold, before they are diffed against its listing: a provider without
	// weighted routing merges set identifiers, one with alias records turns a
	// load-balancer hostname into an alias. The result is normalised.
	Adjust(desired []RecordSet) []RecordSet
	// Stats returns the provider's counters since it was created.
	Stats() Stats
}

// Zone is one zone (hosted zone, managed zone) of a provider.
type Zone interface {
	// Name is the zone's apex, lower case, without a trailing dot.
	Name() string
	// ID is the provider's identifier of the zone (the name where the
	// provider has no other).
	ID() string
	// Records lists the zone's record sets of the managed types, normalised.
	Records(ctx context.Context) ([]RecordSet, error)
	// NewChangeset starts an empty change set for the zone.
	NewChangeset() Changeset
}

// Changeset collects changes to one zone and applies them with as few
// requests as the provider's limits allow. Changes to one name (its records
// and its ownership mark) are applied atomically where the provider can: in
// one request, with preconditions on what was listed, so that a concurrent
// change makes the request fail (wrapping ErrPrecondition) instead of being
// overwritten.
type Changeset interface {
	Add(changes ...Change)
	// Empty reports whether the change set holds no change of any kind.
	Empty() bool
	// Apply sends the changes. A group the provider refuses for bad input
	// (ErrRejected) is skipped and the others applied: Apply then returns a
	// *RefusedError naming the refused. Any other error stops it; groups
	// already sent stay applied, and the error says which.
	Apply(ctx context.Context) error
}

// Stats counts a provider's work, for the sync controller's metrics and the
// DNSEndpoint status.
type Stats struct {
	// Requests is every API request or DNS message sent, retries included.
	Requests int64
	// Changes is the record-set changes applied successfully.
	Changes int64
	// ThrottledRetries is the requests retried because the provider said to
	// slow down (Route53 Throttling, PriorRequestNotComplete; HTTP 429).
	ThrottledRetries int64
}

// Counters are the atomic counters behind Stats, for providers to embed.
type Counters struct {
	requests, changes, throttled atomic.Int64
}

// Request counts one request sent.
func (c *Counters) Request() { c.requests.Add(1) }

// Applied counts n changes applied.
func (c *Counters) Applied(n int) { c.changes.Add(int64(n)) }

// Throttled counts one retry after throttling.
func (c *Counters) Throttled() { c.throttled.Add(1) }

// Stats returns a snapshot of the counters.
func (c *Counters) Stats() Stats {
	return Stats{Requests: c.requests.Load(), Changes: c.changes.Load(), ThrottledRetries: c.throttled.Load()}
}

// ChangeList is the part of a Changeset every provider shares: the list of
// changes. Providers embed it and add Apply.
type ChangeList struct {
	changes []Change
}

// Add appends changes.
func (l *ChangeList) Add(changes ...Change) { l.changes = append(l.changes, changes...) }

// Empty reports whether no create, update or delete was added. (Federation
// v1's IsEmpty forgot upserts; this counts every change.)
func (l *ChangeList) Empty() bool { return len(l.changes) == 0 }

// Changes returns the changes added, in order.
func (l *ChangeList) Changes() []Change { return l.changes }

// Conflict is a desired name kfed left alone because someone else holds it.
type Conflict struct {
	// Name is the desired name.
	Name string
	// Resource is the object (namespace/name) that wanted it.
	Resource string
	// Reason says who holds it and how.
	Reason string
}

func (c Conflict) String() string {
	s := "! " + c.Name
	if c.Resource != "" {
		s += " (" + c.Resource + ")"
	}
	return s + ": " + c.Reason
}

// Plan is the difference between a zone and the desired state: the changes
// that make the zone match, grouped by name, and the names left alone. It is
// a plain value: print it for --dry-run, apply it with Apply.
type Plan struct {
	// Zone is the zone's apex.
	Zone string
	// Changes are sorted by group, and within a group deletes, updates,
	// creates.
	Changes []Change
	// Conflicts are sorted by name.
	Conflicts []Conflict
}

// Empty reports whether the plan changes nothing. Conflicts do not count:
// they are reported, not applied.
func (p Plan) Empty() bool { return len(p.Changes) == 0 }

// Count returns how many creates, updates and deletes the plan holds.
func (p Plan) Count() (creates, updates, deletes int) {
	for _, c := range p.Changes {
		switch c.Action {
		case Create:
			creates++
		case Update:
			updates++
		case Delete:
			deletes++
		}
	}
	return
}

// String prints the plan: a summary line, then one line per change ("+"
// create, "~" update, "-" delete) and per conflict ("!").
func (p Plan) String() string {
	var b strings.Builder
	c, u, d := p.Count()
	fmt.Fprintf(&b, "zone %s: %d to create, %d to update, %d to delete, %d conflicts\n", p.Zone, c, u, d, len(p.Conflicts))
	for _, ch := range p.Changes {
		b.WriteString(ch.String())
		b.WriteByte('\n')
	}
	for _, cf := range p.Conflicts {
		b.WriteString(cf.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Groups returns the plan's changes split by group, in order.
func (p Plan) Groups() [][]Change { return GroupChanges(p.Changes) }

// Apply sends a plan's changes to zone z in one change set. An empty plan
// sends nothing. Refused(err) names the groups the provider refused for bad
// input when it applied the rest.
func Apply(ctx context.Context, z Zone, p Plan) error {
	if p.Empty() {
		return nil
	}
	cs := z.NewChangeset()
	cs.Add(p.Changes...)
	if err := cs.Apply(ctx); err != nil {
		return fmt.Errorf("applying plan to zone %s: %w", z.Name(), err)
	}
	return nil
}
