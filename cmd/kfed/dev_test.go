package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDevUpRefusesAMemberCountItCannotStart(t *testing.T) {
	tests := []struct {
		name    string
		members int
		lbBase  int
		want    string // in the error; "" for none
	}{
		{"one member", 1, 100, ""},
		{"the default three", 3, 100, ""},
		{"thirty, the most this machine starts", 30, 100, ""},
		{"no member", 0, 100, "want 1 to 30"},
		{"a negative count", -2, 100, "want 1 to 30"},
		{"thirty-one", 31, 100, "want 1 to 30"},
		{"load balancer blocks past 127.255", 30, 230, "127.255"},
		{"the last block at 127.255", 30, 226, ""},
		{"a block in 127.0, the servers' own", 3, 0, "127.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := devOptions{members: tt.members, lbBase: tt.lbBase}
			err := o.validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

func TestDevUpChecksMembersBeforeStartingAnything(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	cmd := newDevCommand()
	cmd.SetArgs([]string{"up", "--members", "31", "--dir", dir, "--bin-dir", t.TempDir()})
	cmd.SetOut(new(strings.Builder))
	cmd.SetErr(new(strings.Builder))
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--members 31") {
		t.Fatalf("kfed dev up --members 31: %v, want it refused", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("kfed dev up --members 31 made its folder (%v)", err)
	}
}
