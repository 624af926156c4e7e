package dnsprovider

import (
	"maps"
	"slices"
	"strings"
)

// Planner computes plans for one federation's records.
type Planner struct {
	Registry Registry
}

// Plan computes the changes that make current (a zone's normalised listing)
// match desired, for the names this federation owns or may claim. desired is
// normalised here (a provider's Adjust has usually done it already); a
// record set that is invalid, outside the zone, or at a mark's name becomes a
// conflict. Records at a name without this owner's mark are never changed:
// a desired name held by someone else becomes a conflict.
func (pl Planner) Plan(zone string, desired, current []RecordSet) Plan {
	zone = NormalizeName(zone)
	p := Plan{Zone: zone}
	reg := pl.Registry

	want := map[string][]RecordSet{}
	resource := map[string]string{}
	for _, d := range desired {
		n, err := Normalize(d)
		switch {
		case err != nil:
			p.Conflicts = append(p.Conflicts, Conflict{Name: NormalizeName(d.Name), Resource: d.Resource, Reason: "invalid: " + err.Error()})
			continue
		case !InZone(n.Name, zone):
			p.Conflicts = append(p.Conflicts, Conflict{Name: n.Name, Resource: n.Resource, Reason: "not in zone " + zone})
			continue
		case !IsManagedType(n.Type):
			p.Conflicts = append(p.Conflicts, Conflict{Name: n.Name, Resource: n.Resource, Reason: "record type " + n.Type + " is not one kfed publishes"})
			continue
		}
		if _, isMark := reg.GuardedName(n.Name); isMark {
			p.Conflicts = append(p.Conflicts, Conflict{Name: n.Name, Resource: n.Resource, Reason: "name is reserved for ownership records (prefix " + reg.Prefix + ")"})
			continue
		}
		want[n.Name] = append(want[n.Name], n)
		if resource[n.Name] == "" {
			resource[n.Name] = n.Resource
		}
	}

	have := map[string][]RecordSet{}
	marks := map[string]RecordSet{}
	for _, c := range current {
		if !IsManagedType(c.Type) {
			continue
		}
		if guarded, isMark := reg.GuardedName(c.Name); isMark && c.Type == TypeTXT {
			marks[guarded] = c
			continue
		}
		have[c.Name] = append(have[c.Name], c)
	}

	names := map[string]bool{}
	for n := range want {
		names[n] = true
	}
	for n, m := range marks {
		if mk, ok := ParseMark(m); ok && mk.Owner == reg.OwnerID {
			names[n] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		pl.planName(&p, name, resource[name], want[name], have[name], marks[name])
	}
	slices.SortStableFunc(p.Conflicts, func(a, b Conflict) int { return strings.Compare(a.Name, b.Name) })
	return p
}

// planName plans one name: its records and its mark.
func (pl Planner) planName(p *Plan, name, resource string, want, have []RecordSet, markRS RecordSet) {
	hasMark := markRS.Name != ""
	mark, isKfed := ParseMark(markRS)
	mine := hasMark && isKfed && mark.Owner == pl.Registry.OwnerID
	if hasMark && !mine {
		if len(want) > 0 {
			who := "a TXT record kfed did not write"
			if isKfed {
				who = "federation " + mark.Owner
			}
			p.Conflicts = append(p.Conflicts, Conflict{Name: name, Resource: resource, Reason: "owned by " + who + " (" + markRS.Name + ")"})
		}
		return
	}
	owned, foreignTypes := splitOwned(have, mine, mark)
	if clash := clashes(want, foreignTypes); len(clash) > 0 {
		// Leave the name as it is, this owner's records included: half a
		// change (say, A records gone and no CNAME) would be worse.
		p.Conflicts = append(p.Conflicts, Conflict{Name: name, Resource: resource,
			Reason: "holds " + strings.Join(clash, ", ") + " records without kfed's ownership mark"})
		return
	}
	changes := recordChanges(name, want, owned)
	if c, ok := pl.markChange(name, resource, want, mine, mark, markRS); ok {
		changes = append(changes, c)
	}
	slices.SortStableFunc(changes, func(a, b Change) int { return int(a.Action) - int(b.Action) })
	p.Changes = append(p.Changes, changes...)
}

// splitOwned divides what a name holds into the records this owner's mark
// covers and the types of everyone else's.
func splitOwned(have []RecordSet, mine bool, mark Mark) (owned []RecordSet, foreignTypes map[string]bool) {
	foreignTypes = map[string]bool{}
	for _, h := range have {
		if mine && mark.Owns(h.Type) {
			owned = append(owned, h)
		} else {
			foreignTypes[h.Type] = true
		}
	}
	return owned, foreignTypes
}

// clashes are the types someone else holds at a name that publishing want
// would touch: a desired type of theirs, their CNAME, or anything of theirs
// beside a desired CNAME. Sorted.
func clashes(want []RecordSet, foreignTypes map[string]bool) []string {
	wantTypes := map[string]bool{}
	for _, w := range want {
		wantTypes[w.Type] = true
	}
	var clash []string
	for t := range foreignTypes {
		if wantTypes[t] || t == TypeCNAME || (wantTypes[TypeCNAME] && len(foreignTypes) > 0) {
			clash = append(clash, t)
		}
	}
	slices.Sort(clash)
	return clash
}

// recordChanges turns owned into want at name: creates, updates, deletes.
func recordChanges(name string, want, owned []RecordSet) []Change {
	var changes []Change
	wantByKey := map[Key]RecordSet{}
	for _, w := range want {
		wantByKey[w.Key()] = w
	}
	haveByKey := map[Key]RecordSet{}
	for _, h := range owned {
		haveByKey[h.Key()] = h
		w, ok := wantByKey[h.Key()]
		switch {
		case !ok:
			changes = append(changes, Change{Action: Delete, Old: h, Group: name})
		case !w.Equal(h):
			changes = append(changes, Change{Action: Update, Old: h, New: w, Group: name})
		}
	}
	for _, w := range want {
		if _, ok := haveByKey[w.Key()]; !ok {
			changes = append(changes, Change{Action: Create, New: w, Group: name})
		}
	}
	return changes
}

// markChange is the change to the name's mark, which lists the types this
// owner holds there afterwards; ok is false when the mark stays as it is.
func (pl Planner) markChange(name, resource string, want []RecordSet, mine bool, mark Mark, markRS RecordSet) (Change, bool) {
	reg := pl.Registry
	types := map[string]bool{}
	for _, w := range want {
		types[w.Type] = true
	}
	var ttl int64 = DefaultTTL
	for _, w := range want {
		if w.TTL > 0 {
			ttl = w.TTL
			break
		}
	}
	newMark := Mark{Owner: reg.OwnerID, Resource: resource, Types: slices.Sorted(maps.Keys(types))}
	switch {
	case len(types) == 0 && mine:
		return Change{Action: Delete, Old: markRS, Group: name}, true
	case len(types) == 0:
		return Change{}, false
	case !mine:
		return Change{Action: Create, New: reg.Record(name, newMark, ttl), Group: name}, true
	}
	if newMark.Resource == "" {
		newMark.Resource = mark.Resource
	}
	if nm := reg.Record(name, newMark, markRS.TTL); !nm.Equal(markRS) {
		return Change{Action: Update, Old: markRS, New: nm, Group: name}, true
	}
	return Change{}, false
}
