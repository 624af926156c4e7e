package framework

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kfed-io/kfed/devenv/process"
)

// CmdsEnv names the folder into which hack/test.sh builds, once per run,
// every binary of kfed's that tests run; see Build.
const CmdsEnv = "KFED_TEST_CMDS"

// Build returns a folder holding the binaries of the repository's main
// packages pkgs ("./cmd/coredns", "./test/secretreader", ...), each named
// for its package's last element, so that what tests run is what users
// build. hack/test.sh builds them all for its run into $KFED_TEST_CMDS, which
// Build returns when it holds every one; otherwise (a package's tests run
// alone with go test) it builds them into a folder of the test's. A failed
// build is its error, not the test's end, so a goroutine may call it.
func Build(t testing.TB, pkgs ...string) (string, error) {
	if dir := os.Getenv(CmdsEnv); dir != "" && holds(dir, pkgs) {
		return dir, nil
	}
	dir := t.TempDir()
	build := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	build.Dir = RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %w\n%s", strings.Join(pkgs, " "), err, out)
	}
	return dir, nil
}

// holds says whether dir has the binary of every package in pkgs.
func holds(dir string, pkgs []string) bool {
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, path.Base(p))); err != nil {
			return false
		}
	}
	return true
}

// BuildCommand returns the binary of the repository's ./cmd/NAME (Build).
// Tests that run kfed's own binaries (the controller, the agent, CoreDNS
// with the plugin) use it.
func BuildCommand(t testing.TB, name string) string {
	t.Helper()
	dir, err := Build(t, "./cmd/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
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
