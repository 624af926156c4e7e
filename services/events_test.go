package services

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
)

// TestEachClusterGetsItsOwnEvent records, through the real events library,
// the Events a Service's three shards bring: each must be its own Event
// naming its cluster. Folded into one series, the notes of the second and
// third cluster were lost and the library patched every such series once
// more six minutes later: a write per Service while nothing changed (seen
// with 10,000 Services).
func TestEachClusterGetsItsOwnEvent(t *testing.T) {
	cs := fake.NewClientset()
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.StartRecordingToSink(ctx.Done())
	defer b.Shutdown()
	c := &Controller{Recorder: b.NewRecorder(scheme.Scheme, "kfed")}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1"}}
	svc.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Service"))

	clusters := []string{"cluster-1", "cluster-2", "cluster-3"}
	for _, cl := range clusters {
		c.clusterEvent(svc, cl, corev1.EventTypeNormal, "ShardCreated", "created shard in cluster %s", cl)
	}

	var (
		notes   []string
		related []string
		patches int
	)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		notes, related, patches = nil, nil, 0
		for _, a := range cs.Actions() {
			switch a := a.(type) {
			case clienttesting.CreateAction:
				if e, ok := a.GetObject().(*eventsv1.Event); ok {
					notes = append(notes, e.Note)
					if e.Related != nil {
						related = append(related, e.Related.Kind+"/"+e.Related.Name)
					}
				}
			case clienttesting.PatchAction:
				patches++
			}
		}
		if len(notes)+patches >= 3 {
			break
		}
	}
	if patches > 0 {
		t.Errorf("%d of the events were folded into a series (patched), keeping only the first note", patches)
	}
	slices.Sort(related)
	if want := []string{"Cluster/cluster-1", "Cluster/cluster-2", "Cluster/cluster-3"}; !slices.Equal(related, want) {
		t.Errorf("events relate to %q, want %q", related, want)
	}
	slices.Sort(notes)
	want := []string{"created shard in cluster cluster-1", "created shard in cluster cluster-2", "created shard in cluster cluster-3"}
	if !slices.Equal(notes, want) {
		t.Errorf("events created: %q, want %q", notes, want)
	}
}
