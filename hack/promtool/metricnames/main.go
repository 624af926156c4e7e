// Command metricnames parses PromQL expressions with Prometheus's own parser
// and says which metric names each one selects, so that kfed's tests can check
// that every metric its dashboard and alerts query is one its binaries expose.
//
// It reads a JSON array of expressions on stdin and writes a JSON array of
// {"expr", "metrics", "error"} on stdout, in the same order.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type result struct {
	Expr    string   `json:"expr"`
	Metrics []string `json:"metrics"`
	Error   string   `json:"error,omitempty"`
}

func main() {
	var exprs []string
	if err := json.NewDecoder(os.Stdin).Decode(&exprs); err != nil {
		fmt.Fprintln(os.Stderr, "metricnames: reading a JSON array of expressions:", err)
		os.Exit(1)
	}
	p := parser.NewParser(parser.Options{})
	out := make([]result, 0, len(exprs))
	for _, e := range exprs {
		r := result{Expr: e, Metrics: []string{}}
		expr, err := p.ParseExpr(e)
		if err != nil {
			r.Error = err.Error()
			out = append(out, r)
			continue
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			if name == "" {
				r.Error = fmt.Sprintf("selector %s names no metric", vs)
			} else if !slices.Contains(r.Metrics, name) {
				r.Metrics = append(r.Metrics, name)
			}
			return nil
		})
		slices.Sort(r.Metrics)
		out = append(out, r)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "metricnames:", err)
		os.Exit(1)
	}
}
