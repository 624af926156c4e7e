package services

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
	cs, c, svc := recordingEvents(t)

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

// TestShardsOfOneReconcileAreOneEvent: the shards one reconcile creates
// are told in one Event naming their clusters (a single one as before,
// related to its Cluster), within a note's 1,024 bytes; thirty Events a
// Service were most of the control plane's writes while a fleet's
// Services were created.
func TestShardsOfOneReconcileAreOneEvent(t *testing.T) {
	names := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("cluster-%d", i+1))
		}
		return out
	}
	for _, tc := range []struct {
		clusters    int
		reason      string
		note        string // prefix
		related     string
		noteEndsAnd bool
	}{
		{clusters: 1, reason: "ShardCreated", note: "created shard in cluster cluster-1", related: "Cluster/cluster-1"},
		{clusters: 3, reason: "ShardsCreated", note: "created shards in 3 clusters: cluster-1, cluster-2, cluster-3"},
		{clusters: 30, reason: "ShardsCreated", note: "created shards in 30 clusters: cluster-1, cluster-2, "},
		{clusters: 200, reason: "ShardsCreated", note: "created shards in 200 clusters: cluster-1, ", noteEndsAnd: true},
	} {
		t.Run(fmt.Sprint(tc.clusters), func(t *testing.T) {
			cs, c, svc := recordingEvents(t)

			c.shardsCreated(svc, names(tc.clusters))

			var got []*eventsv1.Event
			for deadline := time.Now().Add(10 * time.Second); len(got) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				for _, a := range cs.Actions() {
					if a, ok := a.(clienttesting.CreateAction); ok {
						if e, ok := a.GetObject().(*eventsv1.Event); ok {
							got = append(got, e)
						}
					}
				}
			}
			time.Sleep(100 * time.Millisecond) // any second Event
			if n := len(cs.Actions()); n != 1 || len(got) != 1 {
				t.Fatalf("%d Events, %d API calls; want one Event", len(got), n)
			}
			e := got[0]
			if e.Reason != tc.reason || !strings.HasPrefix(e.Note, tc.note) {
				t.Errorf("Event %s %q, want %s %q…", e.Reason, e.Note, tc.reason, tc.note)
			}
			if len(e.Note) > maxNote {
				t.Errorf("note of %d bytes, want at most %d", len(e.Note), maxNote)
			}
			if ends := strings.HasSuffix(e.Note, " more"); ends != tc.noteEndsAnd {
				t.Errorf("note %q: ends \"and N more\" = %v, want %v", e.Note, ends, tc.noteEndsAnd)
			}
			related := ""
			if e.Related != nil {
				related = e.Related.Kind + "/" + e.Related.Name
			}
			if related != tc.related {
				t.Errorf("related %q, want %q", related, tc.related)
			}
		})
	}
}

// recordingEvents is a Controller whose Events go through the real events
// library to a fake clientset, and a Service to record them about; the
// broadcaster stops when the test ends.
func recordingEvents(t *testing.T) (*fake.Clientset, *Controller, *corev1.Service) {
	t.Helper()
	cs := fake.NewClientset()
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	ctx, cancel := context.WithCancel(context.Background())
	b.StartRecordingToSink(ctx.Done())
	t.Cleanup(func() { cancel(); b.Shutdown() })
	c := &Controller{Recorder: b.NewRecorder(scheme.Scheme, "kfed")}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1"}}
	svc.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Service"))
	return cs, c, svc
}
