package devenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is one child server. Children die with us: each runs in its own
// process group with SIGKILL as its parent-death signal, so a test binary
// killed by `go test -timeout` leaves nothing behind either.
type process struct {
	name string
	path string
	args []string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

func newProcess(name, path, logDir string, args ...string) *process {
	return &process{name: name, path: path, args: args, log: filepath.Join(logDir, name+".log")}
}

func (p *process) start() error {
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening log of %s: %w", p.name, err)
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return nil
}

// running reports whether the process was started and has not exited.
func (p *process) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM, waits up to grace, then kills the whole process group.
func (p *process) stop(grace time.Duration) {
	if !p.running() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// kill ends the whole process group at once, as a crash would.
func (p *process) kill() {
	if !p.running() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// exitError says how a process that should be running ended, with its log's tail.
func (p *process) exitError() error {
	tail, _ := tailFile(p.log, 2048)
	return fmt.Errorf("%s exited (%v); end of %s:\n%s", p.name, p.err, p.log, tail)
}

func tailFile(path string, n int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := max(st.Size()-n, 0)
	buf := make([]byte, st.Size()-off)
	_, err = f.ReadAt(buf, off)
	return string(buf), err
}

// freePort asks the kernel for a free loopback TCP port. Another process may
// take it before we bind it; callers start servers soon after and retry the
// whole start on a bind error.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// poll calls f every interval until it returns nil, ctx ends, or a watched
// process exits.
func poll(ctx context.Context, interval time.Duration, p *process, f func(context.Context) error) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if p != nil && !p.running() {
			return p.exitError()
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-t.C:
		}
	}
}
