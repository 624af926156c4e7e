package process

import (
	"os"
	"os/exec"
	"syscall"
)

// ownGroup does nothing on Windows, which has no process groups to signal.
func ownGroup(*exec.Cmd) {}

// signalGroup sends sig to p alone; Windows can only kill a process, so
// every signal ends it.
func signalGroup(p *os.Process, _ syscall.Signal) error {
	return p.Kill()
}
