package memlimit

import (
	"strings"
	"testing"
)

func TestLimit(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		want   int64
		errHas string
	}{
		{name: "no container limit sets none"},
		{name: "a container limit of 512Mi gives 90% of it", env: map[string]string{EnvContainerLimit: "536870912"}, want: 483183820},
		{name: "spaces around the number are fine", env: map[string]string{EnvContainerLimit: " 1000 "}, want: 900},
		{name: "GOMEMLIMIT set by the operator wins", env: map[string]string{"GOMEMLIMIT": "100MiB", EnvContainerLimit: "536870912"}},
		{name: "a quantity with a unit is refused", env: map[string]string{EnvContainerLimit: "512Mi"}, errHas: `"512Mi"`},
		{name: "zero is refused", env: map[string]string{EnvContainerLimit: "0"}, errHas: EnvContainerLimit},
		{name: "a negative number is refused", env: map[string]string{EnvContainerLimit: "-1"}, errHas: "positive number of bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Limit(func(k string) string { return tt.env[k] })
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("error %v, want one containing %q", err, tt.errHas)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Limit = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}
