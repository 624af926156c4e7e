package devenv

import (
	"errors"
	"syscall"
)

// freezeSignal fails: Windows has no signal that stops a process and lets
// it continue.
func freezeSignal(bool) (syscall.Signal, error) {
	return 0, errors.New("freezing an API server needs Linux or macOS (SIGSTOP)")
}
