package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// palette colours status text for a terminal: green for what is as it should
// be, red for what is wrong, yellow for what is not known or not there yet.
// The zero palette leaves text as it is. With detail (-o wide), a
// condition says its reason and message even when it is as it should be.
type palette struct{ on, detail bool }

const (
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

// choosePalette reads --color: auto colours a terminal unless NO_COLOR is
// set (https://no-color.org).
func choosePalette(flag string, w io.Writer, noColor bool) (palette, error) {
	switch flag {
	case "always":
		return palette{on: true}, nil
	case "never":
		return palette{}, nil
	case "auto":
		return palette{on: !noColor && isTerminal(w)}, nil
	default:
		return palette{}, fmt.Errorf("--color must be auto, always or never, not %q", flag)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (p palette) paint(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return code + s + ansiReset
}

func (p palette) good(s string) string { return p.paint(ansiGreen, s) }
func (p palette) bad(s string) string  { return p.paint(ansiRed, s) }
func (p palette) warn(s string) string { return p.paint(ansiYellow, s) }

// condition is "Type=Status", with "(Reason: Message)" when the condition
// is not as it should be (goodWhenTrue says which way that is): green when
// it is, red when it is not, yellow when Unknown.
func (p palette) condition(typ, status, reason, message string, goodWhenTrue bool) string {
	s := strings.TrimPrefix(typ, "kfed.io/") + "=" + status
	if (status == "True") == goodWhenTrue {
		if p.detail {
			s += " (" + reason + ": " + message + ")"
		}
		return p.good(s)
	}
	s += " (" + reason + ": " + message + ")"
	if status == "Unknown" {
		return p.warn(s)
	}
	return p.bad(s)
}

func (p palette) ready(ready bool) string {
	if ready {
		return p.good("true")
	}
	return p.bad("false")
}

// shard colours status.Shard's state: kfed's shard green, one it cannot see
// red, one absent or not kfed's yellow.
func (p palette) shard(state string) string {
	switch {
	case state == "created" || state == "adopted":
		return p.good(state)
	case state == "absent" || state == "not kfed's":
		return p.warn(state)
	default: // unreachable, unknown (why)
		return p.bad(state)
	}
}

// pending colours an address not assigned yet.
func (p palette) pending(s string) string {
	if strings.HasSuffix(s, "<pending>") {
		return p.warn(s)
	}
	return s
}

// verdict colours status.Votes.Describe: healthy green, out red.
func (p palette) verdict(s string) string {
	switch {
	case strings.HasPrefix(s, "healthy"):
		return p.good(s)
	case strings.HasPrefix(s, "out"):
		return p.bad(s)
	}
	return s
}

// table aligns tab-separated cells into columns two spaces apart, as
// text/tabwriter does, but measures a cell without its colour escapes, which
// tabwriter would count as width. Write rows to it, then Flush.
type table struct {
	w   io.Writer
	buf bytes.Buffer
}

func newTable(w io.Writer) *table { return &table{w: w} }

func (t *table) Write(b []byte) (int, error) { return t.buf.Write(b) }

var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

func visibleWidth(s string) int { return utf8.RuneCountInString(ansiRE.ReplaceAllString(s, "")) }

// Flush writes the rows aligned. A line's last cell sets no column's width.
func (t *table) Flush() error {
	text := strings.TrimSuffix(t.buf.String(), "\n")
	t.buf.Reset()
	if text == "" {
		return nil
	}
	var rows [][]string
	var widths []int
	for _, line := range strings.Split(text, "\n") {
		cells := strings.Split(line, "\t")
		for i, c := range cells[:len(cells)-1] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], visibleWidth(c))
		}
		rows = append(rows, cells)
	}
	var out strings.Builder
	for _, cells := range rows {
		var line strings.Builder
		for i, c := range cells {
			line.WriteString(c)
			if i < len(cells)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-visibleWidth(c)+2))
			}
		}
		out.WriteString(strings.TrimRight(line.String(), " "))
		out.WriteByte('\n')
	}
	_, err := io.WriteString(t.w, out.String())
	return err
}
