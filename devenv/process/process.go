// Package process runs the child processes of the dev environment and the
// test bed (API servers, etcd, BIND, CoreDNS, kfed's own binaries) so that
// they die with the process that started them, and collects their output
// where the caller reads it while they run.
package process

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a started child. It runs in its own process group, so that
// signals reach what it starts too, with SIGKILL as its parent-death signal
// on Linux, so that a parent killed outright (a test binary past `go test
// -timeout`) leaves nothing behind. Elsewhere (macOS, Windows: the CLI is
// built for them, the test bed runs on Linux) there is no parent-death
// signal, and on Windows no process group: signals reach the child alone.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// Start starts cmd and waits for it in the background. Fields of
// cmd.SysProcAttr other than Setpgid and Pdeathsig are kept. Nothing else
// may call cmd.Wait: Done and Err say how it ended.
func Start(cmd *exec.Cmd) (*Process, error) {
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's id, and its process group's.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and its output is copied.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process ended, as exec.Cmd.Wait reports it; nil until Done
// is closed, and for an exit status of 0.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// State is the ended process's state (exit status, resource usage); nil
// until Done is closed.
func (p *Process) State() *os.ProcessState {
	select {
	case <-p.done:
		return p.cmd.ProcessState
	default:
		return nil
	}
}

// Running reports whether the process has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Signal sends sig to the process's group, unless the process has exited.
func (p *Process) Signal(sig syscall.Signal) error {
	if !p.Running() {
		return nil
	}
	return signalGroup(p.cmd.Process, sig)
}

// Stop sends SIGTERM to the process group, waits up to grace for the
// process to exit, then kills the group, and returns once it has exited.
func (p *Process) Stop(grace time.Duration) {
	_ = p.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.Kill()
	}
}

// Kill ends the process group at once, as a crash would, and returns once
// the process has exited.
func (p *Process) Kill() {
	_ = p.Signal(syscall.SIGKILL)
	<-p.done
}

// Output collects a process's output while others read it: writes and reads
// may happen at once. The zero value is empty and ready to use.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String returns everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// Tail returns the last n lines written so far: what a failed test shows
// of a process that logs a line per request, where all of it would push
// the test's own error out of sight.
func (o *Output) Tail(n int) string {
	s := strings.TrimSuffix(o.String(), "\n")
	if n <= 0 {
		return ""
	}
	start := len(s)
	for ; n > 0; n-- {
		start = strings.LastIndexByte(s[:start], '\n')
		if start < 0 {
			return s
		}
	}
	return s[start+1:]
}
