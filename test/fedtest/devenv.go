package fedtest

import (
	"os"
	"strings"
	"testing"
)

// ReadEnvFile reads a dev bed's DIR/env (NAME=value lines, the contract in
// docs/design.md) into a map.
func ReadEnvFile(t testing.TB, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			env[k] = v
		}
	}
	return env
}
