package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kfed-io/kfed/planner"
)

// newPlanCommand returns `kfed plan`, the replica planner on the command
// line: one JSON request on stdin, one JSON plan on stdout. The contract is
// in DESIGN.md; all the logic is in package planner.
func newPlanCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "plan",
		Short: "Plan how many replicas each cluster runs, from a JSON request on stdin",
		Long: `Plan reads one JSON object on stdin and writes the plan as one JSON object on stdout.

Input fields: key, total (required), clusters (required), rebalance, preferences
("<cluster>" or "*" → minReplicas, maxReplicas, weight), capacity, current; and for a
Balancer: policy ("priority" with targetOrder, or "proportional" with proportions)
and notStarted. Output: {"replicas": {...}, "overflow": {...}}.

See docs/replica-planning.md.`,
		Example: `  echo '{"total": 50, "clusters": ["A", "B", "C"], "preferences": {"*": {"weight": 1}}, "capacity": {"C": 6}}' | kfed plan`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, err := planner.DecodeRequest(cmd.InOrStdin())
			if err != nil {
				return fmt.Errorf("reading the request on stdin: %w", err)
			}
			resp, err := req.Plan()
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(resp)
		},
	}
}
