package process

import "syscall"

// parentDeathSignal has the kernel kill the child when its parent dies.
func parentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
