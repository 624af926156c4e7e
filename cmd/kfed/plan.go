package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/kfed-io/kfed/policy/planner"
)

// newPlanCommand returns `kfed plan`, the replica planner on the command
// line: one JSON request on stdin, one JSON plan on stdout. The contract is
// in DESIGN.md; all the logic is in package planner.
func newPlanCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "plan",
		Short: "Plan how many replicas each cluster runs, from a JSON request on stdin",
		Long: `Plan reads one JSON object on stdin and writes the plan as one JSON object on stdout.

Input fields and their defaults:
  total        required; the replicas to place
  clusters     required; the clusters that can take replicas
  key          "" ; the object (namespace/name): breaks ties between equal clusters
  rebalance    false; without it, running replicas (current) stay where they are
  preferences  per cluster, or "*" for every cluster without its own entry:
                 weight       0 (a cluster without an entry, or with weight 0, gets no
                              replicas beyond its minReplicas: give "*": {"weight": 1}
                              to spread evenly)
                 minReplicas  0
                 maxReplicas  no limit
  capacity     no limit; replicas a cluster can run at most
  current      none; replicas each cluster runs now
For a Balancer:
  policy       "" (weighted); "priority" with targetOrder, or "proportional" with
               proportions
  notStarted   none; pods pending past the startup timeout, per target

Output: {"replicas": {...}, "overflow": {...}}, and "unplaced": N when N of the
total have no cluster because maxReplicas or weight 0 keep them out ("overflow" is
what capacity alone keeps out).

Exit status: 0 for a plan; 1 for invalid input, or a plan that places none of a
non-zero total (every cluster has weight 0 and no minimum). A plan that places some
but not all replicas exits 0 and says so on stderr.

See docs/replica-planning.md.`,
		Example: `  # 50 replicas spread evenly over three clusters, C holding at most 6:
  echo '{"total": 50, "clusters": ["A", "B", "C"], "preferences": {"*": {"weight": 1}}, "capacity": {"C": 6}}' | kfed plan

  # Twice as many in A as in B:
  echo '{"total": 9, "clusters": ["A", "B"], "preferences": {"A": {"weight": 2}, "B": {"weight": 1}}}' | kfed plan`,
		Args: maxArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, err := planner.DecodeRequest(cmd.InOrStdin())
			if err != nil {
				return fmt.Errorf("reading the request on stdin: %w", err)
			}
			resp, err := req.Plan()
			if err != nil {
				return err
			}
			out := planOutput{Response: resp, Unplaced: unplaced(*req.Total, resp)}
			if out.Unplaced > 0 && out.Unplaced == *req.Total {
				return fmt.Errorf("invalid request: none of the %d replicas has a cluster: every cluster has weight 0 and no minReplicas "+
					`(a cluster without a preferences entry has weight 0; add "preferences": {"*": {"weight": 1}} to spread evenly)`, *req.Total)
			}
			if out.Unplaced > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "kfed plan: %d of %d replicas have no cluster: maxReplicas or weight 0 keeps them out of %v\n",
					out.Unplaced, *req.Total, slices.Sorted(maps.Keys(resp.Replicas)))
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
		},
	}
}

// planOutput is the plan as `kfed plan` writes it: the planner's response,
// and the replicas it left without a cluster when there are any.
type planOutput struct {
	planner.Response
	Unplaced int64 `json:"unplaced,omitempty"`
}

// unplaced is how many of total replicas the plan gives to no cluster and
// does not report as overflow. A Balancer's minimums may place more than
// total: nothing is unplaced then.
func unplaced(total int64, resp planner.Response) int64 {
	var placed int64
	for _, n := range resp.Replicas {
		placed += n
	}
	for _, n := range resp.Overflow {
		placed += n
	}
	return max(total-placed, 0)
}
