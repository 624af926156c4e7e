package manager

import (
	"fmt"
	"reflect"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kfedv1alpha1 "github.com/kfed-io/kfed/api/v1alpha1"
)

// loggedRecorder records an Event and logs it. Each Event a controller
// records is a decision (a copy created, an endpoint voted out, a
// failover, input refused), so the log tells them in order, with the object
// and the member cluster as context, and is as quiet as the Events are
// while nothing changes.
type loggedRecorder struct {
	events.EventRecorder
	log logr.Logger
}

// recorder is mgr's Event recorder for the controller called name, logging
// each Event under that name.
func recorder(mgr ctrl.Manager, name string) events.EventRecorder {
	return loggedRecorder{EventRecorder: mgr.GetEventRecorder(name), log: mgr.GetLogger().WithName(name)}
}

func (r loggedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
	kv := []any{"reason", reason, "type", eventtype}
	if o, ok := regarding.(client.Object); ok {
		kv = append(kv, "kind", kindName(o), "object", klog.KObj(o))
	}
	switch o := related.(type) {
	case *kfedv1alpha1.Cluster:
		kv = append(kv, "cluster", o.Name)
	case client.Object:
		kv = append(kv, "related", klog.KObj(o))
	}
	r.log.Info(fmt.Sprintf(note, args...), kv...)
}

// kindName is o's kind: its type's name, as typed objects carry no TypeMeta.
func kindName(o client.Object) string {
	if k := o.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := reflect.TypeOf(o)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
