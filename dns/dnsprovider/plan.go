package dnsprovider

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Action is what a Change does.
type Action int

// Actions, in the order a group applies them: deletes first, so that a name
// can change from A records to a CNAME (which allows no other data) within
// one atomic request.
const (
	Delete Action = iota
	Update
	Create
)

func (a Action) String() string {
	switch a {
	case Create:
		return "create"
	case Update:
		return "update"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Change is one record-set change. Old is what the zone held when it was
// listed (for Update and Delete), New what it should hold (Create and
// Update); providers turn Old into preconditions.
type Change struct {
	Action Action
	Old    RecordSet
	New    RecordSet
	// Group is the name the change belongs to: the record's name, or for an
	// ownership mark the name it guards. Changes of one group are applied
	// together.
	Group string
}

// Record returns the record set the change is about: New, or Old for a
// delete.
func (c Change) Record() RecordSet {
	if c.Action == Delete {
		return c.Old
	}
	return c.New
}

func (c Change) String() string {
	switch c.Action {
	case Create:
		return "+ " + c.New.String()
	case Delete:
		return "- " + c.Old.String()
	default:
		return "~ " + c.Old.String() + "\n  → " + c.New.String()
	}
}

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

// GroupChanges splits changes into runs with the same Group, sorting by group
// and, within one, deletes before updates before creates. The input is not
// modified.
func GroupChanges(changes []Change) [][]Change {
	sorted := slices.Clone(changes)
	slices.SortStableFunc(sorted, func(a, b Change) int {
		if c := strings.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return int(a.Action) - int(b.Action)
	})
	var groups [][]Change
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j].Group == sorted[i].Group {
			j++
		}
		groups = append(groups, sorted[i:j:j])
		i = j
	}
	return groups
}

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
