//go:build unix

package devenv

import "syscall"

// platformSupported: the servers, process groups and signals devenv uses
// are Linux's and macOS's.
func platformSupported() error { return nil }

// freezeSignal is the signal that stops (freeze) or continues a process.
func freezeSignal(freeze bool) (syscall.Signal, error) {
	if freeze {
		return syscall.SIGSTOP, nil
	}
	return syscall.SIGCONT, nil
}
