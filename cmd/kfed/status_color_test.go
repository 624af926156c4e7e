package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestStatusColoursWhatIsWrongOnlyForATerminal(t *testing.T) {
	on, off := palette{on: true}, palette{}
	tests := []struct {
		name     string
		paint    func(p palette) string
		plain    string
		coloured string
	}{
		{"a condition as it should be is green",
			func(p palette) string { return p.condition("kfed.io/Published", "True", "", "", true) },
			"Published=True", ansiGreen + "Published=True" + ansiReset},
		{"a failed condition is red with its reason",
			func(p palette) string {
				return p.condition("kfed.io/Balanced", "False", "TargetNotFound", "no b", true)
			},
			"Balanced=False (TargetNotFound: no b)", ansiRed + "Balanced=False (TargetNotFound: no b)" + ansiReset},
		{"a condition that reports a problem when True is red when True",
			func(p palette) string {
				return p.condition("kfed.io/Fallback", "True", "StartupTimeout", "pods of b", false)
			},
			"Fallback=True (StartupTimeout: pods of b)", ansiRed + "Fallback=True (StartupTimeout: pods of b)" + ansiReset},
		{"a problem condition that is False is green",
			func(p palette) string { return p.condition("kfed.io/Fallback", "False", "", "", false) },
			"Fallback=False", ansiGreen + "Fallback=False" + ansiReset},
		{"an Unknown condition is yellow",
			func(p palette) string { return p.condition("kfed.io/Healthy", "Unknown", "NoChecker", "none", true) },
			"Healthy=Unknown (NoChecker: none)", ansiYellow + "Healthy=Unknown (NoChecker: none)" + ansiReset},
		{"a healthy verdict is green", func(p palette) string { return p.verdict("healthy (0/3 down)") },
			"healthy (0/3 down)", ansiGreen + "healthy (0/3 down)" + ansiReset},
		{"an endpoint out of DNS is red", func(p palette) string { return p.verdict("out (2/3 down: a, b)") },
			"out (2/3 down: a, b)", ansiRed + "out (2/3 down: a, b)" + ansiReset},
		{"no verdict stays plain", func(p palette) string { return p.verdict("-") }, "-", "-"},
		{"a member not ready is red", func(p palette) string { return p.ready(false) }, "false", ansiRed + "false" + ansiReset},
		{"a shard kfed created is green", func(p palette) string { return p.shard("created") }, "created", ansiGreen + "created" + ansiReset},
		{"an unreachable shard is red", func(p palette) string { return p.shard("unreachable") }, "unreachable", ansiRed + "unreachable" + ansiReset},
		{"a shard that is not kfed's is yellow", func(p palette) string { return p.shard("not kfed's") }, "not kfed's", ansiYellow + "not kfed's" + ansiReset},
		{"a pending address is yellow", func(p palette) string { return p.pending("→ <pending>") }, "→ <pending>", ansiYellow + "→ <pending>" + ansiReset},
		{"an address stays plain", func(p palette) string { return p.pending("10.0.0.1") }, "10.0.0.1", "10.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.paint(off); got != tt.plain {
				t.Errorf("without colour %q, want %q", got, tt.plain)
			}
			if got := tt.paint(on); got != tt.coloured {
				t.Errorf("with colour %q, want %q", got, tt.coloured)
			}
		})
	}
}

func TestStatusTableAlignsColouredCellsAsPlainOnes(t *testing.T) {
	render := func(p palette) string {
		var buf bytes.Buffer
		tw := newTable(&buf)
		fmt.Fprintln(tw, "SERVICE\tCLUSTER\tCLUSTER READY\tSHARD\tHEALTH")
		fmt.Fprintf(tw, "shop/web\tcluster-1\t%s\t%s\t%s\n", p.ready(true), p.shard("created"), p.verdict("healthy (0/2 down)"))
		fmt.Fprintf(tw, "\tcluster-22\t%s\t%s\t%s\n", p.ready(false), p.shard("unreachable"), p.verdict("out (2/2 down: a, b)"))
		fmt.Fprintf(tw, "\t%s\t\t\t%s\t\n", p.pending("→ <pending>"), p.condition("kfed.io/Published", "True", "", "", true))
		if err := tw.Flush(); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	plain := render(palette{})
	want := "SERVICE   CLUSTER      CLUSTER READY  SHARD        HEALTH\n" +
		"shop/web  cluster-1    true           created      healthy (0/2 down)\n" +
		"          cluster-22   false          unreachable  out (2/2 down: a, b)\n" +
		"          → <pending>                              Published=True\n"
	if plain != want {
		t.Errorf("plain table\n%s\nwant\n%s", plain, want)
	}
	coloured := render(palette{on: true})
	if !strings.Contains(coloured, ansiRed+"unreachable"+ansiReset) {
		t.Errorf("coloured table has no red:\n%q", coloured)
	}
	if got := ansiRE.ReplaceAllString(coloured, ""); got != plain {
		t.Errorf("coloured table without its escapes\n%s\ndiffers from the plain one\n%s", got, plain)
	}
}

func TestStatusColourFlag(t *testing.T) {
	tests := []struct {
		name    string
		flag    string
		noColor bool
		want    bool
	}{
		{"auto does not colour a pipe or file", "auto", false, false},
		{"always colours even a pipe", "always", false, true},
		{"never never colours", "never", false, false},
		{"NO_COLOR keeps auto plain", "auto", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := choosePalette(tt.flag, &bytes.Buffer{}, tt.noColor)
			if err != nil {
				t.Fatal(err)
			}
			if p.on != tt.want {
				t.Errorf("colour %t, want %t", p.on, tt.want)
			}
		})
	}
	if _, err := choosePalette("rainbow", &bytes.Buffer{}, false); err == nil {
		t.Error("--color rainbow accepted")
	}
}

func TestStatusSectionsFollowABlankLineOrAreLeftOut(t *testing.T) {
	for _, tt := range []struct {
		name string
		rows []string
		want string
	}{
		{"no rows: no section, no blank line", nil, "before\n"},
		{"rows: a blank line, the header, the rows aligned", []string{"shop/web\tcluster-1\t3", "\t→ total\t3"},
			"before\n\nDEPLOYMENT  CLUSTER    PLANNED\nshop/web    cluster-1  3\n            → total    3\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			buf.WriteString("before\n")
			if err := printSection(&buf, "DEPLOYMENT\tCLUSTER\tPLANNED", tt.rows); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
