package devenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kfed-io/kfed/devenv/process"
)

// child is one child server, started again after a stop or a crash with
// the same command line and log. Each run is a process.Process: it dies
// with us.
type child struct {
	name string
	path string
	args []string
	env  []string // added to this process's environment
	log  string
	p    *process.Process // the current run; nil before the first
}

func newChild(name, path, logDir string, args ...string) *child {
	return &child{name: name, path: path, args: args, log: filepath.Join(logDir, name+".log")}
}

func (c *child) start() error {
	f, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening log of %s: %w", c.name, err)
	}
	// The child writes to its own copy of the file; ours is not needed
	// once it started.
	defer f.Close()
	cmd := exec.Command(c.path, c.args...)
	if c.env != nil {
		cmd.Env = append(os.Environ(), c.env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	p, err := process.Start(cmd)
	if err != nil {
		return fmt.Errorf("starting %s: %w", c.name, err)
	}
	c.p = p
	return nil
}

// running reports whether the child was started and has not exited.
func (c *child) running() bool { return c.p != nil && c.p.Running() }

// stop sends SIGTERM, waits up to grace, then kills the whole process group.
func (c *child) stop(grace time.Duration) {
	if c.p != nil {
		c.p.Stop(grace)
	}
}

// kill ends the whole process group at once, as a crash would.
func (c *child) kill() {
	if c.p != nil {
		c.p.Kill()
	}
}

// exitError says how a child that should be running ended, with its log's tail.
func (c *child) exitError() error {
	tail, _ := tailFile(c.log, 2048)
	var err error
	if c.p != nil {
		err = c.p.Err()
	}
	return fmt.Errorf("%s exited (%v); end of %s:\n%s", c.name, err, c.log, tail)
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
// child exits: then it returns the child's exit, or ctx's error with f's
// last.
func poll(ctx context.Context, interval time.Duration, c *child, f func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		if last = f(ctx); last == nil {
			return true, nil
		}
		if c != nil && !c.running() {
			return false, c.exitError()
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		return errors.Join(err, last)
	}
	return err
}
