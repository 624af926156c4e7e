// Package drain is what kfed drain and undrain write and wait for: a
// member's spec.drained, and how far kfed's DNSEndpoints and the DNS
// providers have got with it. cmd/kfed keeps the flags and the printing.
package drain

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kfed-io/kfed/api/externaldns/dnsendpoint"
	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
	"github.com/kfed-io/kfed/dns/publish"
)

// Set writes spec.drained on Cluster name; it reports whether it
// changed.
func Set(ctx context.Context, fed client.Client, name string, drained bool) (bool, error) {
	var c kfedv1alpha1.Cluster
	if err := fed.Get(ctx, client.ObjectKey{Name: name}, &c); apierrors.IsNotFound(err) {
		return false, fmt.Errorf("no cluster %s is joined to this federation (kfed status lists the members)", name)
	} else if err != nil {
		return false, fmt.Errorf("cluster %s: %w", name, err)
	}
	if c.Spec.Drained == drained {
		return false, nil
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Drained = drained
	if err := fed.Patch(ctx, &c, patch); err != nil {
		return false, fmt.Errorf("writing spec.drained of cluster %s: %w", name, err)
	}
	return true, nil
}

// Wait reads kfed's DNSEndpoints every interval until Progress
// says the drain (or undrain) of cluster is published everywhere, or ctx
// ends; then the error names what is still pending.
func Wait(ctx context.Context, fed client.Client, cluster string, drained bool, interval time.Duration) (State, error) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last State
	for {
		var list extdnsv1alpha1.DNSEndpointList
		if err := fed.List(ctx, &list, client.MatchingLabels(dnsendpoint.Selector(""))); err != nil && ctx.Err() == nil {
			return last, fmt.Errorf("listing DNSEndpoints: %w", err)
		}
		if ctx.Err() == nil {
			last = Progress(list.Items, cluster, drained)
			if last.Done() {
				return last, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("%w; still pending: %s", ctx.Err(), last.Pending())
		case <-tick.C:
		}
	}
}

// State is how far the drain (or undrain) of one cluster has got, as
// kfed's DNSEndpoints tell it.
type State struct {
	// Objects are the DNSEndpoints with a row of the cluster; Kept those
	// that keep it drained because no other cluster can answer.
	Objects, Kept []string
	// Unwritten are the DNSEndpoints whose table does not say so yet: the
	// controller has not reconciled them since.
	Unwritten []string
	// Unpublished are "object (provider)" for each provider that has not
	// published an object's current records.
	Unpublished []string
	// Providers are those that publish the federation's DNSEndpoints.
	Providers []string
	// TTL is the longest TTL of the objects' records, seconds.
	TTL int64
}

// Done reports whether the change is written and published everywhere.
func (s State) Done() bool { return len(s.Unwritten) == 0 && len(s.Unpublished) == 0 }

// Pending says what is not done yet.
func (s State) Pending() string {
	var out []string
	if len(s.Unwritten) > 0 {
		out = append(out, "not yet written by the controller: "+strings.Join(s.Unwritten, ", "))
	}
	if len(s.Unpublished) > 0 {
		out = append(out, "not yet published: "+strings.Join(s.Unpublished, ", "))
	}
	return cmp.Or(strings.Join(out, "; "), "nothing")
}

// Progress judges eps, kfed's DNSEndpoints, for the drain (drained
// true) or undrain of cluster: each one with a row of the cluster must have
// that row say so, and every provider that publishes its federation must
// have published its generation. A DNSEndpoint whose records did not change
// (one that keeps the cluster) keeps its generation, so it is not waited
// on.
func Progress(eps []extdnsv1alpha1.DNSEndpoint, cluster string, drained bool) State {
	var s State
	providers := map[string][]string{} // federation → providers
	for _, ep := range eps {
		fed := ep.Labels[kfedv1alpha1.LabelFederation]
		for _, p := range ep.Status.Publishers {
			if !slices.Contains(providers[fed], p.Provider) {
				providers[fed] = append(providers[fed], p.Provider)
			}
			if !slices.Contains(s.Providers, p.Provider) {
				s.Providers = append(s.Providers, p.Provider)
			}
		}
	}
	for i := range eps {
		ep := &eps[i]
		table, _ := dnsendpoint.ReadClusters(ep) // what cannot be read has no row to wait on
		row := table[cluster]
		if row == nil {
			continue
		}
		key := ep.Namespace + "/" + ep.Name
		s.Objects = append(s.Objects, key)
		if row.Drained != drained {
			s.Unwritten = append(s.Unwritten, key)
			continue
		}
		if drained && slices.Contains(publish.Drained(rows(table)).Kept, cluster) {
			s.Kept = append(s.Kept, key)
		}
		for _, p := range providers[ep.Labels[kfedv1alpha1.LabelFederation]] {
			i := slices.IndexFunc(ep.Status.Publishers, func(ps extdnsv1alpha1.PublisherStatus) bool { return ps.Provider == p })
			if i < 0 || ep.Status.Publishers[i].ObservedGeneration < ep.Generation {
				s.Unpublished = append(s.Unpublished, fmt.Sprintf("%s (%s)", key, p))
			}
		}
		for _, e := range ep.Spec.Endpoints {
			s.TTL = max(s.TTL, cmp.Or(e.RecordTTL, publish.DefaultTTL))
		}
	}
	for _, l := range [][]string{s.Objects, s.Kept, s.Unwritten, s.Unpublished, s.Providers} {
		slices.Sort(l)
	}
	return s
}

// rows are a cluster table's rows, sorted by name.
func rows(table dnsendpoint.Clusters) []dnsendpoint.Cluster {
	out := make([]dnsendpoint.Cluster, 0, len(table))
	for _, c := range table {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b dnsendpoint.Cluster) int { return strings.Compare(a.Name, b.Name) })
	return out
}
