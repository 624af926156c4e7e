//go:build unix

package devenv

import "syscall"

// freezeSignal is the signal that stops (freeze) or continues a process.
func freezeSignal(freeze bool) (syscall.Signal, error) {
	if freeze {
		return syscall.SIGSTOP, nil
	}
	return syscall.SIGCONT, nil
}
