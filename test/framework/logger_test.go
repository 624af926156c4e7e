package framework

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// recordingTB is the testing.TB a Logger is given: it keeps what would be
// logged and reported, and runs the cleanups when asked.
type recordingTB struct {
	testing.TB
	logs, errs []string
	cleanups   []func()
}

func (r *recordingTB) Helper()                   {}
func (r *recordingTB) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Log(args ...any)           { r.logs = append(r.logs, fmt.Sprint(args...)) }
func (r *recordingTB) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }
func (r *recordingTB) Fatalf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }
func (r *recordingTB) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// reconcileThatPanics recovers and logs its panic as controller-runtime's
// workers do (utilruntime's panic handler).
func reconcileThatPanics(tb testing.TB) {
	defer func() { _ = recover() }() // HandleCrash panics again once it has logged
	defer utilruntime.HandleCrashWithLogger(Logger(tb).WithValues("controller", "cluster"))
	var m map[string]int
	m["cluster-1"]++
}

func TestLoggerFailsTheTestOnARecoveredPanic(t *testing.T) {
	for _, tt := range []struct {
		name    string
		run     func(testing.TB)
		wantErr []string // substrings of the one error reported; none when nil
	}{
		{
			name:    "a recovered panic fails the test with its value and kfed's frame",
			run:     reconcileThatPanics,
			wantErr: []string{"1 time(s)", "assignment to entry in nil map", "framework.reconcileThatPanics", "logger_test.go:"},
		},
		{
			name: "errors and lines of its own are only logged",
			run: func(tb testing.TB) {
				log := Logger(tb)
				log.Error(errors.New("connection refused"), "member cache stopped", "member", "cluster-1")
				log.Info("Observed a panic in reconciler: not one") // controller-runtime's line when it does not recover
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &recordingTB{}
			tt.run(r)
			r.end()
			if len(r.logs) == 0 {
				t.Error("nothing was logged through the test")
			}
			if tt.wantErr == nil {
				if len(r.errs) > 0 {
					t.Errorf("reported %q, want nothing", r.errs)
				}
				return
			}
			if len(r.errs) != 1 {
				t.Fatalf("reported %q, want one error", r.errs)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(r.errs[0], want) {
					t.Errorf("reported %q, want it to say %q", r.errs[0], want)
				}
			}
		})
	}
}
