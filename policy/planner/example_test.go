package planner_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/kfed-io/kfed/policy/planner"
)

func ExamplePlan() {
	prefs, err := planner.ParsePreferences([]byte(`{"rebalance": true, "clusters": {"*": {"weight": 1}}}`))
	if err != nil {
		log.Fatal(err)
	}
	res, err := planner.Plan(planner.Input{
		Key:         "default/web",
		Total:       50,
		Clusters:    []string{"A", "B", "C"},
		Preferences: prefs,
		Capacity:    map[string]int64{"C": 6},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Replicas, res.Overflow)
	// Output: map[A:22 B:22 C:6] map[]
}

func ExampleDecodeRequest() {
	req, err := planner.DecodeRequest(strings.NewReader(`{"total": 10, "clusters": ["a", "b"],
		"policy": "priority", "targetOrder": ["a", "b"], "preferences": {"a": {"maxReplicas": 4}}}`))
	if err != nil {
		log.Fatal(err)
	}
	resp, err := req.Plan()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Replicas)
	// Output: map[a:4 b:6]
}
