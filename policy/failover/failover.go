// Package failover decides which place of an active/passive order serves a
// federated name (docs/design.md, "Failover"): the first place in the order
// that has a healthy cluster with ready replicas, unless an operator pinned
// another; once failed over, back to a better place only after that place
// has been up for a hold time, so that a flapping primary does not flip DNS
// every probe interval. It is pure — no Kubernetes, no DNS — so that every
// source of names (Services, Gateways) and every backend share one rule.
package failover

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// DefaultHold is how long a better place must stay up before traffic
// returns to it: three of the health checkers' default 10 s intervals, long
// enough that one passing probe after a failure (rise is 2) does not bring
// traffic back to a place that fails again.
const DefaultHold = 30 * time.Second

// Cluster is one cluster of the name, as the failover decision sees it.
type Cluster struct {
	Name   string
	Region string
	Zones  []string
	// Healthy is the checkers' quorum verdict.
	Healthy bool
	// Weight is the cluster's ready replicas (1 where no federated
	// Deployment backs the name): 0 is no replica to serve.
	Weight int
}

// In reports whether the cluster is in place: the place names it, its
// region or one of its zones.
func (c Cluster) In(place string) bool {
	return c.Name == place || c.Region == place || slices.Contains(c.Zones, place)
}

// Policy is what the user asked: the places in order, a pinned place ("" for
// none) and the failback hold.
type Policy struct {
	Order []string
	Pin   string
	Hold  time.Duration
}

// State is what a decision leaves for the next one: the active place and
// since when, and a better place waiting out the hold and since when it has
// been up. It is kept with the published records, so that it outlives the
// controller that decided it.
type State struct {
	Active         string    `json:"active,omitempty"`
	Since          time.Time `json:"since,omitzero"`
	Candidate      string    `json:"candidate,omitempty"`
	CandidateSince time.Time `json:"candidateSince,omitzero"`
}

// Encode is s as the JSON the records keep.
func (s State) Encode() string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("encoding a failover state cannot fail: %v", err))
	}
	return string(b)
}

// ParseState reads an encoded State; "" is the zero State.
func ParseState(s string) (State, error) {
	var st State
	if s == "" {
		return st, nil
	}
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		return State{}, fmt.Errorf("failover state %q: %w", s, err)
	}
	return st, nil
}

// Reasons of a decision.
const (
	// ReasonPrimary: the first place of the order serves.
	ReasonPrimary = "Primary"
	// ReasonFailedOver: a later place serves, the earlier ones being down.
	ReasonFailedOver = "FailedOver"
	// ReasonFailbackPending: a better place is up again and serves once it
	// has been up for the hold.
	ReasonFailbackPending = "FailbackPending"
	// ReasonPinned: the pinned place serves.
	ReasonPinned = "Pinned"
	// ReasonPinnedPlaceDown: the pinned place has no healthy cluster with
	// replicas, so the order decides.
	ReasonPinnedPlaceDown = "PinnedPlaceDown"
	// ReasonNoPlaceUp: no place of the order is up: every cluster serves
	// (fail open, as when no endpoint is healthy anywhere).
	ReasonNoPlaceUp = "NoPlaceUp"
)

// Decision is which place serves, and why.
type Decision struct {
	// State is the state to keep; its Active is "" when no place is up.
	State State
	// Clusters are the active place's clusters; nil when no place is up,
	// when every cluster serves.
	Clusters []string
	Reason   string
	Message  string
	// Due is how long until the decision may change by itself (a pending
	// failback's hold ends); 0 for never.
	Due time.Duration
}

// Switched reports whether d moved the name away from the place prev had
// active (to another place, or to every cluster).
func (d Decision) Switched(prev State) bool {
	return prev.Active != "" && d.State.Active != prev.Active
}

// Decide chooses the active place for clusters under p, given the state the
// last decision left and the time.
func Decide(p Policy, clusters []Cluster, prev State, now time.Time) Decision {
	up := func(place string) bool {
		return slices.ContainsFunc(clusters, func(c Cluster) bool { return c.In(place) && c.Healthy && c.Weight > 0 })
	}
	first := slices.IndexFunc(p.Order, up)
	var d Decision
	switch {
	case p.Pin != "" && up(p.Pin):
		d.State.Active, d.Reason = p.Pin, ReasonPinned
		d.Message = "pinned to " + p.Pin
	case first < 0:
		d.Reason, d.Message = ReasonNoPlaceUp, "no place of "+fmt.Sprint(p.Order)+" has a healthy cluster with ready replicas; every cluster serves"
		return d
	default:
		d = automatic(p, first, up, prev, now)
		if p.Pin != "" {
			d.Reason = ReasonPinnedPlaceDown
			d.Message = "pinned to " + p.Pin + ", which has no healthy cluster with ready replicas; " + d.Message
		}
	}
	d.State.Since = now
	if d.State.Active == prev.Active {
		d.State.Since = prev.Since
	}
	for _, c := range clusters {
		if c.In(d.State.Active) {
			d.Clusters = append(d.Clusters, c.Name)
		}
	}
	return d
}

// automatic follows the order: a place that is down is left at once; a
// better place than the active one takes over only once it has been up for
// the hold, counted from when it was first seen up.
func automatic(p Policy, first int, up func(string) bool, prev State, now time.Time) Decision {
	best := p.Order[first]
	at := slices.Index(p.Order, prev.Active)
	var d Decision
	switch {
	case at < 0 || !up(prev.Active) || at <= first:
		// First decision, a place no longer in the order, the active place
		// down, or the best place active already.
		d.State.Active = best
	default:
		since := now
		if prev.Candidate == best && !prev.CandidateSince.After(now) {
			// A time ahead of now (another replica's clock, kept in the
			// state) would stretch the hold: the hold starts now then.
			since = prev.CandidateSince
		}
		if wait := since.Add(p.Hold).Sub(now); wait > 0 {
			d.State = State{Active: prev.Active, Candidate: best, CandidateSince: since}
			d.Reason, d.Due = ReasonFailbackPending, wait
			d.Message = fmt.Sprintf("serving %s; %s is up again and serves once it has been up for %v (in %v)",
				prev.Active, best, p.Hold, wait.Round(time.Second))
			return d
		}
		d.State.Active = best
	}
	if d.State.Active == p.Order[0] {
		d.Reason, d.Message = ReasonPrimary, "serving "+d.State.Active+", the first place of the order"
	} else {
		d.Reason = ReasonFailedOver
		d.Message = fmt.Sprintf("serving %s: %v before it have no healthy cluster with ready replicas", d.State.Active, p.Order[:first])
	}
	return d
}
