package reliability

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kfed-io/kfed/devenv/process"
)

// proc is a process the suite runs and supervises as Kubernetes would: it
// is restarted a moment after it ends, whether the suite killed it or it
// exited by itself, and each run logs to a file of its own.
type proc struct {
	name string
	path string
	args []string
	dir  string

	mu      sync.Mutex
	p       *process.Process // the current run
	run     int
	logs    []string // one per run
	killed  bool     // the current run was ended by the suite
	exits   int      // runs that ended by themselves
	kills   int      // runs the suite ended
	stopped bool
	started []time.Time
}

func newProc(t *testing.T, name, path string, args ...string) *proc {
	p := &proc{name: name, path: path, args: args, dir: filepath.Join(t.TempDir(), name)}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	go p.supervise()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s: %d runs, logs in %s; its last errors:\n%s", p.name, p.run, p.dir, strings.Join(p.lastErrors(10), "\n"))
		}
	})
	return p
}

func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.run++
	log := filepath.Join(p.dir, fmt.Sprintf("%s-%02d.log", p.name, p.run))
	f, err := os.Create(log)
	if err != nil {
		return err
	}
	// The child writes to its own copy of the file.
	defer f.Close()
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	run, err := process.Start(cmd)
	if err != nil {
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	p.p, p.killed = run, false
	p.logs = append(p.logs, log)
	p.started = append(p.started, time.Now())
	return nil
}

// supervise restarts the process 200 ms after each run ends, until stop.
func (p *proc) supervise() {
	for {
		p.mu.Lock()
		run := p.p
		p.mu.Unlock()
		<-run.Done()
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			return
		}
		if p.killed {
			p.kills++
		} else {
			p.exits++
		}
		p.mu.Unlock()
		time.Sleep(200 * time.Millisecond)
		if err := p.start(); err != nil {
			return
		}
	}
}

// kill ends the current run with SIGKILL and waits for it to end; the
// supervisor starts the next one.
func (p *proc) kill() {
	p.mu.Lock()
	run := p.p
	p.killed = true
	p.mu.Unlock()
	run.Kill()
}

// restartNow kills the current run and returns once the next one started.
func (p *proc) restartNow() {
	run := p.runs()
	p.kill()
	for p.runs() == run {
		time.Sleep(10 * time.Millisecond)
	}
}

// stop ends the process for good.
func (p *proc) stop() {
	p.mu.Lock()
	p.stopped = true
	run := p.p
	p.mu.Unlock()
	run.Kill()
}

func (p *proc) runs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.run
}

// counts returns how many runs the suite killed and how many exited by
// themselves.
func (p *proc) counts() (kills, exits int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kills, p.exits
}

// currentLog returns what the current run has logged.
func (p *proc) currentLog() string {
	p.mu.Lock()
	log := p.logs[len(p.logs)-1]
	p.mu.Unlock()
	b, _ := os.ReadFile(log)
	return string(b)
}

// logFiles returns the logs of every run.
func (p *proc) logFiles() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.logs...)
}

// lastErrors returns the last n error lines (klog's E prefix) of every
// run, each prefixed with its file's name: the temporary logs are gone
// once a failed test ends.
func (p *proc) lastErrors(n int) []string {
	var out []string
	for _, name := range p.logFiles() {
		b, _ := os.ReadFile(name)
		var errs []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "E") {
				errs = append(errs, filepath.Base(name)+": "+line)
			}
		}
		out = append(out, errs[max(0, len(errs)-n):]...)
	}
	return out
}

// crashes returns the lines of files that show a Go panic or a fatal
// runtime error, prefixed with the file's name.
func crashes(files []string) []string {
	var out []string
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") {
				out = append(out, filepath.Base(name)+": "+line)
			}
		}
		f.Close()
	}
	return out
}
