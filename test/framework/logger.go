package framework

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2/textlogger"
)

// Logger is the logger for a component a test runs in-process (kfed's
// controller manager, a member's load balancer): it logs through t.Log, and
// a panic the component recovered from (controller-runtime and client-go
// log "Observed a panic" and go on) fails t when it ends, with the panic's
// value and its first frame in kfed. Recovered, such a panic is only a
// retried reconcile in a log of thousands of lines.
func Logger(t testing.TB) logr.Logger {
	t.Helper()
	p := &panics{}
	t.Cleanup(func() {
		if s := p.summary(); s != "" {
			t.Errorf("a component run in-process panicked: %s", s)
		}
	})
	sink := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(LogWriter(t)))).GetSink()
	return logr.New(panicSink{LogSink: sink, seen: p})
}

// panics are the recovered panics a component logged.
type panics struct {
	mu    sync.Mutex
	count int
	first string
}

func (p *panics) add(keysAndValues []any) {
	var value, where string
	for i := 0; i+1 < len(keysAndValues); i += 2 {
		switch keysAndValues[i] {
		case "panic":
			value = fmt.Sprint(keysAndValues[i+1])
		case "stacktrace":
			where = firstKfedFrame(fmt.Sprint(keysAndValues[i+1]))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count++
	if p.first == "" {
		p.first = fmt.Sprintf("%q at %s", value, where)
	}
}

func (p *panics) summary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.count == 0 {
		return ""
	}
	return fmt.Sprintf("%d time(s), the first %s (its stack is in the log: \"Observed a panic\")", p.count, p.first)
}

// firstKfedFrame is the first function of kfed's and its file:line in a
// goroutine's stack, below the panic machinery.
func firstKfedFrame(stack string) string {
	lines := strings.Split(stack, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "github.com/kfed-io/kfed/") && i+1 < len(lines) {
			return strings.TrimSpace(l) + " " + strings.TrimSpace(lines[i+1])
		}
	}
	return "(no frame of kfed's)"
}

// panicSink notes every "Observed a panic" error it logs.
type panicSink struct {
	logr.LogSink
	seen *panics
}

func (s panicSink) Error(err error, msg string, keysAndValues ...any) {
	if msg == "Observed a panic" {
		s.seen.add(keysAndValues)
	}
	s.LogSink.Error(err, msg, keysAndValues...)
}

// Init counts panicSink's own frame, so that lines name their callers.
func (s panicSink) Init(info logr.RuntimeInfo) {
	info.CallDepth++
	s.LogSink.Init(info)
}

func (s panicSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return panicSink{LogSink: cd.WithCallDepth(depth), seen: s.seen}
	}
	return s
}

func (s panicSink) WithValues(keysAndValues ...any) logr.LogSink {
	return panicSink{LogSink: s.LogSink.WithValues(keysAndValues...), seen: s.seen}
}

func (s panicSink) WithName(name string) logr.LogSink {
	return panicSink{LogSink: s.LogSink.WithName(name), seen: s.seen}
}
