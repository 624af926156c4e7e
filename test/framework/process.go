package framework

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kfed-io/kfed/devenv/process"
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

// StartProcess starts cmd for the rest of the test (process.Start: it dies
// with the test binary) and returns it with its output, collected unless
// cmd.Stdout is already set. At cleanup it gets SIGTERM, and SIGKILL 5 s
// later, and its output goes to the test log if the test failed. A test may
// stop or kill it itself before then.
func StartProcess(t testing.TB, cmd *exec.Cmd, name string) (*process.Process, *process.Output) {
	t.Helper()
	out := &process.Output{}
	if cmd.Stdout == nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	p, err := process.Start(cmd)
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		p.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("%s (pid %d):\n%s", name, p.Pid(), out.String())
		}
	})
	return p, out
}
