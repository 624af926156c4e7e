package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kfed-io/kfed/internal/buildinfo"
)

func TestVersionSaysVersionRevisionAndGo(t *testing.T) {
	want := buildinfo.Get()
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, out string)
	}{
		{"kfed version prints one field a line", []string{"version"}, func(t *testing.T, out string) {
			for _, line := range []string{"version:  " + want.Version, "revision: " + want.Revision, "go:       " + want.GoVersion} {
				if !strings.Contains(out, line+"\n") {
					t.Errorf("output lacks %q:\n%s", line, out)
				}
			}
		}},
		{"kfed version -o json is the build as JSON", []string{"version", "-o", "json"}, func(t *testing.T, out string) {
			var got buildinfo.Info
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		}},
		{"kfed --version is one line", []string{"--version"}, func(t *testing.T, out string) {
			if w := "kfed " + want.String() + "\n"; out != w {
				t.Errorf("got %q, want %q", out, w)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newRootCommand()
			var stdout bytes.Buffer
			root.SetOut(&stdout)
			root.SetArgs(tt.args)
			if err := root.ExecuteContext(context.Background()); err != nil {
				t.Fatal(err)
			}
			tt.check(t, stdout.String())
		})
	}
}

func TestVersionRejectsAnUnknownOutput(t *testing.T) {
	root := newRootCommand()
	root.SetOut(&bytes.Buffer{})
	root.SetArgs([]string{"version", "-o", "toml"})
	if err := root.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "text, json, yaml") {
		t.Errorf("err = %v, want one naming text, json, yaml", err)
	}
}
