package dnssync

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	extdnsv1alpha1 "github.com/kfed-io/kfed/api/externaldns/v1alpha1"
	"github.com/kfed-io/kfed/dns/dnsprovider"
)

// published is what the passes since the last full plan published: each
// DNSEndpoint's resourceVersion and names, the DNSEndpoints naming each
// name, and each name's conflicts. It lets a pass in which a few
// DNSEndpoints changed plan only the names they had and have: every other
// name wants what it wanted and holds what its last plan left, so a full
// plan would change nothing there and report the conflicts it reported.
type published struct {
	eps       map[types.UID]*publishedEndpoint
	holders   map[string][]types.UID
	conflicts map[string][]dnsprovider.Conflict
	// statusesCurrent: the last pass found every status up to date.
	statusesCurrent bool
	pass            uint64
}

type publishedEndpoint struct {
	version    string
	generation int64
	names      []string
	seen       uint64 // the pass that last listed it
}

// newPublished is what a full plan of eps published.
func newPublished(eps []*extdnsv1alpha1.DNSEndpoint, conflicts []dnsprovider.Conflict) *published {
	p := &published{
		eps:       make(map[types.UID]*publishedEndpoint, len(eps)),
		holders:   make(map[string][]types.UID, len(eps)),
		conflicts: map[string][]dnsprovider.Conflict{},
	}
	for _, ep := range eps {
		p.add(ep)
	}
	for _, c := range conflicts {
		p.conflicts[c.Name] = append(p.conflicts[c.Name], c)
	}
	return p
}

// endpointNames are the names ep's endpoints ask for, normalised as the
// planner keys them (no copy when they already are).
func endpointNames(ep *extdnsv1alpha1.DNSEndpoint) []string {
	names := make([]string, 0, len(ep.Spec.Endpoints))
	for j := range ep.Spec.Endpoints {
		if n := dnsprovider.NormalizeName(ep.Spec.Endpoints[j].DNSName); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

func (p *published) add(ep *extdnsv1alpha1.DNSEndpoint) {
	names := endpointNames(ep)
	p.eps[ep.UID] = &publishedEndpoint{version: ep.ResourceVersion, generation: ep.Generation, names: names, seen: p.pass}
	for _, n := range names {
		p.holders[n] = append(p.holders[n], ep.UID)
	}
}

func (p *published) remove(uid types.UID) {
	e := p.eps[uid]
	if e == nil {
		return
	}
	delete(p.eps, uid)
	for _, n := range e.names {
		if h := slices.DeleteFunc(p.holders[n], func(u types.UID) bool { return u == uid }); len(h) > 0 {
			p.holders[n] = h
		} else {
			delete(p.holders, n)
		}
	}
}

// changes compares eps with what was published: those added or changed
// (another resourceVersion) and the UIDs of those removed.
func (p *published) changes(eps []*extdnsv1alpha1.DNSEndpoint) (changed []*extdnsv1alpha1.DNSEndpoint, removed []types.UID) {
	p.pass++
	seen := 0
	for _, ep := range eps {
		e := p.eps[ep.UID]
		if e == nil || e.version != ep.ResourceVersion {
			changed = append(changed, ep)
		}
		if e != nil && e.seen != p.pass {
			e.seen = p.pass
			seen++
		}
	}
	if seen < len(p.eps) {
		for uid, e := range p.eps {
			if e.seen != p.pass {
				removed = append(removed, uid)
			}
		}
	}
	return changed, removed
}

// affected returns the names of changed and removed DNSEndpoints, before and
// after, and which DNSEndpoints hold any of those names: every one of them
// must be converted again, as a name's plan needs all its desired record
// sets (and the first DNSEndpoint, in order, that asks for it).
func (p *published) affected(changed []*extdnsv1alpha1.DNSEndpoint, removed []types.UID) (names map[string]bool, holders map[types.UID]bool) {
	names = map[string]bool{}
	holders = map[types.UID]bool{}
	for _, ep := range changed {
		if e := p.eps[ep.UID]; e != nil {
			for _, n := range e.names {
				names[n] = true
			}
		}
		for _, n := range endpointNames(ep) {
			names[n] = true
		}
		holders[ep.UID] = true
	}
	for _, uid := range removed {
		for _, n := range p.eps[uid].names {
			names[n] = true
		}
	}
	for n := range names {
		for _, uid := range p.holders[n] {
			holders[uid] = true
		}
	}
	return names, holders
}

// update records a successful plan of names, after changed and removed.
func (p *published) update(changed []*extdnsv1alpha1.DNSEndpoint, removed []types.UID, names map[string]bool, conflicts []dnsprovider.Conflict) {
	for _, uid := range removed {
		p.remove(uid)
	}
	for _, ep := range changed {
		p.remove(ep.UID)
		p.add(ep)
	}
	for n := range names {
		delete(p.conflicts, n)
	}
	for _, c := range conflicts {
		p.conflicts[c.Name] = append(p.conflicts[c.Name], c)
	}
}

// allConflicts returns the conflicts remembered outside names, with
// planned (the conflicts of names), sorted by name as a full plan's are.
func (p *published) allConflicts(names map[string]bool, planned []dnsprovider.Conflict) []dnsprovider.Conflict {
	out := slices.Clone(planned)
	for _, n := range slices.Sorted(maps.Keys(p.conflicts)) {
		if !names[n] {
			out = append(out, p.conflicts[n]...)
		}
	}
	slices.SortStableFunc(out, func(a, b dnsprovider.Conflict) int { return strings.Compare(a.Name, b.Name) })
	return out
}
