//go:build unix && !linux

package process

import "syscall"

// parentDeathSignal does nothing: only Linux has a parent-death signal.
func parentDeathSignal(*syscall.SysProcAttr) {}
