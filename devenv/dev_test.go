package devenv

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// lostLease is a manager that stops on its own the first times it runs, as
// a controller-runtime manager does when it loses its leader lease, then
// runs until it is stopped.
type lostLease struct {
	runs  *atomic.Int32
	loses int32
}

func (m lostLease) Start(ctx context.Context) error {
	if m.runs.Add(1) <= m.loses {
		return errors.New("leader election lost")
	}
	<-ctx.Done()
	return nil
}

func TestDevControllerStandsByAgainAfterLosingItsLease(t *testing.T) {
	var runs, built atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runController(ctx, func() (starter, error) {
			built.Add(1)
			return lostLease{runs: &runs, loses: 2}, nil
		}, logr.Discard(), time.Millisecond)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for runs.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the environment's controller ended after a lost lease: %v", err)
	default:
	}
	if built.Load() != 3 {
		t.Errorf("%d managers built, want a new one after each lost lease (3)", built.Load())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("stopping: %v", err)
	}

	// A manager that cannot be built is an error at once.
	err := runController(context.Background(), func() (starter, error) { return nil, errors.New("no scheme") }, logr.Discard(), time.Millisecond)
	if err == nil {
		t.Error("a manager that cannot be built is not reported")
	}
}
