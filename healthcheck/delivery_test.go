package healthcheck

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// Events still queued when the deliverer is told to stop reach the
// callbacks before it returns, in the order they were queued, verdict
// flips and Degraded changes interleaved as they happened.
func TestDeliverDrainsInOrderOnStop(t *testing.T) {
	var got []string
	e, err := NewEngine(Options{
		OnChange:   func(key string, healthy bool) { got = append(got, fmt.Sprintf("%s %v", key, healthy)) },
		OnDegraded: func(d bool) { got = append(got, fmt.Sprintf("degraded %v", d)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Queued without a signal: only the stop makes the deliverer look.
	e.delivery.events = []event{{key: "a", up: false}, {up: true}, {key: "b", up: false}, {up: false}, {key: "a", up: true}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.delivery.deliver(ctx)
	want := []string{"a false", "degraded true", "b false", "degraded false", "a true"}
	if !slices.Equal(got, want) {
		t.Errorf("callbacks %q, want %q", got, want)
	}
}
