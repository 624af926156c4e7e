// Package status is what kfed status reads and judges: a client for each
// member, how kfed stands to a Service's shard there, and each endpoint's
// verdict with the votes behind it. cmd/kfed keeps the flags, the tables
// and their colours.
package status

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/clusters"
	"github.com/kfed-io/kfed/clusters/copies"
	"github.com/kfed-io/kfed/healthcheck"
)

// Member is what status could read of one member.
type Member struct {
	Name   string
	Ready  bool
	Client client.Client
	Err    error
}

// Members are a client for each of joined, sorted by name; a member
// whose client cannot be built carries the error.
func Members(ctx context.Context, fed client.Client, joined []kfedv1alpha1.Cluster) []Member {
	var members []Member
	for i := range joined {
		c := &joined[i]
		m := Member{Name: c.Name, Ready: meta.IsStatusConditionTrue(c.Status.Conditions, kfedv1alpha1.ClusterReady)}
		if cfg, _, err := clusters.LoadRESTConfig(ctx, fed, c); err != nil {
			m.Err = err
		} else {
			cfg.Timeout = 5 * time.Second
			m.Client, m.Err = client.New(cfg, client.Options{Scheme: fed.Scheme()})
		}
		members = append(members, m)
	}
	slices.SortFunc(members, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return members
}

// Shard describes the shard of key in m as the member-object rule
// classifies it for federation: whether kfed created or adopted it, and its
// ingress.
func Shard(ctx context.Context, m Member, key client.ObjectKey, federation string) (string, string) {
	if m.Err != nil {
		return "unknown (" + m.Err.Error() + ")", "-"
	}
	var s corev1.Service
	if err := m.Client.Get(ctx, key, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return "absent", "-"
		}
		return "unreachable", "-"
	}
	state := map[copies.Standing]string{
		copies.Ours: "created", copies.Adopted: "adopted",
		copies.Foreign: "not kfed's", copies.Conflict: "another federation's",
	}[copies.Classify(&s, key.String(), federation)]
	var ing []string
	for _, i := range s.Status.LoadBalancer.Ingress {
		ing = append(ing, i.IP+i.Hostname)
	}
	if len(ing) == 0 {
		return state, "<pending>"
	}
	return state, strings.Join(ing, ",")
}

// Votes are the federation's checkers and the endpoints each finds
// unhealthy.
type Votes struct {
	checkers int
	down     map[string][]string // endpoint → checkers that find it down
	// fleet seats each endpoint's panel (ADR 0012) of names; with nil, or
	// no more checkers than a panel, every checker is on every panel.
	fleet *healthcheck.Fleet
	names []string
	// since is, per endpoint, when the latest of its checkers' load
	// buckets moved.
	since map[string]time.Time
}

// ReadVotes reads the checkers that hold a seat and what each finds down.
func ReadVotes(ctx context.Context, fed client.Client) (Votes, error) {
	var reports kfedv1alpha1.HealthReportList
	if err := fed.List(ctx, &reports); err != nil && !meta.IsNoMatchError(err) {
		return Votes{}, fmt.Errorf("listing health reports: %w", err)
	}
	var joined kfedv1alpha1.ClusterList
	if err := fed.List(ctx, &joined); err != nil {
		return Votes{}, fmt.Errorf("listing clusters: %w", err)
	}
	// Only the checkers holding a seat of their cluster vote (ADR 0013).
	counted, _ := kfedv1alpha1.Seats(reports.Items, joined.Items)
	v := Votes{checkers: len(counted), down: map[string][]string{}, since: map[string]time.Time{}}
	members := make([]healthcheck.Checker, len(counted))
	for i, r := range counted {
		for _, u := range r.Unhealthy {
			v.down[u.Endpoint] = append(v.down[u.Endpoint], r.Checker)
		}
		for _, l := range r.Loads {
			if l.Since.Time.After(v.since[l.Endpoint]) {
				v.since[l.Endpoint] = l.Since.Time
			}
		}
		members[i] = healthcheck.Checker{Name: r.Checker, Domain: r.FailureDomain(), PerEndpoint: int(r.CheckersPerEndpoint)}
		v.names = append(v.names, r.Checker)
	}
	v.fleet = healthcheck.NewFleet(members)
	return v, nil
}

// PublishedVerdicts are the verdicts in the Service's DNSEndpoint (cluster →
// healthy; nil when it has none) and the federation the DNSEndpoint belongs
// to, which its shards carry too.
func PublishedVerdicts(ctx context.Context, fed client.Client, key client.ObjectKey) (map[string]bool, string) {
	var ep extdnsv1alpha1.DNSEndpoint
	if err := fed.Get(ctx, key, &ep); err != nil {
		return nil, ""
	}
	table, _ := dnsendpoint.ReadClusters(&ep)
	out := map[string]bool{}
	for name, c := range table {
		out[name] = !c.Unhealthy
	}
	return out, ep.Labels[kfedv1alpha1.LabelFederation]
}

// Share is how a cluster's endpoint stands in its Service's answers by
// load, as the DNSEndpoint's cluster table says.
type Share struct {
	// Load is the endpoint's figure, nil without one.
	Load *float64
	Shed bool
	// Percent is its weight's share of the weights of the clusters that
	// answer the global name (not found down, shed or drained).
	Percent float64
}

// PublishedShares are the clusters' loads and shares in the Service's
// DNSEndpoint, by cluster; nil when it has none.
func PublishedShares(ctx context.Context, fed client.Client, key client.ObjectKey) map[string]Share {
	var ep extdnsv1alpha1.DNSEndpoint
	if err := fed.Get(ctx, key, &ep); err != nil {
		return nil
	}
	table, _ := dnsendpoint.ReadClusters(&ep)
	total := 0
	for _, c := range table {
		if !c.Unhealthy && !c.Shed && !c.Drained {
			total += c.Weight
		}
	}
	out := map[string]Share{}
	for name, c := range table {
		sh := Share{Load: c.Load, Shed: c.Shed}
		if total > 0 && !c.Unhealthy && !c.Shed && !c.Drained {
			sh.Percent = 100 * float64(c.Weight) / float64(total)
		}
		out[name] = sh
	}
	return out
}

// DescribeLoad says an endpoint's load, its age and the share of answers it
// gets: "0.97 for 2m, 3% of answers", "1.21 for 30s, shed", or "-" without
// a figure. now ages the figure.
func (v Votes) DescribeLoad(endpoint string, sh Share, now time.Time) string {
	if sh.Load == nil {
		return "-"
	}
	s := strconv.FormatFloat(*sh.Load, 'f', 2, 64)
	if t, ok := v.since[endpoint]; ok {
		s += " for " + now.Sub(t).Truncate(time.Second).String()
	}
	if sh.Shed {
		return s + ", shed"
	}
	return s + ", " + strconv.FormatFloat(sh.Percent, 'f', 0, 64) + "% of answers"
}

// Describe says an endpoint's verdict and who finds it down: "healthy
// (0/3 down)", "out (2/3 down: a, b)", or "-" without checkers or endpoint.
func (v Votes) Describe(endpoint string, verdicts map[string]bool, cluster string) string {
	healthy, ok := verdicts[cluster]
	if v.checkers == 0 || !ok {
		return "-"
	}
	verdict := "healthy"
	if !healthy {
		verdict = "out"
	}
	down, of := v.down[endpoint], v.checkers
	if v.fleet != nil && !v.fleet.All() {
		// Only the endpoint's panel votes on it.
		panel := map[string]bool{}
		for _, i := range v.fleet.Panel(endpoint, nil) {
			panel[v.names[i]] = true
		}
		down = slices.DeleteFunc(slices.Clone(down), func(c string) bool { return !panel[c] })
		of = len(panel)
	}
	s := fmt.Sprintf("%s (%d/%d down", verdict, len(down), of)
	if len(down) > 0 {
		s += ": " + strings.Join(down, ", ")
	}
	return s + ")"
}
