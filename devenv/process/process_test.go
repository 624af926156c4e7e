package process

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid names a process that has not exited (a zombie
// counts as exited).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	s := string(b)
	return !strings.HasPrefix(s[strings.LastIndexByte(s, ')')+2:], "Z")
}

// startShell starts a shell that starts a sleeping grandchild, prints its
// pid and waits, ignoring SIGTERM when ignoreTerm is set.
func startShell(t *testing.T, ignoreTerm bool) (*Process, *Output, int) {
	t.Helper()
	script := "sleep 60 & echo $!; wait"
	if ignoreTerm {
		script = "trap '' TERM; " + script
	}
	out := &Output{}
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdout, cmd.Stderr = out, out
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if pid, err := strconv.Atoi(strings.TrimSpace(out.String())); err == nil {
			return p, out, pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shell printed no pid: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStopEndsTheWholeGroup(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ignoreTerm bool
		stop       func(*Process)
		signal     syscall.Signal
	}{
		{"Stop: SIGTERM is enough", false, func(p *Process) { p.Stop(5 * time.Second) }, syscall.SIGTERM},
		{"Stop: SIGKILL after the grace period", true, func(p *Process) { p.Stop(100 * time.Millisecond) }, syscall.SIGKILL},
		{"Kill", false, (*Process).Kill, syscall.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _, grandchild := startShell(t, tc.ignoreTerm)
			if !p.Running() || p.State() != nil || p.Err() != nil {
				t.Fatalf("before the stop: Running %v, State %v, Err %v", p.Running(), p.State(), p.Err())
			}
			tc.stop(p)
			if p.Running() {
				t.Fatal("still running after the stop returned")
			}
			var exit *exec.ExitError
			if !errors.As(p.Err(), &exit) {
				t.Fatalf("Err = %v, want an exit error", p.Err())
			}
			if ws := exit.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != tc.signal {
				t.Errorf("the shell ended by %v, want %v", ws, tc.signal)
			}
			deadline := time.Now().Add(5 * time.Second)
			for alive(grandchild) {
				if time.Now().After(deadline) {
					t.Fatalf("the shell's child %d outlived the stop", grandchild)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func TestErrAndStateOfAnExit(t *testing.T) {
	p, err := Start(exec.Command("sh", "-c", "exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if got := p.State().ExitCode(); got != 3 {
		t.Errorf("exit code %d, want 3", got)
	}
	if p.Err() == nil {
		t.Error("Err is nil for exit status 3")
	}
	p.Stop(time.Second) // an ended process: returns at once
	p.Kill()
}

func TestStartReportsAMissingBinary(t *testing.T) {
	if _, err := Start(exec.Command("/nonexistent/kfed-test-binary")); err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
}

func TestOutputIsSafeToReadWhileWritten(t *testing.T) {
	var o Output
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprint(&o, "x")
				_ = o.String()
			}
		})
	}
	wg.Wait()
	if got := len(o.String()); got != 400 {
		t.Errorf("%d bytes written, want 400", got)
	}
}

func TestOutputTail(t *testing.T) {
	tests := []struct {
		written string
		n       int
		want    string
	}{
		{"", 3, ""},
		{"one\n", 3, "one"},
		{"one\ntwo\nthree\n", 2, "two\nthree"},
		{"one\ntwo\nthree", 2, "two\nthree"}, // a last line not yet ended
		{"one\ntwo\nthree\n", 3, "one\ntwo\nthree"},
		{"one\ntwo\nthree\n", 10, "one\ntwo\nthree"},
		{"\nafter a blank line\n", 1, "after a blank line"},
		{"one\ntwo\n", 0, ""},
	}
	for _, tt := range tests {
		var o Output
		fmt.Fprint(&o, tt.written)
		if got := o.Tail(tt.n); got != tt.want {
			t.Errorf("Tail(%d) of %q = %q, want %q", tt.n, tt.written, got, tt.want)
		}
	}
}
