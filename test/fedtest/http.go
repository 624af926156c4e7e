package fedtest

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
)

// Get GETs url and returns the body of its 200 response.
func Get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	body, err := OKBody(http.DefaultClient, req)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	return body, nil
}

// GetOK GETs url and wants a 200 response.
func GetOK(ctx context.Context, url string) error {
	_, err := Get(ctx, url)
	return err
}

// CountingTransport counts the requests kfed's controllers send in N.
type CountingTransport struct {
	Next http.RoundTripper
	N    *atomic.Int64
}

// RoundTrip counts r and sends it on.
func (c CountingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.N.Add(1)
	return c.Next.RoundTrip(r)
}
