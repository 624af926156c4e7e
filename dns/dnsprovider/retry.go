package dnsprovider

import (
	"context"
	"math/rand/v2"
	"time"

	"golang.org/x/time/rate"
)

// Retry paces a provider's requests and retries the answers that ask the
// caller to wait: one limiter shared by all of a provider's zones (an
// account-wide API limit is shared too), exponential backoff with full
// jitter, and every request and throttled retry counted.
type Retry struct {
	// Limiter paces every request; nil does not pace.
	Limiter *rate.Limiter
	// MaxRetries is how often one request is retried; default 8.
	MaxRetries int
	// BaseBackoff and MaxBackoff bound the wait before a retry: a random
	// duration up to BaseBackoff·2^attempt, at most MaxBackoff. Defaults
	// 200 ms and 20 s.
	BaseBackoff, MaxBackoff time.Duration
}

// WithDefaults fills the fields left zero.
func (r Retry) WithDefaults() Retry {
	if r.MaxRetries == 0 {
		r.MaxRetries = 8
	}
	if r.BaseBackoff == 0 {
		r.BaseBackoff = 200 * time.Millisecond
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = 20 * time.Second
	}
	return r
}

// Do sends fn, counting it in c, and retries it while classify says the
// error is worth retrying (throttled: the provider asked to slow down, as
// opposed to a passing server error).
func (r Retry) Do(ctx context.Context, c *Counters, classify func(error) (retry, throttled bool), fn func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		if r.Limiter != nil {
			if err := r.Limiter.Wait(ctx); err != nil {
				return err
			}
		}
		c.Request()
		err := fn(ctx)
		if err == nil {
			return nil
		}
		retry, throttled := classify(err)
		if !retry || attempt >= r.MaxRetries {
			return err
		}
		if throttled {
			c.Throttled()
		}
		ceiling := min(r.MaxBackoff, r.BaseBackoff<<min(attempt, 30))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(rand.Int64N(int64(ceiling) + 1))):
		}
	}
}
