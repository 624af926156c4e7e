// Command pause is the sandbox ("pause") container of the dev bed's real
// nodes: it holds a pod's namespaces, reaps the orphans a pod's containers
// leave (it is their PID 1), and exits on SIGTERM or SIGINT, as
// registry.k8s.io/pause does. That image cannot be pulled here, so
// hack/nodeimages builds this one under its name.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
