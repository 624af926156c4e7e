package planner

import (
	"errors"
	"fmt"
	"io"
)

// Request is the input of `kfed plan`, one JSON object (see DESIGN.md,
// "Contract: kfed plan"). Without Policy it plans a federated Deployment by
// Preferences; with Policy it plans a Balancer.
type Request struct {
	Key string `json:"key"`
	// Total is required.
	Total     *int64 `json:"total"`
	Rebalance bool   `json:"rebalance"`
	// Clusters is required; it may be empty.
	Clusters    []string                      `json:"clusters"`
	Preferences map[string]ClusterPreferences `json:"preferences"`
	Capacity    map[string]int64              `json:"capacity"`
	Current     map[string]int64              `json:"current"`

	Policy      Policy           `json:"policy"`
	TargetOrder []string         `json:"targetOrder"`
	Proportions map[string]int64 `json:"proportions"`
	NotStarted  map[string]int64 `json:"notStarted"`
}

// Response is the output of `kfed plan`. Both maps are always present, so
// that an empty overflow encodes as {} rather than null.
type Response struct {
	Replicas map[string]int64 `json:"replicas"`
	Overflow map[string]int64 `json:"overflow"`
}

var requestFields = &object{
	fields: []string{
		"key", "total", "rebalance", "clusters", "preferences", "capacity", "current",
		"policy", "targetOrder", "proportions", "notStarted",
	},
	values: map[string]*object{"preferences": clusterFields},
}

// DecodeRequest reads one request from r. Malformed JSON, fields the
// contract does not have, and anything after the object are errors.
func DecodeRequest(r io.Reader) (Request, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Request{}, err
	}
	var req Request
	if err := decodeStrict(data, &req, requestFields); err != nil {
		return Request{}, err
	}
	return req, nil
}

// Plan validates the request and plans it. Invalid input gives an error
// that names the offending field; it never panics.
func (r Request) Plan() (Response, error) {
	res, err := r.plan()
	if err != nil {
		return Response{}, fmt.Errorf("invalid request: %w", err)
	}
	return Response(res), nil
}

func (r Request) plan() (Result, error) {
	if r.Total == nil {
		return Result{}, errors.New(`"total" is required: the number of replicas to place`)
	}
	if r.Clusters == nil {
		return Result{}, errors.New(`"clusters" is required: the clusters that can take replicas now`)
	}
	if r.Policy == "" {
		switch {
		case r.TargetOrder != nil:
			return Result{}, errors.New(`targetOrder only applies with "policy": "priority"`)
		case r.Proportions != nil:
			return Result{}, errors.New(`proportions only apply with "policy": "proportional"`)
		case r.NotStarted != nil:
			return Result{}, errors.New(`notStarted only applies with a Balancer policy ("priority" or "proportional")`)
		}
		return Plan(Input{
			Key:         r.Key,
			Total:       *r.Total,
			Clusters:    r.Clusters,
			Preferences: Preferences{Rebalance: r.Rebalance, Clusters: r.Preferences},
			Capacity:    r.Capacity,
			Current:     r.Current,
		})
	}
	switch {
	case r.Policy != Priority && r.Policy != Proportional:
		return Result{}, fmt.Errorf(`unknown policy %q (want "priority" or "proportional", or no policy to plan by preferences)`, r.Policy)
	case r.Rebalance:
		return Result{}, fmt.Errorf("rebalance does not apply to policy %q: a Balancer always follows its policy", r.Policy)
	case r.Capacity != nil:
		return Result{}, fmt.Errorf("capacity does not apply to policy %q: report pods that do not start in notStarted", r.Policy)
	}
	return PlanBalancer(BalancerInput{
		Key:         r.Key,
		Total:       *r.Total,
		Targets:     r.Clusters,
		Preferences: r.Preferences,
		Policy:      r.Policy,
		TargetOrder: r.TargetOrder,
		Proportions: r.Proportions,
		Current:     r.Current,
		NotStarted:  r.NotStarted,
	})
}
