// Package route53 publishes kfed's records to Amazon Route53 through
// aws-sdk-go-v2, with as few requests as Route53's limits allow: all changes
// to a hosted zone go in one ChangeResourceRecordSets request when they fit
// (1,000 ResourceRecord elements and 32,000 characters of values), and in
// the fewest that fit otherwise, never splitting the changes to one name.
// Route53 allows about five requests per second per account, shared by
// every tool in it, so one client-side rate limiter paces all zones, and
// Throttling and PriorRequestNotComplete answers, and 5xx, are retried with
// exponential backoff and full jitter (the SDK's own retryer is switched off
// so that every retry is counted). A batch Route53 refuses for what it asks
// (see classify) is split until the names to blame are found, and the rest
// is applied.
//
// A proximity policy (record sets with a Location) is published with
// Route53's geoproximity routing: one record set per cluster, its
// GeoProximityLocation the cluster's coordinates, without a bias. A change of
// policy at a name (weighted to proximity and back) is a DELETE of every
// listed record set and a CREATE of every new one in one batch, since
// Route53 holds one routing policy per name and type.
//
// Updates are sent as DELETE of the listed record set and CREATE of the new
// one in the same atomic batch, not UPSERT: Route53 refuses the DELETE if
// the record set changed since it was listed, so a concurrent change is
// detected instead of overwritten. (Both cost the same: an UPSERT counts
// twice against the limits.)
package route53

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"
	"golang.org/x/time/rate"

	"github.com/kfed-io/kfed/dns/dnsprovider"
)

// Route53's limits on one ChangeResourceRecordSets request.
const (
	MaxRecordsPerRequest    = 1000
	MaxValueCharsPerRequest = 32000
)

// Config selects zones and tunes pacing.
type Config struct {
	// ZoneIDs limits the provider to these hosted zones (IDs with or without
	// the /hostedzone/ prefix); empty means every zone the account has.
	ZoneIDs []string
	// ZoneType limits the provider to "public" or "private" zones; empty
	// means both.
	ZoneType string
	// RequestsPerSecond paces every request of this provider, all zones
	// together; default 5, Route53's per-account limit.
	RequestsPerSecond float64
	// MaxRetries is how often a throttled request is retried; default 8.
	MaxRetries int
	// BaseBackoff and MaxBackoff bound the wait before a retry: a random
	// duration up to BaseBackoff·2^attempt, at most MaxBackoff. Defaults
	// 200 ms and 20 s.
	BaseBackoff, MaxBackoff time.Duration
	// MaxRecordsPerRequest and MaxValueCharsPerRequest default to Route53's
	// limits; tests lower them.
	MaxRecordsPerRequest, MaxValueCharsPerRequest int
	// ELBZones maps an AWS region to the canonical hosted zone IDs of its
	// load balancers, for alias records; it extends the built-in table.
	ELBZones map[string]ELBZone
}

// Provider is Route53 through one SDK client.
type Provider struct {
	client *route53.Client
	cfg    Config
	retry  dnsprovider.Retry
	elb    map[string]ELBZone
	dnsprovider.Counters
}

var _ dnsprovider.Provider = (*Provider)(nil)

// New returns a provider using client, made by the caller from the default
// credential chain (or, in tests, static credentials and a BaseEndpoint).
func New(client *route53.Client, cfg Config) *Provider {
	if cfg.RequestsPerSecond == 0 {
		cfg.RequestsPerSecond = 5
	}
	if cfg.MaxRecordsPerRequest == 0 {
		cfg.MaxRecordsPerRequest = MaxRecordsPerRequest
	}
	if cfg.MaxValueCharsPerRequest == 0 {
		cfg.MaxValueCharsPerRequest = MaxValueCharsPerRequest
	}
	elb := defaultELBZones()
	for r, z := range cfg.ELBZones {
		elb[r] = z
	}
	return &Provider{
		client: client,
		cfg:    cfg,
		retry: dnsprovider.Retry{
			Limiter:    rate.NewLimiter(rate.Limit(cfg.RequestsPerSecond), max(1, int(cfg.RequestsPerSecond))),
			MaxRetries: cfg.MaxRetries, BaseBackoff: cfg.BaseBackoff, MaxBackoff: cfg.MaxBackoff,
		}.WithDefaults(),
		elb: elb,
	}
}

// Name returns "route53".
func (p *Provider) Name() string { return "route53" }

// Adjust makes desired record sets into what Route53 holds: A and AAAA
// record sets resolved from an AWS load balancer's hostname become alias
// record sets to it (Route53 then follows the balancer's addresses itself,
// and checks its health); proximity policies are readied by
// dnsprovider.Proximity and their coordinates rounded to Route53's two
// decimals; weights above Route53's maximum of 255 are scaled down in
// proportion within their name and type (a positive weight stays at least
// 1), and a weighted name and type whose weights are all 0 gets 1 each.
func (p *Provider) Adjust(desired []dnsprovider.RecordSet) []dnsprovider.RecordSet {
	return adjust(p.elb, desired)
}

// noSDKRetries switches the SDK's retryer off for one call: the provider
// retries itself, so that it can count retries and share one limiter.
func noSDKRetries(o *route53.Options) { o.Retryer = aws.NopRetryer{} }

// throttled reports whether Route53 asked the caller to slow down.
func throttled(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode() {
	case "Throttling", "ThrottlingException", "PriorRequestNotComplete", "RequestLimitExceeded":
		return true
	}
	return false
}

// serverError reports whether Route53 failed with a 5xx answer (an
// InternalFailure or ServiceUnavailable), which passes: the SDK's own
// retryer, switched off here, retries those too.
func serverError(err error) bool {
	var re interface{ HTTPStatusCode() int }
	return errors.As(err, &re) && re.HTTPStatusCode() >= 500
}

// retryable reports whether an answer is worth retrying after a wait, and
// whether it was Route53 asking the caller to slow down.
func retryable(err error) (retry, slowDown bool) {
	if throttled(err) {
		return true, true
	}
	return serverError(err), false
}

// call sends one request through the shared limiter, retrying throttled
// and 5xx answers. Retrying a change whose answer was lost is safe: its
// CREATEs and DELETEs no longer match, so the batch is refused whole
// (InvalidChangeBatch, a failed precondition) instead of applying twice.
func (p *Provider) call(ctx context.Context, fn func(context.Context) error) error {
	return p.retry.Do(ctx, &p.Counters, retryable, fn)
}

// Zones lists the account's hosted zones, filtered by Config.
func (p *Provider) Zones(ctx context.Context) ([]dnsprovider.Zone, error) {
	want := map[string]bool{}
	for _, id := range p.cfg.ZoneIDs {
		want[strings.TrimPrefix(id, "/hostedzone/")] = true
	}
	var zones []dnsprovider.Zone
	in := &route53.ListHostedZonesInput{}
	for {
		var out *route53.ListHostedZonesOutput
		err := p.call(ctx, func(ctx context.Context) error {
			var err error
			out, err = p.client.ListHostedZones(ctx, in, noSDKRetries)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("route53: listing hosted zones: %w", err)
		}
		for _, hz := range out.HostedZones {
			id := strings.TrimPrefix(aws.ToString(hz.Id), "/hostedzone/")
			private := hz.Config != nil && hz.Config.PrivateZone
			if len(want) > 0 && !want[id] {
				continue
			}
			if (p.cfg.ZoneType == "private" && !private) || (p.cfg.ZoneType == "public" && private) {
				continue
			}
			zones = append(zones, &zone{p: p, id: id, name: dnsprovider.NormalizeName(aws.ToString(hz.Name)), private: private,
				foreign: map[dnsprovider.Key]types.ResourceRecordSet{}})
		}
		if !out.IsTruncated {
			break
		}
		in.Marker = out.NextMarker
	}
	return zones, nil
}

type zone struct {
	p       *Provider
	id      string
	name    string
	private bool

	// mu guards foreign: the listed record sets that kfed's model does not
	// hold whole (a bias, a health check, another routing policy set by
	// hand), as listed. A DELETE must name a record set exactly, so one of
	// these is deleted as it was listed rather than as kfed would write it.
	// Only such record sets are kept: kfed's own round-trip.
	mu      sync.Mutex
	foreign map[dnsprovider.Key]types.ResourceRecordSet
}

var _ dnsprovider.Zone = (*zone)(nil)

func (z *zone) Name() string { return z.name }
func (z *zone) ID() string   { return z.id }

// Private reports whether the hosted zone is private (answers only in its
// VPCs).
func (z *zone) Private() bool { return z.private }

// Records lists the zone, 300 record sets per request (Route53's page size).
func (z *zone) Records(ctx context.Context) ([]dnsprovider.RecordSet, error) {
	var out []dnsprovider.RecordSet
	foreign := map[dnsprovider.Key]types.ResourceRecordSet{}
	in := &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(z.id), MaxItems: aws.Int32(300)}
	for {
		var page *route53.ListResourceRecordSetsOutput
		err := z.p.call(ctx, func(ctx context.Context) error {
			var err error
			page, err = z.p.client.ListResourceRecordSets(ctx, in, noSDKRetries)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("route53: listing zone %s (%s): %w", z.name, z.id, err)
		}
		for _, rrs := range page.ResourceRecordSets {
			rs, ok, err := fromRoute53(rrs)
			if err != nil {
				return nil, fmt.Errorf("route53: zone %s: %w", z.name, err)
			}
			if !ok {
				continue
			}
			out = append(out, rs)
			if !roundTrips(rrs) {
				foreign[rs.Key()] = rrs
			}
		}
		if !page.IsTruncated {
			z.mu.Lock()
			z.foreign = foreign
			z.mu.Unlock()
			return out, nil
		}
		in.StartRecordName, in.StartRecordType, in.StartRecordIdentifier = page.NextRecordName, page.NextRecordType, page.NextRecordIdentifier
	}
}

// unescape undoes Route53's octal escapes in names (\052 for '*').
func unescape(name string) string {
	if !strings.Contains(name, `\`) {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] == '\\' && i+3 < len(name) {
			var v int
			if _, err := fmt.Sscanf(name[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(name[i])
	}
	return b.String()
}

func fromRoute53(r types.ResourceRecordSet) (dnsprovider.RecordSet, bool, error) {
	typ := string(r.Type)
	if !dnsprovider.IsManagedType(typ) {
		return dnsprovider.RecordSet{}, false, nil
	}
	rs := dnsprovider.RecordSet{
		Name:          unescape(aws.ToString(r.Name)),
		Type:          typ,
		TTL:           aws.ToInt64(r.TTL),
		SetIdentifier: aws.ToString(r.SetIdentifier),
		Weight:        aws.ToInt64(r.Weight),
	}
	if g := r.GeoProximityLocation; g != nil && g.Coordinates != nil {
		lat, err1 := strconv.ParseFloat(aws.ToString(g.Coordinates.Latitude), 64)
		lon, err2 := strconv.ParseFloat(aws.ToString(g.Coordinates.Longitude), 64)
		if err := errors.Join(err1, err2); err != nil {
			return dnsprovider.RecordSet{}, true, fmt.Errorf("%s %s %s: coordinates: %w", rs.Name, typ, rs.SetIdentifier, err)
		}
		rs.Location = &dnsprovider.Location{Latitude: lat, Longitude: lon}
	}
	for _, v := range r.ResourceRecords {
		rs.Targets = append(rs.Targets, aws.ToString(v.Value))
	}
	if a := r.AliasTarget; a != nil {
		rs.Alias = &dnsprovider.Alias{Name: aws.ToString(a.DNSName), ZoneID: aws.ToString(a.HostedZoneId), EvaluateTargetHealth: a.EvaluateTargetHealth}
	}
	n, err := dnsprovider.Normalize(rs)
	return n, true, err
}

// roundTrips reports whether toRoute53 writes r back as Route53 lists it,
// as far as a DELETE compares: nothing kfed's model leaves out.
func roundTrips(r types.ResourceRecordSet) bool {
	if r.HealthCheckId != nil || r.Region != "" || r.Failover != "" || r.GeoLocation != nil || r.MultiValueAnswer != nil ||
		r.CidrRoutingConfig != nil || r.TrafficPolicyInstanceId != nil {
		return false
	}
	g := r.GeoProximityLocation
	if g == nil {
		return true
	}
	if g.Coordinates == nil || g.AWSRegion != nil || g.LocalZoneGroup != nil || aws.ToInt32(g.Bias) != 0 {
		return false
	}
	lat, err1 := strconv.ParseFloat(aws.ToString(g.Coordinates.Latitude), 64)
	lon, err2 := strconv.ParseFloat(aws.ToString(g.Coordinates.Longitude), 64)
	return err1 == nil && err2 == nil && coordinate(lat) == aws.ToString(g.Coordinates.Latitude) && coordinate(lon) == aws.ToString(g.Coordinates.Longitude)
}

func toRoute53(rs dnsprovider.RecordSet) *types.ResourceRecordSet {
	out := &types.ResourceRecordSet{Name: aws.String(rs.Name + "."), Type: types.RRType(rs.Type)}
	switch {
	case rs.SetIdentifier != "" && rs.Location != nil:
		// Coordinates rather than AWSRegion: the location is the one kfed
		// orders clusters by everywhere (a Cluster's spec.location, else
		// its region's place), for clusters in AWS or not.
		out.SetIdentifier = aws.String(rs.SetIdentifier)
		out.GeoProximityLocation = &types.GeoProximityLocation{Coordinates: &types.Coordinates{
			Latitude: aws.String(coordinate(rs.Location.Latitude)), Longitude: aws.String(coordinate(rs.Location.Longitude)),
		}}
	case rs.SetIdentifier != "":
		out.SetIdentifier = aws.String(rs.SetIdentifier)
		out.Weight = aws.Int64(rs.Weight)
	}
	if rs.Alias != nil {
		out.AliasTarget = &types.AliasTarget{DNSName: aws.String(rs.Alias.Name + "."), HostedZoneId: aws.String(rs.Alias.ZoneID), EvaluateTargetHealth: rs.Alias.EvaluateTargetHealth}
		return out
	}
	out.TTL = aws.Int64(rs.TTL)
	for _, t := range rs.Targets {
		switch rs.Type {
		case dnsprovider.TypeCNAME:
			t += "."
		case dnsprovider.TypeSRV:
			t += "."
		}
		out.ResourceRecords = append(out.ResourceRecords, types.ResourceRecord{Value: aws.String(t)})
	}
	return out
}

// coordinate writes a latitude or longitude as Route53 takes it: decimal
// degrees with at most two decimals (about 1 km), no exponent.
func coordinate(v float64) string {
	return strconv.FormatFloat(roundCoordinate(v), 'f', -1, 64)
}

func (z *zone) NewChangeset() dnsprovider.Changeset { return &changeset{zone: z} }

type changeset struct {
	dnsprovider.ChangeList
	zone *zone
}

var _ dnsprovider.Changeset = (*changeset)(nil)

// encode turns a change into Route53 changes: an update is a DELETE of what
// was listed and a CREATE of the new record set. foreign holds the listed
// record sets that kfed's model does not hold whole (zone.foreign), which
// are deleted as listed.
func encode(c dnsprovider.Change, foreign map[dnsprovider.Key]types.ResourceRecordSet) []types.Change {
	var out []types.Change
	if c.Action != dnsprovider.Create {
		old := toRoute53(c.Old)
		if raw, ok := foreign[c.Old.Key()]; ok {
			old = &raw
		}
		out = append(out, types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: old})
	}
	if c.Action != dnsprovider.Delete {
		out = append(out, types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: toRoute53(c.New)})
	}
	return out
}

// cost is what a change counts against the request limits, as Route53
// counts: each ResourceRecord element (UPSERT twice) and each character of
// their values. An alias record set is counted as one record.
func cost(c dnsprovider.Change) []int {
	records, chars := 0, 0
	for _, rc := range encode(c, nil) {
		n := 1
		if rc.Action == types.ChangeActionUpsert {
			n = 2
		}
		rs := rc.ResourceRecordSet
		if rs.AliasTarget != nil {
			records += n
		}
		for _, v := range rs.ResourceRecords {
			records += n
			chars += n * len(aws.ToString(v.Value))
		}
	}
	return []int{records, chars}
}

// Apply sends the changes in the fewest ChangeResourceRecordSets requests
// that fit Route53's limits, one when they fit. A request refused for bad
// input (rejected) is split until the names Route53 refuses are found alone
// (dnsprovider.SendIsolating); the others are applied, and Apply returns a
// *dnsprovider.RefusedError naming the refused. Any other error stops it:
// requests already accepted stay applied; an InvalidChangeBatch caused by a
// record set that changed since listing wraps dnsprovider.ErrPrecondition.
func (cs *changeset) Apply(ctx context.Context) error {
	z, p := cs.zone, cs.zone.p
	z.mu.Lock()
	defer z.mu.Unlock()
	batches, err := dnsprovider.Batch(dnsprovider.GroupChanges(cs.Changes()),
		[]int{p.cfg.MaxRecordsPerRequest, p.cfg.MaxValueCharsPerRequest}, cost)
	if err != nil {
		return fmt.Errorf("route53: zone %s: %w", z.name, err)
	}
	var refused []dnsprovider.Refusal
	for i, b := range batches {
		r, err := dnsprovider.SendIsolating(ctx, dnsprovider.GroupChanges(b), z.send, changesOf)
		refused = append(refused, r...)
		if err != nil {
			return fmt.Errorf("route53: zone %s: request %d of %d (%d changes, from %s): %w", z.name, i+1, len(batches), len(b), b[0].Group, err)
		}
	}
	if len(refused) > 0 {
		return &dnsprovider.RefusedError{Refusals: refused}
	}
	return nil
}

func changesOf(g []dnsprovider.Change) (string, []dnsprovider.Change) { return g[0].Group, g }

// send applies groups in one ChangeResourceRecordSets request; z.mu is held.
func (z *zone) send(ctx context.Context, groups [][]dnsprovider.Change) error {
	p := z.p
	var changes []types.Change
	n := 0
	for _, g := range groups {
		for _, c := range g {
			changes = append(changes, encode(c, z.foreign)...)
		}
		n += len(g)
	}
	in := &route53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(z.id),
		ChangeBatch:  &types.ChangeBatch{Changes: changes, Comment: aws.String("kfed")},
	}
	err := p.call(ctx, func(ctx context.Context) error {
		_, err := p.client.ChangeResourceRecordSets(ctx, in, noSDKRetries)
		return err
	})
	if err != nil {
		if len(groups) == 1 {
			return fmt.Errorf("route53: zone %s: changes to %s: %w", z.name, groups[0][0].Group, classify(err))
		}
		return classify(err)
	}
	for _, g := range groups {
		for _, c := range g {
			if c.Action != dnsprovider.Create {
				delete(z.foreign, c.Old.Key()) // kfed wrote it anew, or deleted it
			}
		}
	}
	p.Applied(n)
	return nil
}

// classify tells what an error of ChangeResourceRecordSets means. An
// InvalidChangeBatch whose messages say a record set changed since it was
// listed (it already exists, was not found, or its values differ) wraps
// dnsprovider.ErrPrecondition. Any other InvalidChangeBatch (a name not
// permitted in the zone, a malformed value, a label too long, a CNAME
// beside other data), InvalidInput (a request Route53 could not take: a
// value out of range, a policy it does not allow) and InvalidDomainName
// are Route53 refusing what was asked, and wrap dnsprovider.ErrRejected:
// sent again they are refused again. Everything else — throttling
// (Throttling, PriorRequestNotComplete, once retries are spent), 5xx,
// NoSuchHostedZone, credentials (AccessDenied, InvalidClientTokenId,
// SignatureDoesNotMatch, ExpiredToken), the network — is an outage and is
// returned as it is.
func classify(err error) error {
	var icb *types.InvalidChangeBatch
	if errors.As(err, &icb) {
		for _, m := range icb.Messages {
			if strings.Contains(m, "but it already exists") || strings.Contains(m, "but it was not found") ||
				strings.Contains(m, "do not match the current values") {
				return fmt.Errorf("%s: %w", strings.Join(icb.Messages, "; "), dnsprovider.ErrPrecondition)
			}
		}
		return fmt.Errorf("InvalidChangeBatch: %s: %w", strings.Join(icb.Messages, "; "), dnsprovider.ErrRejected)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "InvalidInput", "InvalidDomainName":
			return fmt.Errorf("%s: %s: %w", ae.ErrorCode(), ae.ErrorMessage(), dnsprovider.ErrRejected)
		}
	}
	return err
}
