// Command grafanadashboard checks a Grafana dashboard JSON file against the
// dashboard model of github.com/grafana-tools/sdk, strictly: the file must
// decode into the model's types, and every field it sets must be one the
// model knows (a field the model drops, or decodes to another type, is an
// error). Grafana's own schema (its CUE kinds, the foundation SDK's Go types)
// is not served by the module proxy kfed builds from; this is the nearest
// typed model that is.
//
// The model predates a few fields of Grafana's dashboard schema (v1, the
// Dashboard kind): newer is the list of those, accepted without a model to
// check them against.
//
// Usage: grafanadashboard FILE; prints nothing and exits 0 when it conforms.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/grafana-tools/sdk"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: grafanadashboard FILE")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "grafanadashboard:", err)
		os.Exit(1)
	}
	problems, err := check(raw)
	if err != nil {
		fmt.Fprintln(os.Stderr, "grafanadashboard:", err)
		os.Exit(1)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}

// newer are fields of Grafana's dashboard schema that the sdk's model lacks:
// the dashboard's description, an annotation's builtIn and hide, and the
// fieldConfig of panel types the model gives none (stat).
var newer = regexp.MustCompile(`^\.description$|^\.annotations\.list\[\d+\]\.(builtIn|hide)$|^\.panels\[\d+\]\.fieldConfig$`)

// check decodes raw into sdk.Board, encodes it again, and reports every
// field of raw the round trip lost or changed the JSON type of.
func check(raw []byte) ([]string, error) {
	var board sdk.Board
	if err := json.Unmarshal(raw, &board); err != nil {
		return nil, fmt.Errorf("decoding as a Grafana dashboard: %w", err)
	}
	for i, p := range board.Panels {
		if p.OfType == sdk.CustomType {
			return nil, fmt.Errorf("panel %d (%q): type %q is not one the model types", i, p.Title, p.Type)
		}
	}
	back, err := json.Marshal(board)
	if err != nil {
		return nil, err
	}
	var want, got any
	if err := json.Unmarshal(raw, &want); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(back, &got); err != nil {
		return nil, err
	}
	var problems []string
	compare("", want, got, &problems)
	sort.Strings(problems)
	return problems, nil
}

func compare(path string, want, got any, problems *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s: an object, which the model decodes as %s", name(path), kind(got)))
			return
		}
		for k, v := range w {
			gv, ok := g[k]
			if !ok {
				if !empty(v) && !newer.MatchString(path+"."+k) {
					*problems = append(*problems, fmt.Sprintf("%s.%s: not a field of the dashboard model", name(path), k))
				}
				continue
			}
			compare(path+"."+k, v, gv, problems)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*problems = append(*problems, fmt.Sprintf("%s: a list of %d, which the model decodes as %s", name(path), len(w), kind(got)))
			return
		}
		for i := range w {
			compare(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], problems)
		}
	default:
		if want != nil && got != nil && reflect.TypeOf(want) != reflect.TypeOf(got) {
			*problems = append(*problems, fmt.Sprintf("%s: %s, which the model decodes as %s", name(path), kind(want), kind(got)))
		}
	}
}

// empty is a value whose loss changes nothing: Grafana reads a missing
// field as its zero value.
func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case string:
		return v == ""
	case float64:
		return v == 0
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

func kind(v any) string {
	if v == nil {
		return "null"
	}
	return strings.TrimPrefix(reflect.TypeOf(v).String(), "map[string]interface {}")
}

func name(path string) string {
	if path == "" {
		return "dashboard"
	}
	return "dashboard" + path
}
