package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// printTable writes header and rows, each a line of tab-separated cells, as
// one aligned table.
func printTable(w io.Writer, header string, rows []string) error {
	if s, ok := w.(*sections); ok {
		s.add(strings.TrimPrefix(header, "\n"), rows)
		return nil
	}
	t := newTable(w)
	fmt.Fprintln(t, header)
	for _, r := range rows {
		fmt.Fprintln(t, r)
	}
	return t.Flush()
}

// printSection writes a table as printTable does, after a blank line;
// nothing when there are no rows.
func printSection(w io.Writer, header string, rows []string) error {
	if len(rows) == 0 {
		return nil
	}
	return printTable(w, "\n"+header, rows)
}

// sections collects the tables status prints, for -o json and -o yaml:
// printTable hands its rows to a *sections instead of aligning them, so
// that the structured output has every row the table has, and no second
// way of reading the federation to drift from the first.
type sections struct {
	rows map[string][]map[string]string
}

// Write drops the blank lines between tables.
func (s *sections) Write(b []byte) (int, error) { return len(b), nil }

// sectionNames are the JSON names of status's tables, by their first
// column.
var sectionNames = map[string]string{
	"CLUSTER":            "clusters",
	"SERVICE":            "services",
	"DEPLOYMENT":         "deployments",
	"BALANCER":           "balancers",
	"GATEWAY OR INGRESS": "gateways",
	"EXPORTED SERVICE":   "exports",
	"DNSENDPOINT":        "refused",
}

// add records a table: each row an object keyed by its columns' names
// (lower case, "_" for a space), empty cells left out, and the first
// cell, which the table leaves empty on an object's second and later
// rows, repeated so that every row stands alone.
func (s *sections) add(header string, rows []string) {
	cols := strings.Split(header, "\t")
	name := sectionNames[cols[0]]
	if name == "" {
		name = strings.ToLower(strings.ReplaceAll(cols[0], " ", "_"))
	}
	if s.rows == nil {
		s.rows = map[string][]map[string]string{}
	}
	if _, ok := s.rows[name]; !ok {
		s.rows[name] = []map[string]string{}
	}
	first := ""
	for _, r := range rows {
		obj := map[string]string{}
		for i, cell := range strings.Split(r, "\t") {
			cell = strings.TrimSpace(ansiRE.ReplaceAllString(cell, ""))
			if i == 0 {
				if cell == "" {
					cell = first
				} else {
					first = cell
				}
			}
			if cell != "" && i < len(cols) {
				obj[strings.ToLower(strings.ReplaceAll(cols[i], " ", "_"))] = cell
			}
		}
		s.rows[name] = append(s.rows[name], obj)
	}
}

// print writes the tables as one JSON or YAML object, a list of rows under
// each table's name.
func (s *sections) print(w io.Writer, format string) error {
	out := s.rows
	if format == "yaml" {
		b, err := yaml.Marshal(out)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
