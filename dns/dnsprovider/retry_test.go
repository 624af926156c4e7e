package dnsprovider

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRetry(t *testing.T) {
	slow, broken, bad := errors.New("slow down"), errors.New("server error"), errors.New("invalid")
	classify := func(err error) (bool, bool) { return err == slow || err == broken, err == slow }
	tests := []struct {
		name                string
		answers             []error // one per attempt; the last repeats
		wantErr             error
		requests, throttled int64
	}{
		{"success is one request", []error{nil}, nil, 1, 0},
		{"throttled twice then success: three requests, two throttles", []error{slow, slow, nil}, nil, 3, 2},
		{"a server error is retried but not counted as throttling", []error{broken, nil}, nil, 2, 0},
		{"an error not worth retrying is returned at once", []error{bad}, bad, 1, 0},
		{"it gives up after MaxRetries", []error{slow}, slow, 4, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Retry{MaxRetries: 3, BaseBackoff: time.Microsecond, MaxBackoff: time.Millisecond}.WithDefaults()
			var c Counters
			n := 0
			err := r.Do(context.Background(), &c, classify, func(context.Context) error {
				a := tt.answers[min(n, len(tt.answers)-1)]
				n++
				return a
			})
			if err != tt.wantErr {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if s := c.Stats(); s.Requests != tt.requests || s.ThrottledRetries != tt.throttled {
				t.Errorf("%d requests, %d throttled; want %d, %d", s.Requests, s.ThrottledRetries, tt.requests, tt.throttled)
			}
		})
	}
}
