// Package clouddns publishes kfed's records to Google Cloud DNS through
// google.golang.org/api/dns/v1, with as few requests as Cloud DNS's limits
// allow: all changes to a managed zone go in one changes.create when they fit
// (1,000 additions, 1,000 deletions and 100,000 bytes of record data per
// change), and in the fewest that fit otherwise, never splitting the changes
// to one name. 429 and 5xx answers are retried with exponential backoff and
// full jitter. A change Cloud DNS refuses for what it asks (see classify) is
// split until the names to blame are found, and the rest is applied.
//
// Cloud DNS has no update: a change deletes record sets and adds others,
// atomically, and a deletion must match the record set exactly. kfed deletes
// what it listed, so a record set changed by someone else since the listing
// makes the change fail (412 conditionNotMet, 404 notFound, or 409
// alreadyExists for an addition) and Apply wraps dnsprovider.ErrPrecondition
// instead of overwriting it.
//
// Cloud DNS holds one record set per name and type; weighted routing is a
// routing policy inside it (routingPolicy.wrr.items, a weight and rrdatas per
// item) whose items carry no name. kfed's record sets with set identifiers
// (one per cluster) are therefore published as one record set with a
// weighted round robin policy, one item per set identifier in identifier
// order, and the identifiers are kept beside it in a TXT record set of the
// provider's own at _kfed-wrr-<type>.<name> (see SetIdentifiersName). The
// listing reads both back into the same record sets, so a second sync plans
// nothing; the TXT record is never shown to the planner and is deleted with
// the record set it describes.
package clouddns

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/auth/credentials"
	"golang.org/x/time/rate"
	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/kfed-io/kfed/dns/dnsprovider"
)

// Cloud DNS's limits on one change ("Quotas and limits").
const (
	MaxAdditionsPerChange   = 1000
	MaxDeletionsPerChange   = 1000
	MaxRrdataBytesPerChange = 100000
)

// listPageSize is the maxResults asked of resourceRecordSets.list; the
// server may answer fewer.
const listPageSize = 1000

// Config selects a project and zones and tunes retries.
type Config struct {
	// Project is the Google Cloud project holding the managed zones. When
	// empty, NewWithDefaultCredentials takes it from the credentials.
	Project string
	// Zones limits the provider to these managed zones, each given by its
	// resource name, numeric ID or DNS name (--google-zone); empty means
	// every zone of the project.
	Zones []string
	// Visibility limits the provider to "public" or "private" zones; empty
	// means both.
	Visibility string
	// RequestsPerSecond paces every request of this provider, all zones
	// together; 0 does not pace (Cloud DNS's per-minute quotas are large,
	// and a 429 is retried).
	RequestsPerSecond float64
	// MaxRetries is how often a request answered 429 or 5xx is retried;
	// default 8.
	MaxRetries int
	// BaseBackoff and MaxBackoff bound the wait before a retry: a random
	// duration up to BaseBackoff·2^attempt, at most MaxBackoff. Defaults
	// 200 ms and 20 s.
	BaseBackoff, MaxBackoff time.Duration
	// MaxAdditionsPerChange, MaxDeletionsPerChange and
	// MaxRrdataBytesPerChange default to Cloud DNS's limits; tests lower
	// them.
	MaxAdditionsPerChange, MaxDeletionsPerChange, MaxRrdataBytesPerChange int
}

// Provider is Cloud DNS through one API client.
type Provider struct {
	svc     *dns.Service
	cfg     Config
	retry   dnsprovider.Retry
	regions regionTable // Google Cloud's, for geo policies
	dnsprovider.Counters
}

var _ dnsprovider.Provider = (*Provider)(nil)

// New returns a provider using svc, made by the caller (in tests, with
// option.WithEndpoint and option.WithoutAuthentication). cfg.Project is
// required.
func New(svc *dns.Service, cfg Config) (*Provider, error) {
	if cfg.Project == "" {
		return nil, errors.New("clouddns: a project is required")
	}
	switch cfg.Visibility {
	case "", "public", "private":
	default:
		return nil, fmt.Errorf("clouddns: zone visibility %q is not public or private", cfg.Visibility)
	}
	if cfg.MaxAdditionsPerChange == 0 {
		cfg.MaxAdditionsPerChange = MaxAdditionsPerChange
	}
	if cfg.MaxDeletionsPerChange == 0 {
		cfg.MaxDeletionsPerChange = MaxDeletionsPerChange
	}
	if cfg.MaxRrdataBytesPerChange == 0 {
		cfg.MaxRrdataBytesPerChange = MaxRrdataBytesPerChange
	}
	p := &Provider{svc: svc, cfg: cfg, regions: gcpRegions(), retry: dnsprovider.Retry{
		MaxRetries: cfg.MaxRetries, BaseBackoff: cfg.BaseBackoff, MaxBackoff: cfg.MaxBackoff,
	}.WithDefaults()}
	if cfg.RequestsPerSecond > 0 {
		p.retry.Limiter = rate.NewLimiter(rate.Limit(cfg.RequestsPerSecond), max(1, int(cfg.RequestsPerSecond)))
	}
	return p, nil
}

// NewWithDefaultCredentials returns a provider authenticated with
// Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's
// login, workload identity, the metadata server), never with a secret given
// on the command line. An empty cfg.Project is taken from the credentials.
// opts are passed to the client after the credentials (an endpoint, say).
func NewWithDefaultCredentials(ctx context.Context, cfg Config, opts ...option.ClientOption) (*Provider, error) {
	creds, err := credentials.DetectDefault(&credentials.DetectOptions{Scopes: []string{dns.NdevClouddnsReadwriteScope}})
	if err != nil {
		return nil, fmt.Errorf("clouddns: finding application default credentials: %w", err)
	}
	if cfg.Project == "" {
		if cfg.Project, err = creds.ProjectID(ctx); err != nil {
			return nil, fmt.Errorf("clouddns: finding the project of the default credentials: %w", err)
		}
		if cfg.Project == "" {
			return nil, errors.New("clouddns: the default credentials name no project; give one (--google-project)")
		}
	}
	svc, err := dns.NewService(ctx, append([]option.ClientOption{option.WithAuthCredentials(creds)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("clouddns: creating the API client: %w", err)
	}
	return New(svc, cfg)
}

// Name returns "clouddns".
func (p *Provider) Name() string { return "clouddns" }

// Adjust makes desired record sets into what Cloud DNS holds, one record set
// per name and type: record sets of one name and type that all have set
// identifiers stay apart (they become the items of one weighted round robin
// policy) but share the lowest TTL among them, as the items of one record
// set must, and when all their weights are 0 they get weight 1 each (an
// equal share, as Route53 reads all-zero weights). A proximity policy
// (readied by dnsprovider.Proximity) becomes one record set per Google
// Cloud region, each cluster under the region nearest to it (the items of a
// geo policy). Where a record set without a set identifier shares its name
// and type with others, Cloud DNS cannot hold both, and they are merged
// into one record set as on a provider without weighted routing.
func (p *Provider) Adjust(desired []dnsprovider.RecordSet) []dnsprovider.RecordSet {
	return adjust(p.regions, desired)
}

// retryable reports whether an error answer is worth retrying after a wait,
// and whether it was Cloud DNS asking the caller to slow down.
func retryable(err error) (retry, throttled bool) {
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return false, false
	}
	switch {
	case ge.Code == http.StatusTooManyRequests:
		return true, true
	case ge.Code == http.StatusForbidden && hasReason(ge, "rateLimitExceeded", "userRateLimitExceeded"):
		return true, true
	case ge.Code >= 500:
		return true, false
	}
	return false, false
}

func hasReason(ge *googleapi.Error, reasons ...string) bool {
	for _, it := range ge.Errors {
		if slices.Contains(reasons, it.Reason) {
			return true
		}
	}
	return false
}

// call sends one request, through the limiter when there is one, retrying
// 429 and 5xx answers. Retrying a change whose answer was lost is safe: its
// deletions then no longer match, and it fails as a precondition instead of
// applying twice.
func (p *Provider) call(ctx context.Context, fn func(context.Context) error) error {
	return p.retry.Do(ctx, &p.Counters, retryable, fn)
}

// wanted reports whether the configuration selects managed zone mz.
func (p *Provider) wanted(mz *dns.ManagedZone) bool {
	if p.cfg.Visibility != "" && mz.Visibility != p.cfg.Visibility {
		return false
	}
	if len(p.cfg.Zones) == 0 {
		return true
	}
	id := fmt.Sprint(mz.Id)
	for _, z := range p.cfg.Zones {
		if z == mz.Name || z == id || dnsprovider.NormalizeName(z) == dnsprovider.NormalizeName(mz.DnsName) {
			return true
		}
	}
	return false
}

// Zones lists the project's managed zones, filtered by Config.
func (p *Provider) Zones(ctx context.Context) ([]dnsprovider.Zone, error) {
	var zones []dnsprovider.Zone
	token := ""
	for {
		var page *dns.ManagedZonesListResponse
		err := p.call(ctx, func(ctx context.Context) error {
			var err error
			page, err = p.svc.ManagedZones.List(p.cfg.Project).PageToken(token).Context(ctx).Do()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("clouddns: listing managed zones of project %s: %w", p.cfg.Project, err)
		}
		for _, mz := range page.ManagedZones {
			if p.wanted(mz) {
				zones = append(zones, &zone{p: p, id: mz.Name, name: dnsprovider.NormalizeName(mz.DnsName),
					private: mz.Visibility == "private", listed: map[nameType]*rrset{}})
			}
		}
		if page.NextPageToken == "" {
			return zones, nil
		}
		token = page.NextPageToken
	}
}

// rrset is what the zone last knew one Cloud DNS record set to hold: as
// listed or as written, and as kfed's record sets.
type rrset struct {
	raw     *dns.ResourceRecordSet // nil when only ids is known
	ids     *dns.ResourceRecordSet // the set-identifier TXT record, if any
	members []dnsprovider.RecordSet
}

type zone struct {
	p       *Provider
	id      string // the managed zone's resource name
	name    string
	private bool

	// mu guards listed: the record sets of the last listing, updated by
	// every change applied since. A change to one cluster's weighted record
	// set rewrites the whole Cloud DNS record set, so the other clusters'
	// items are taken from here.
	mu     sync.Mutex
	listed map[nameType]*rrset
}

var _ dnsprovider.Zone = (*zone)(nil)

func (z *zone) Name() string { return z.name }

// ID returns the managed zone's resource name, which API calls take.
func (z *zone) ID() string { return z.id }

// Private reports whether the zone answers only in its VPC networks.
func (z *zone) Private() bool { return z.private }

// Records lists the zone, up to 1,000 record sets per request, and
// remembers the listing for the change sets that follow.
func (z *zone) Records(ctx context.Context) ([]dnsprovider.RecordSet, error) {
	var raws []*dns.ResourceRecordSet
	token := ""
	for {
		var page *dns.ResourceRecordSetsListResponse
		err := z.p.call(ctx, func(ctx context.Context) error {
			var err error
			page, err = z.p.svc.ResourceRecordSets.List(z.p.cfg.Project, z.id).MaxResults(listPageSize).PageToken(token).Context(ctx).Do()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("clouddns: listing zone %s (%s): %w", z.name, z.id, err)
		}
		raws = append(raws, page.Rrsets...)
		if page.NextPageToken == "" {
			break
		}
		token = page.NextPageToken
	}

	listed := map[nameType]*rrset{}
	for _, r := range raws {
		if name, typ, ok := parseSetIdentifiersName(dnsprovider.NormalizeName(r.Name)); ok && r.Type == dnsprovider.TypeTXT {
			k := nameType{name, typ}
			if listed[k] == nil {
				listed[k] = &rrset{}
			}
			listed[k].ids = r
		}
	}
	var out []dnsprovider.RecordSet
	for _, r := range raws {
		name := dnsprovider.NormalizeName(r.Name)
		if _, _, ok := parseSetIdentifiersName(name); (ok && r.Type == dnsprovider.TypeTXT) || !dnsprovider.IsManagedType(r.Type) {
			continue
		}
		k := nameType{name, r.Type}
		st := listed[k]
		if st == nil {
			st = &rrset{}
			listed[k] = st
		}
		st.raw = r
		members, err := decode(r, st.ids, z.p.regions)
		if err != nil {
			return nil, fmt.Errorf("clouddns: zone %s: %w", z.name, err)
		}
		st.members = members
		out = append(out, members...)
	}
	z.mu.Lock()
	z.listed = listed
	z.mu.Unlock()
	return out, nil
}

func (z *zone) NewChangeset() dnsprovider.Changeset { return &changeset{zone: z} }

type changeset struct {
	dnsprovider.ChangeList
	zone *zone
}

var _ dnsprovider.Changeset = (*changeset)(nil)

// unit is the Cloud DNS form of one group of changes (the changes to one
// name), which must go in one request.
type unit struct {
	changes              int // dnsprovider changes it carries
	group                string
	source               []dnsprovider.Change // those changes
	additions, deletions []*dns.ResourceRecordSet
	after                map[nameType]*rrset // the zone's record sets once applied; nil values are deleted
}

// cost is what a unit counts against the limits of one change.
func (u unit) cost() (additions, deletions, bytes int) {
	for _, list := range [][]*dns.ResourceRecordSet{u.additions, u.deletions} {
		for _, r := range list {
			for _, d := range rrdatas(r) {
				bytes += len(d)
			}
		}
	}
	return len(u.additions), len(u.deletions), bytes
}

// Apply sends the changes in the fewest changes.create requests that fit
// Cloud DNS's limits, one when they fit. A request refused for bad input
// (see classify) is split until the names Cloud DNS refuses are found alone
// (dnsprovider.SendIsolating); the others are applied, and Apply returns a
// *dnsprovider.RefusedError naming the refused. Any other error stops it:
// requests already accepted stay applied; a refusal because the zone
// changed since it was listed wraps dnsprovider.ErrPrecondition.
func (cs *changeset) Apply(ctx context.Context) error {
	z, p := cs.zone, cs.zone.p
	z.mu.Lock()
	defer z.mu.Unlock()
	var units []unit
	for _, g := range dnsprovider.GroupChanges(cs.Changes()) {
		u, err := z.encodeGroup(g)
		if err != nil {
			return fmt.Errorf("clouddns: zone %s: %w", z.name, err)
		}
		units = append(units, u)
	}
	batches, err := p.pack(units)
	if err != nil {
		return fmt.Errorf("clouddns: zone %s: %w", z.name, err)
	}
	var refused []dnsprovider.Refusal
	for i, b := range batches {
		r, err := dnsprovider.SendIsolating(ctx, b, z.send, func(u unit) (string, []dnsprovider.Change) { return u.group, u.source })
		refused = append(refused, r...)
		if err != nil {
			n := 0
			for _, u := range b {
				n += u.changes
			}
			return fmt.Errorf("clouddns: zone %s: request %d of %d (%d changes, from %s): %w", z.name, i+1, len(batches), n, b[0].group, err)
		}
	}
	if len(refused) > 0 {
		return &dnsprovider.RefusedError{Refusals: refused}
	}
	return nil
}

// send applies units in one changes.create; z.mu is held.
func (z *zone) send(ctx context.Context, b []unit) error {
	p := z.p
	change := &dns.Change{}
	n := 0
	for _, u := range b {
		change.Deletions = append(change.Deletions, u.deletions...)
		change.Additions = append(change.Additions, u.additions...)
		n += u.changes
	}
	err := p.call(ctx, func(ctx context.Context) error {
		_, err := p.svc.Changes.Create(p.cfg.Project, z.id, change).Context(ctx).Do()
		return err
	})
	if err != nil {
		// What the zone holds is no longer known for these names.
		for _, u := range b {
			for k := range u.after {
				delete(z.listed, k)
			}
		}
		if len(b) == 1 {
			return fmt.Errorf("clouddns: zone %s: changes to %s: %w", z.name, b[0].group, classify(err))
		}
		return classify(err)
	}
	for _, u := range b {
		for k, st := range u.after {
			if st == nil {
				delete(z.listed, k)
			} else {
				z.listed[k] = st
			}
		}
	}
	p.Applied(n)
	return nil
}

// pack puts units into as few batches as Cloud DNS's limits allow, in
// order, never splitting one.
func (p *Provider) pack(units []unit) ([][]unit, error) {
	limits := [3]int{p.cfg.MaxAdditionsPerChange, p.cfg.MaxDeletionsPerChange, p.cfg.MaxRrdataBytesPerChange}
	names := [3]string{"additions", "deletions", "bytes of record data"}
	var batches [][]unit
	var cur []unit
	var used [3]int
	for _, u := range units {
		a, d, b := u.cost()
		c := [3]int{a, d, b}
		fits := true
		for i := range c {
			if c[i] > limits[i] {
				return nil, fmt.Errorf("changes to %s need %d %s, over the limit of %d per change: %w", u.group, c[i], names[i], limits[i], dnsprovider.ErrTooLarge)
			}
			if used[i]+c[i] > limits[i] {
				fits = false
			}
		}
		if !fits {
			batches = append(batches, cur)
			cur, used = nil, [3]int{}
		}
		cur = append(cur, u)
		for i := range c {
			used[i] += c[i]
		}
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches, nil
}

// encodeGroup turns the changes to one name into Cloud DNS deletions and
// additions. Each record set touched is deleted as it was listed and added
// as it will be, so the whole group fails if any of it changed meanwhile.
//
// What a record set holds now is what was listed or last written, except
// where the changes say otherwise: an Update or Delete names what the
// planner saw (Old), and a Create says the planner saw nothing. When the two
// disagree the deletion follows the planner, and Cloud DNS refuses it if the
// zone does not match.
func (z *zone) encodeGroup(changes []dnsprovider.Change) (unit, error) {
	u := unit{changes: len(changes), group: changes[0].Group, source: changes, after: map[nameType]*rrset{}}
	byNT := map[nameType][]dnsprovider.Change{}
	var order []nameType
	for _, c := range changes {
		r := c.Record()
		k := nameType{r.Name, r.Type}
		if _, ok := byNT[k]; !ok {
			order = append(order, k)
		}
		byNT[k] = append(byNT[k], c)
	}
	for _, k := range order {
		known := z.listed[k]
		before := map[string]dnsprovider.RecordSet{}
		if known != nil {
			for _, m := range known.members {
				before[m.SetIdentifier] = m
			}
		}
		for _, c := range byNT[k] {
			switch c.Action {
			case dnsprovider.Create:
				delete(before, c.New.SetIdentifier)
			default:
				before[c.Old.SetIdentifier] = c.Old
			}
		}
		after := map[string]dnsprovider.RecordSet{}
		for id, m := range before {
			after[id] = m
		}
		for _, c := range byNT[k] {
			if c.Action != dnsprovider.Create {
				delete(after, c.Old.SetIdentifier)
			}
			if c.Action != dnsprovider.Delete {
				after[c.New.SetIdentifier] = c.New
			}
		}

		// Delete what is there: the listed record set itself when the
		// planner saw the same, so that it matches to the byte.
		var delRaw, delIDs *dns.ResourceRecordSet
		if known != nil && sameMembers(known.members, before) {
			delRaw, delIDs = known.raw, known.ids
		} else {
			var err error
			if delRaw, delIDs, err = encode(k, sortedMembers(before)); err != nil {
				return unit{}, err
			}
		}
		addRaw, addIDs, err := encode(k, sortedMembers(after))
		if err != nil {
			return unit{}, err
		}
		for _, r := range []*dns.ResourceRecordSet{delRaw, delIDs} {
			if r != nil {
				u.deletions = append(u.deletions, r)
			}
		}
		for _, r := range []*dns.ResourceRecordSet{addRaw, addIDs} {
			if r != nil {
				u.additions = append(u.additions, r)
			}
		}
		if addRaw == nil {
			u.after[k] = nil
		} else {
			u.after[k] = &rrset{raw: addRaw, ids: addIDs, members: sortedMembers(after)}
		}
	}
	return u, nil
}

func sortedMembers(m map[string]dnsprovider.RecordSet) []dnsprovider.RecordSet {
	out := make([]dnsprovider.RecordSet, 0, len(m))
	for _, rs := range m {
		out = append(out, rs)
	}
	slices.SortFunc(out, func(a, b dnsprovider.RecordSet) int { return strings.Compare(a.SetIdentifier, b.SetIdentifier) })
	return out
}

func sameMembers(list []dnsprovider.RecordSet, m map[string]dnsprovider.RecordSet) bool {
	if len(list) != len(m) {
		return false
	}
	for _, rs := range list {
		o, ok := m[rs.SetIdentifier]
		if !ok || !rs.Equal(o) {
			return false
		}
	}
	return true
}

// classify tells what an error of changes.create means. A deletion that no
// longer matches (412 conditionNotMet) or finds nothing (404 on an entity
// of the change), or an addition over a record set that now exists (409
// alreadyExists), means the zone changed since it was listed: it wraps
// dnsprovider.ErrPrecondition. Any other 4xx but 401, 403, 404, 408 and 429
// is Cloud DNS refusing what was asked (400 invalid, invalidValue,
// cnameResourceRecordSetConflict, 413 a request too large, …) and wraps
// dnsprovider.ErrRejected: sent again it is refused again. Everything else —
// 401 and 403 (credentials, permissions, a rate limit once retries are
// spent), 404 of the managed zone, 408, 429, 5xx, the network — is an outage
// and is returned as it is.
func classify(err error) error {
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return err
	}
	switch {
	case ge.Code == http.StatusPreconditionFailed,
		ge.Code == http.StatusConflict,
		ge.Code == http.StatusNotFound && strings.Contains(ge.Message, "entity.change"):
		return fmt.Errorf("%w: %w", err, dnsprovider.ErrPrecondition)
	case ge.Code >= 400 && ge.Code < 500 && !slices.Contains([]int{http.StatusUnauthorized, http.StatusForbidden,
		http.StatusNotFound, http.StatusRequestTimeout, http.StatusTooManyRequests}, ge.Code):
		return fmt.Errorf("%w: %w", err, dnsprovider.ErrRejected)
	}
	return err
}
