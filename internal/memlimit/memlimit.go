// Package memlimit gives the Go runtime a soft memory limit below the
// container's memory limit. Without one the collector lets the heap grow to
// twice the live data before it runs, so a kfed process whose live data is
// half its limit gets OOM-killed at its next burst of garbage; with one, the
// collector works harder as the heap nears the limit instead.
package memlimit

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
)

// EnvContainerLimit names the variable the Helm chart fills, through the
// downward API, with the container's memory limit in bytes.
const EnvContainerLimit = "KFED_CONTAINER_MEMORY_LIMIT"

// Share is the part of the container limit given to the Go runtime: the
// rest is for what the runtime's limit does not count (the binary's text
// and data, the kernel's page cache charged to the cgroup). kfed's images
// are built without cgo, so no C allocations need room besides.
const Share = 0.9

// Limit is the soft memory limit to set, read with getenv: Share of the
// container limit in EnvContainerLimit, or 0 (set none) when that is unset
// or when GOMEMLIMIT is set, which the runtime has already applied and an
// operator's choice wins. A limit that is not a positive number of bytes is
// an error.
func Limit(getenv func(string) string) (int64, error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	v := strings.TrimSpace(getenv(EnvContainerLimit))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want the container's memory limit, a positive number of bytes", EnvContainerLimit, v)
	}
	return int64(float64(n) * Share), nil
}

// Set applies Limit to the runtime and returns the limit set, 0 when none.
func Set(getenv func(string) string) (int64, error) {
	n, err := Limit(getenv)
	if err != nil || n == 0 {
		return 0, err
	}
	debug.SetMemoryLimit(n)
	return n, nil
}
