package registry

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// channelSize bounds the events waiting for a controller: a member's
// informer blocks past it until the controller catches up.
const channelSize = 1024

// Channel carries events to a controller from outside its own watches — the
// informers of member caches, a health watch — as a controller-runtime
// source. A sender stops waiting once the manager stops: nobody drains the
// channel then, and a member informer blocked on it would keep its cache
// from stopping.
type Channel[T any] struct {
	ch      chan event.TypedGenericEvent[T]
	stopped chan struct{}
}

// NewChannel makes a channel whose senders stop waiting when mgr stops.
func NewChannel[T any](mgr manager.Manager) (*Channel[T], error) {
	c := &Channel[T]{ch: make(chan event.TypedGenericEvent[T], channelSize), stopped: make(chan struct{})}
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		close(c.stopped)
		return nil
	}))
	return c, err
}

// Send hands obj to the controller, or drops it once the manager stops.
func (c *Channel[T]) Send(obj T) {
	select {
	case c.ch <- event.TypedGenericEvent[T]{Object: obj}:
	case <-c.stopped:
	}
}

// ChannelSource is c as a source of the controller's watches, h mapping
// each event to requests.
func ChannelSource[T any, R comparable](c *Channel[T], h handler.TypedEventHandler[T, R]) source.TypedSource[R] {
	return source.TypedChannel(c.ch, h)
}

// Stub is an empty object from newObj named key.
func Stub(newObj func() client.Object, key types.NamespacedName) client.Object {
	o := newObj()
	o.SetNamespace(key.Namespace)
	o.SetName(key.Name)
	return o
}
