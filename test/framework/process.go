package framework

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BuildCommand builds the repository's ./cmd/NAME into a folder of the
// test's and returns the binary's path. Tests that run kfed's own binaries
// (the controller, the agent, CoreDNS with the plugin) use it, so that what
// they run is what users build.
func BuildCommand(t testing.TB, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	build := exec.Command("go", "build", "-o", bin, "./cmd/"+name)
	build.Dir = RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building ./cmd/%s: %v\n%s", name, err, out)
	}
	return bin
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreeAddr returns 127.0.0.1:PORT with a port from FreePort.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(FreePort(t))
}

// Output collects a process's output while the test reads it; it is safe
// for the process's writes and the test's reads at once.
type Output struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// StartProcess starts cmd for the rest of the test and returns its output,
// collected unless cmd.Stdout is already set. The process dies with the test
// binary (SIGKILL if it exits first); at cleanup it gets SIGTERM, and SIGKILL
// 5 s later, and its output goes to the test log if the test failed. A test
// may kill and wait for cmd itself before then.
func StartProcess(t testing.TB, cmd *exec.Cmd, name string) *Output {
	t.Helper()
	out := &Output{}
	if cmd.Stdout == nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s (pid %d):\n%s", name, cmd.Process.Pid, out.String())
		}
	})
	return out
}
