package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Eventually reports what the condition last said, and, when the last try
// only ran out of time, what it said before: a client's rate limiter
// refusing to wait past the deadline hid why a test failed.
func TestEventuallyReportsWhatTheConditionSaid(t *testing.T) {
	for _, tt := range []struct {
		name string
		last error
		want []string
	}{
		{"the last error", nil, []string{"not true after", "row not there yet"}},
		{"the error before a rate limiter's", errors.New("client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline"),
			[]string{"row not there yet", "the last try: client rate limiter"}},
		{"the error before a deadline", fmt.Errorf("reading: %w", context.DeadlineExceeded), []string{"row not there yet", "the last try: reading"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var tb recordingTB
			const timeout = 300 * time.Millisecond
			start := time.Now()
			Eventually(&tb, timeout, func(ctx context.Context) error {
				if tt.last != nil && time.Since(start) > timeout-150*time.Millisecond {
					return tt.last
				}
				return errors.New("row not there yet")
			})
			if len(tb.errs) != 1 {
				t.Fatalf("reported %q, want one failure", tb.errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(tb.errs[0], w) {
					t.Errorf("reported %q, want it to say %q", tb.errs[0], w)
				}
			}
		})
	}
}
