package dnsprovider

import (
	"fmt"
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
