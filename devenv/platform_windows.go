package devenv

import (
	"errors"
	"syscall"
)

// errPlatform: kfed builds for Windows for its other commands; the local
// federation needs process groups and SIGSTOP, which Windows lacks.
var errPlatform = errors.New("a local federation (kfed dev up) needs Linux or macOS; on Windows, run it in WSL 2")

func platformSupported() error { return errPlatform }

func freezeSignal(bool) (syscall.Signal, error) { return 0, errPlatform }
