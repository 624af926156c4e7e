// Package check is what kfed check reads and judges: facts read from the
// control plane, the members and their CoreDNS servers (observe.go), each
// judged by a pure function (eval.go), so that the judgements are tested
// without a cluster. cmd/kfed keeps the flags and the printing.
package check

import (
	"fmt"
	"time"
)

// The outcomes of a check: only Fail makes kfed check exit non-zero.
const (
	Pass = "pass"
	Warn = "warn"
	Fail = "fail"
)

// credentialWarning is how long before a member's credentials expire that
// check warns.
const credentialWarning = 30 * 24 * time.Hour

// Result is one check's outcome, as kfed check -o json prints it.
type Result struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

func pass(name, format string, a ...any) Result {
	return Result{Name: name, Status: Pass, Message: fmt.Sprintf(format, a...)}
}

func warn(name, hint, format string, a ...any) Result {
	return Result{Name: name, Status: Warn, Message: fmt.Sprintf(format, a...), Hint: hint}
}

func fail(name, hint, format string, a ...any) Result {
	return Result{Name: name, Status: Fail, Message: fmt.Sprintf(format, a...), Hint: hint}
}

// Count is how many of results have status.
func Count(results []Result, status string) int {
	n := 0
	for _, r := range results {
		if r.Status == status {
			n++
		}
	}
	return n
}
