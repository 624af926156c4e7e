package dnsprovider

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrRejected is wrapped by a provider's error when it refused a request for
// what the request asks (bad input: a name, value or policy it does not
// accept), as opposed to an outage (throttling, 5xx, timeouts, credentials,
// the network) or a failed precondition (ErrPrecondition). Sent again
// unchanged, the same request is refused again; the other groups of a
// change set are not to blame for it.
var ErrRejected = errors.New("the provider refused the record set")

// Refusal is one group of changes (the changes to one name) that a provider
// refused for bad input.
type Refusal struct {
	// Group is the name the changes belong to.
	Group string
	// Changes are the changes refused, as added to the change set.
	Changes []Change
	// Err is the provider's answer; it wraps ErrRejected.
	Err error
}

// RefusedError is what Changeset.Apply returns when it applied every group
// of changes but those it lists, which the provider refused for bad input.
type RefusedError struct {
	Refusals []Refusal
}

func (e *RefusedError) Error() string {
	msgs := make([]string, len(e.Refusals))
	for i, r := range e.Refusals {
		msgs[i] = r.Err.Error()
	}
	return fmt.Sprintf("%d of the changes' names refused: %s", len(e.Refusals), strings.Join(msgs, "; "))
}

// Unwrap makes a RefusedError match ErrRejected.
func (e *RefusedError) Unwrap() error { return ErrRejected }

// Refused returns the RefusedError of err, or nil when err is nil or any
// other error (an outage, a failed precondition), which stops the change set.
func Refused(err error) *RefusedError {
	var re *RefusedError
	if errors.As(err, &re) {
		return re
	}
	return nil
}

// SendIsolating sends batch (each item the whole of one group of changes)
// with send, which applies what it is given in one request. When the
// provider refuses it for bad input (an error wrapping ErrRejected) and it
// holds several groups, each half is sent again, and so on, so that every
// group the provider takes is applied and each one it refuses is found
// alone: one bad group among n costs about 2·log2(n) requests more, and
// none is sent twice once accepted. The refused groups are returned; any
// other error stops it at once and is returned with them.
func SendIsolating[G any](ctx context.Context, batch []G, send func(context.Context, []G) error, group func(G) (string, []Change)) ([]Refusal, error) {
	err := send(ctx, batch)
	if err == nil || !errors.Is(err, ErrRejected) {
		return nil, err
	}
	if len(batch) == 1 {
		name, changes := group(batch[0])
		return []Refusal{{Group: name, Changes: changes, Err: err}}, nil
	}
	mid := len(batch) / 2
	refused, err := SendIsolating(ctx, batch[:mid], send, group)
	if err != nil {
		return refused, err
	}
	more, err := SendIsolating(ctx, batch[mid:], send, group)
	return append(refused, more...), err
}
